"""The party's news checked slot by slot, through the API: for each telling of it (a turn whose `telling`
trace is the party's item), whether who hosts it, what, when and where arrived in the listener's memory of
that line; and whether an interview answer names the host and the time.

The checks are the slot extractor's (backend/intention: `slots.carries` for what/when/where, normalised so
"7pm" is "19時"; `who.host` for the host, so "Mia told me: 'Ben is throwing a party'" names Ben), never bare
keywords: a memory that says "a party" with the wrong time does not count as the time arriving.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from backend.intention import slots as news_slots
from backend.intention import telling, who
from backend.intention.appointment import Place

#: The job that stores each line in its listeners' memories (conversation/aftermath.py `observe`).
OBSERVE_JOB = "conversation.observe"
#: The slots a telling is checked for, in print order.
SLOTS = ("who", "what", "when", "where")


@dataclass(frozen=True)
class PartyNews:
    """The party as facts: its slots (read from the whisper), its telling key, the host and the world's
    places and people (what the checks read names against)."""

    slots: news_slots.Slots
    key: str
    host: str
    places: list[Place]
    people: dict[str, str]


def news_of(
    text: str, host: str, *, written_day: int, agents: list[dict[str, Any]], pois: list[dict[str, Any]]
) -> PartyNews:
    """The party whispered to `host` on `written_day` as facts.

    Raises:
        ValueError: the whisper holds no event the slot extractor reads (a town's party must).
    """
    places = [Place(p["id"], p["name"]) for p in pois]
    people = {a["id"]: a.get("name") or a["id"] for a in agents}
    language = next((a.get("language") or "ja" for a in agents if a["id"] == host), "ja")
    found = news_slots.extract(
        text, language=language, today=written_day, places=places, people=people, now=6.0
    )
    if found is None:
        raise ValueError(f"the party's whisper holds no event with a time or place: {text!r}")
    key = telling.item_key(host, text, places, written_day=written_day)
    return PartyNews(found, key, host, places, people)


def arrived(text: str, news: PartyNews, *, day: int, hour: float) -> dict[str, bool]:
    """Which of who/what/when/where `text` (said or remembered on `day` at `hour`) carries: `who` when it
    names the party's host as the host (a quote's speaker counts: "Mia told me: ...")."""
    said = news_slots.carries(text, news.slots, language="", places=news.places, today=day, now=hour)
    out = {"who": who.host(text, news.people) == news.host}
    out.update({slot: slot in said for slot in news_slots.CHECKED if slot in news.slots.present()})
    return out


def wrong_host(text: str, news: PartyNews) -> bool:
    """Whether `text` names someone else as the party's host."""
    named = who.host(text, news.people)
    return named is not None and named != news.host


def _memories(client: Any, agent_id: str) -> list[dict[str, Any]]:
    """All of the agent's memories (paged)."""
    out: list[dict[str, Any]] = []
    while True:
        page = client._send(
            "GET", f"/v1/agents/{agent_id}/memories", params={"limit": 500, "offset": len(out)}
        )
        out.extend(page["memories"])
        if not page["memories"] or len(out) >= page["total"]:
            return out


def _memory_of(memories: list[dict[str, Any]], session_id: str, line: str, teller: str) -> str | None:
    """The listener's memory of hearing `line` in that conversation ("Mia told me: ...", "美咲が「…」と言った":
    it starts with the teller's name, not "I told"), or None (not stored, or not yet)."""
    for memory in memories:
        content = str(memory["content"])
        if memory.get("session_id") == session_id and content.startswith(teller) and line[:200] in content:
            return content
    return None


def wait_for_memories(client: Any, limit_s: float, poll_s: float = 0.5) -> bool:
    """Wait, up to `limit_s`, until no `conversation.observe` job is pending or running (every line is in its
    listeners' memories: on a slow model they lag behind the turns). Returns whether none is left."""
    deadline = time.monotonic() + limit_s
    while True:
        left = sum(
            len(
                client._send("GET", "/v1/jobs", params={"kind": OBSERVE_JOB, "status": status, "limit": 1})[
                    "jobs"
                ]
            )
            for status in ("pending", "running")
        )
        if not left or time.monotonic() > deadline:
            return not left
        time.sleep(poll_s)


def tellings(client: Any, news: PartyNews, limit: int = 500) -> list[dict[str, Any]]:
    """Every turn that was to tell the party, in game-time order: teller, listener, whether it counted as
    told (the turn's trace) and what it left out, and what arrived in the listener's memory."""
    memories: dict[str, list[dict[str, Any]]] = {}
    rows = []
    listing = client._send("GET", "/v1/conversations", params={"limit": limit})["conversations"]
    for summary in listing:
        for turn in client.conversation(summary["session_id"]).get("turns", []):
            trace = turn.get("telling")
            if not trace or trace.get("key") != news.key:
                continue
            listener = turn["target_id"]
            if listener not in memories:
                memories[listener] = _memories(client, listener)
            teller = news.people.get(turn["speaker_id"], turn["speaker_id"])
            memory = _memory_of(memories[listener], summary["session_id"], turn["dialogue"], teller)
            day, hour = int(turn["day"]), float(turn["time_of_day"])
            rows.append({
                "day": day, "time": hour, "teller": turn["speaker_id"], "listener": listener,
                "passed_on": turn["speaker_id"] != news.host, "told": bool(trace.get("told")),
                "missing": list(trace.get("missing") or []), "line": turn["dialogue"], "memory": memory,
                "arrived": arrived(memory, news, day=day, hour=hour) if memory else None,
                "wrong_host": wrong_host(memory, news) if memory else False,
            })  # fmt: skip
    return sorted(rows, key=lambda r: (r["day"], r["time"]))


def interview_check(answer: str, news: PartyNews, *, day: int, hour: float) -> dict[str, bool]:
    """Whether an answer given on `day` at `hour` names the host (as the host) and the party's time. On the
    party's day an hour with no day word is that day's (after the party, "the party at 7pm" is today's)."""
    now = min(hour, news.slots.hour or 0.0) if day == news.slots.day else hour
    got = arrived(answer, news, day=day, hour=now)
    return {"host": got["who"], "time": got.get("when", False)}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts over the tellings: told by the trace, each slot arrived in memory, wrong host, passed on."""
    remembered = [r for r in rows if r["arrived"] is not None]
    return {
        "tellings": len(rows),
        "told": sum(r["told"] for r in rows),
        "partial": sum(not r["told"] for r in rows),
        "remembered": len(remembered),
        "arrived": {s: sum(bool(r["arrived"].get(s)) for r in remembered) for s in SLOTS},
        "all_arrived": sum(all(r["arrived"].values()) for r in remembered),
        "wrong_host": sum(r["wrong_host"] for r in rows),
        "passed_on": sum(r["passed_on"] and r["told"] for r in rows),
    }


def _clock(hour: float) -> str:
    minutes = round(hour * 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def render_tellings(rows: list[dict[str, Any]], *, most: int = 40) -> list[str]:
    """One line per telling (at most `most`; the rest counted), then the counts."""
    out = []
    for row in rows[:most]:
        kind = "passed on" if row["passed_on"] else "own"
        told = "told" if row["told"] else f"partial (missing {', '.join(row['missing']) or '?'})"
        if row["arrived"] is None:
            memory = "no memory of it stored"
        else:
            memory = " ".join(f"{s} {'ok' if row['arrived'].get(s) else 'MISSING'}" for s in SLOTS
                              if s in row["arrived"])  # fmt: skip
            memory += "; WRONG HOST" if row["wrong_host"] else ""
        out.append(f"  day {row['day']} {_clock(row['time'])} {row['teller']} -> {row['listener']} ({kind}): "
                   f"{told}; in memory: {memory}")  # fmt: skip
    if len(rows) > most:
        out.append(f"  ... and {len(rows) - most} more tellings")
    return out
