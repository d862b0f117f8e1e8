"""How varied and honest a town's lines are (issue 34's scripted-town targets), measured through the API.

- Lines: a line said twice in one conversation, and per game day the share of lines said word for word
  elsewhere that day (whole lines: a long line is rarely repeated whole, so these flatter).
- Sentences: a sentence said more than twice in one conversation (target 0), and per game day the share of
  that day's sentences that repeat one already said that day (target under 20%). Lines are split into
  sentences after 。！？!? in Japanese (no spaces) and after . ! ? followed by a space or the end in English.
- Third-person self-reference: a line whose speaker names itself (Japanese: its name followed by は or が,
  "蓮は蓮の家に着いたって"; English: its name as a word, not a possessive "Mia's" nor "I'm Mia"). Target 0.
- Small talk passed on: a telling (the `told` rows) by someone other than the news's origin whose text holds
  no news (slots.extract finds no event or appointment: "Good morning, Oliver."). Target 0.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from backend.intention.appointment import Place
from backend.intention.slots import extract
from backend.text import is_japanese

__all__ = [
    "TARGETS",
    "line_figures",
    "measure",
    "names_itself",
    "self_references",
    "sentence_figures",
    "sentences",
    "small_talk_passed_on",
]

#: The targets in words, printed beside the figures.
TARGETS = {
    "sentences": "target: no sentence more than twice in a conversation",
    "day_share": "target: under 20%",
    "self_reference": "target: 0",
    "small_talk": "target: 0",
}
_JA_END = re.compile(r"(?<=[。！？!?])(?![。！？!?」』）)])\s*")
_EN_END = re.compile(r"(?<=[.!?])(?![.!?])[\"')\]]*\s+")
_FIRST_PERSON = re.compile(r"\b(?:i'm|i’m|i am|my name is|call me|this is|it's|it’s)\s*$", re.IGNORECASE)
_JA_SUBJECT = "(?:は|が)"


def sentences(line: str) -> list[str]:
    """The sentences of a line: after 。！？!? in Japanese, after . ! ? and a space (or the end) in English."""
    splitter = _JA_END if is_japanese(line) else _EN_END
    parts = (part.strip() for part in splitter.split(line))
    return [part for part in parts if re.search(r"\w", part)]


def names_itself(line: str, name: str) -> bool:
    """Whether a line said by `name` names its speaker in the third person: the name followed by は or が,
    or (a Latin name) the name as a word that is neither a possessive ("Mia's") nor "I'm Mia"."""
    if not name:
        return False
    if re.search(re.escape(name) + _JA_SUBJECT, line):
        return True
    if not name.isascii():
        return False
    for found in re.finditer(rf"(?<![A-Za-z]){re.escape(name)}(?![A-Za-z])", line):
        if line[found.end() : found.end() + 2] in ("'s", "’s"):
            continue
        if _FIRST_PERSON.search(line[: found.start()]):
            continue
        return True
    return False


def line_figures(conversations: Sequence[tuple[int, list[str]]]) -> dict[str, Any]:
    """Whole lines: said twice in one conversation, and per day the share said word for word elsewhere."""
    by_day: dict[int, list[str]] = {}
    again = 0
    for day, lines in conversations:
        again += len(lines) - len(set(lines))
        by_day.setdefault(day, []).extend(lines)
    days = {}
    for day, lines in sorted(by_day.items()):
        repeated = sum(n for n in Counter(lines).values() if n > 1)
        days[day] = {"lines": len(lines), "repeated_share": repeated / len(lines) if lines else 0.0}
    return {"repeated_in_a_conversation": again, "days": days}


def sentence_figures(conversations: Sequence[tuple[int, list[str]]]) -> dict[str, Any]:
    """Sentences: those said more than twice in one conversation (counted once each, with the worst few),
    and per day the share of that day's sentences that repeat one already said that day."""
    over: Counter[str] = Counter()
    by_day: dict[int, Counter[str]] = {}
    for day, lines in conversations:
        said = Counter(sentence for line in lines for sentence in sentences(line))
        over.update({sentence: 1 for sentence, n in said.items() if n > 2})
        by_day.setdefault(day, Counter()).update(said)
    days = {}
    for day, said in sorted(by_day.items()):
        total = sum(said.values())
        days[day] = {
            "sentences": total,
            "distinct": len(said),
            "repeated_share": (total - len(said)) / total if total else 0.0,
            "most_said": [[sentence, n] for sentence, n in said.most_common(3)],
        }
    return {
        "over_twice_in_a_conversation": sum(over.values()),
        "over_twice_examples": [sentence for sentence, _ in over.most_common(3)],
        "days": days,
    }


def self_references(turns: Iterable[Mapping[str, Any]], names: Mapping[str, str]) -> list[dict[str, Any]]:
    """The turns (speaker_id, dialogue) whose speaker names itself in the third person."""
    return [
        {"speaker": turn["speaker_id"], "line": turn["dialogue"]}
        for turn in turns
        if names_itself(str(turn.get("dialogue") or ""), names.get(str(turn.get("speaker_id")), ""))
    ]


def small_talk_passed_on(
    rows: Iterable[Mapping[str, Any]], places: Sequence[Place], people: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The tellings passed on (teller not the origin) whose text holds no news slots (small talk)."""
    out = []
    for row in rows:
        if row["teller_id"] == row["origin_id"]:
            continue
        text = str(row["text"])
        language = "ja" if is_japanese(text) else "en"
        today = int(row.get("written_day") or row.get("day") or 1)
        if extract(text, language=language, today=today, places=places, people=people) is None:
            out.append({"teller": row["teller_id"], "origin": row["origin_id"], "text": text})
    return out


def read_talks(client: Any, limit: int = 500) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The server's conversations, each (its summary, its turns): read once for every measure of a report."""
    listing = client._send("GET", "/v1/conversations", params={"limit": limit})["conversations"]
    return [(summary, client.conversation(summary["session_id"]).get("turns") or []) for summary in listing]


def measure(
    client: Any,
    agents: list[dict[str, Any]],
    places: Sequence[Place],
    talks: list[tuple[dict[str, Any], list[dict[str, Any]]]] | None = None,
) -> dict[str, Any]:
    """All of the above for the conversations (`talks`, else read now) and tellings the server holds."""
    talks = read_talks(client) if talks is None else talks
    names = {a["id"]: a.get("name") or a["id"] for a in agents}
    conversations: list[tuple[int, list[str]]] = []
    turns: list[dict[str, Any]] = []
    for summary, said in talks:
        day = int((said or [{}])[0].get("day") or summary.get("day") or 1)
        conversations.append((day, [t["dialogue"] for t in said]))
        turns.extend(t for t in said if "speaker_id" in t)
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for agent in agents:
        for row in client._send("GET", f"/v1/agents/{agent['id']}/told").get("told", []):
            rows[(row["teller_id"], row["listener_id"], row["text"])] = row
    selves = self_references(turns, names)
    small_talk = small_talk_passed_on(rows.values(), places, names)
    return {
        "conversations": len(talks),
        **line_figures(conversations),
        "sentences": sentence_figures(conversations),
        "self_reference": {"lines": len(selves), "examples": selves[:3]},
        "small_talk_passed_on": {
            "count": len(small_talk),
            "passed_on": sum(r["teller_id"] != r["origin_id"] for r in rows.values()),
            "examples": small_talk[:3],
        },
    }
