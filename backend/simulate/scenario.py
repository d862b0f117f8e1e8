"""The party scenario (the Generative Agents paper's end-to-end evaluation): does news travel, and do people
act on it?

One host is whispered an intention (an event at a time and place, and that it wants everyone to come); the
stand-in world then plays two game days over HTTP, as Unity would. What is measured, all through the API:
- who knows of the event after day 1 and day 2, by their memories (a memory that names it) and by
  interview (`POST /v1/agents/{id}/interview`, which changes nothing they remember);
- the invited (those the host told itself) and everyone who heard: whose day-2 plan holds the event at its
  time and place, and who is at that place when it starts (their last reported state);
- the relationship network's density (directed pairs with person memory / n(n-1)) at the start and end;
- model calls and tokens per agent per game day, by purpose;
- how varied and honest the lines are (variety.py): lines and sentences repeated in one conversation and
  over each day, speakers naming themselves in the third person, small talk passed on as news.
The paper's figures (25 agents, two game days): 52% knew of the party, 5 of the 12 invited came, density
0.167 -> 0.74.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from backend.simulate import party_minds, party_news, variety
from backend.simulate.party_news import PartyNews
from backend.simulate.scenario_report import render

__all__ = ["PAPER", "PARTIES", "Party", "Snapshot", "knowledge", "party_for", "render", "run_party"]

#: What the party needs: who hosts, where, the whisper, and the words that show someone knows of it.
PARTIES: dict[str, dict[str, Any]] = {
    "demo": {
        "host": "aoi",
        "poi": "park",
        "text": "明日の19時に公園で花火大会を開く。町のみんなに来てほしい",
        "keywords": ["花火", "fireworks"],
        "question": {
            "ja": "花火大会のこと、何か知ってる？",
            "en": "Do you know anything about the fireworks?",
        },
        "start": 19.0,
    },
    # The paper's: Isabella's Valentine's party at Hobbs Cafe, from 5 pm; here the barista's, at her café.
    "town25": {
        "host": "hikari",
        "poi": "cafe",
        "text": "明日の17時に中央カフェでパーティーを開く。町のみんなに来てほしい",
        "keywords": ["パーティ", "party"],
        # The place by its name in the world: an English speaker may have heard of it in Japanese.
        "question": {
            "ja": "パーティーのこと、何か知ってる？",
            "en": "Do you know anything about a party at 中央カフェ?",
        },
        "start": 17.0,
    },
    # Small towns for a small real model (4-6 agents): the café owner's party at her café, the day after.
    "town5_en": {
        "host": "mia",
        "poi": "corner_cafe",
        "text": "Tomorrow at 7pm I am throwing a party at the Corner Cafe. I want everyone in town to come.",
        "keywords": ["party", "パーティ"],
        "question": {
            "en": "Have you heard about a party? Who is hosting it, and when and where is it?",
            "ja": "パーティーのこと、何か聞いてる？誰が、いつ、どこで開くの？",
        },
        "start": 19.0,
    },
    "town5_ja": {
        "host": "misaki",
        "poi": "hidamari",
        "text": "明日の18時に喫茶ひだまりでパーティーを開く。町のみんなに来てほしい",
        "keywords": ["パーティ", "party"],
        "question": {
            "ja": "パーティーのこと、何か聞いてる？誰が、いつ、どこで開くの？",
            "en": "Have you heard about a party? Who is hosting it, and when and where is it?",
        },
        "start": 18.0,
    },
}
PAPER = {"knew": 0.52, "invited_came": "5 of 12", "density": (0.167, 0.74)}


@dataclass
class Party:
    host: str
    poi: str
    text: str
    keywords: list[str]
    question: dict[str, str]
    start: float
    day: int = 2


@dataclass
class Snapshot:
    knew_by_memory: list[str] = field(default_factory=list)
    knew_by_interview: list[str] | None = None
    #: Per interviewed agent: its answer, whether it fell back, and whether it names the host and the time.
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)


def party_for(town: str) -> Party:
    data = PARTIES[town]
    return Party(
        host=data["host"],
        poi=data["poi"],
        text=data["text"],
        keywords=list(data["keywords"]),
        question=dict(data["question"]),
        start=float(data.get("start", 19.0)),
        day=int(data.get("day", 2)),
    )


def _names_it(text: str, keywords: list[str]) -> bool:
    low = text.lower()
    return any(word.lower() in low for word in keywords)


def knowledge(
    client: Any, agents: list[dict[str, Any]], party: Party, *, interview: bool, news: PartyNews | None = None
) -> Snapshot:
    """Who (besides the host) knows of the party: by memory, and by interview when the server has it. With
    the party's `news`, an answer knows of it when it carries the event (slots.carries), and each answer is
    checked for the host and the time (party_news.interview_check); without, by the party's keywords."""
    snap = Snapshot(knew_by_interview=[] if interview else None)
    for agent in agents:
        if agent["id"] == party.host:
            continue
        found = 0
        for word in party.keywords:
            found += client._send(
                "GET", f"/v1/agents/{agent['id']}/memories", params={"q": word, "limit": 1}
            )["total"]
        if found:
            snap.knew_by_memory.append(agent["id"])
        if snap.knew_by_interview is not None and _knows_by_interview(client, agent, party, news, snap):
            snap.knew_by_interview.append(agent["id"])
    return snap


def _knows_by_interview(
    client: Any, agent: dict[str, Any], party: Party, news: PartyNews | None, snap: Snapshot
) -> bool:
    question = party.question.get(agent.get("language") or "ja", party.question["ja"])
    reply = client._send("POST", f"/v1/agents/{agent['id']}/interview", {"question": question})
    answer, fallback = str(reply.get("answer") or ""), bool(reply.get("fallback"))
    if news is None:
        return _names_it(answer, party.keywords) and not fallback
    state = client.agent(agent["id"])  # the interview is at the agent's last report, as the server takes it
    day, hour = int(state.get("state_day") or party.day), float(state.get("state_time_of_day") or 0.0)
    checked = party_news.interview_check(answer, news, day=day, hour=hour)
    snap.answers[agent["id"]] = {"answer": answer, "fallback": fallback, "tries": int(reply.get("tries") or 1),
                                 **checked}  # fmt: skip
    return not fallback and bool(party_news.arrived(answer, news, day=day, hour=hour).get("what"))


def has_interview(client: Any) -> bool:
    paths = client._send("GET", "/openapi.json").get("paths", {})
    return "/v1/agents/{agent_id}/interview" in paths


def density(client: Any, agents: list[dict[str, Any]]) -> float:
    """Directed pairs (a knows b: a holds person memory of b) over n(n-1)."""
    ids = {a["id"] for a in agents}
    pairs = 0
    for agent in agents:
        people = client._send("GET", f"/v1/agents/{agent['id']}/people").get("people", [])
        pairs += len({p.get("other_id") for p in people} & (ids - {agent["id"]}))
    n = len(agents)
    return pairs / (n * (n - 1)) if n > 1 else 0.0


def plans_hold(client: Any, agent_ids: list[str], party: Party) -> list[str]:
    """Agents whose plan for the party's day has the party's place at its start."""
    holding = []
    for agent_id in agent_ids:
        try:
            plan = client.plan(agent_id, party.day)
        except Exception:  # noqa: BLE001 - no plan for that day: it does not hold the party
            continue
        for item in plan.get("items", []):
            if (
                item["poi_id"] == party.poi
                and item["start"] <= party.start + 0.25
                and item["end"] > party.start
            ):
                holding.append(agent_id)
                break
    return holding


def at_place(client: Any, agent_ids: list[str], place_name: str, party: Party) -> list[str]:
    """Agents whose last reported state (at the party's day and hour) is at the party's place."""
    there = []
    for agent_id in agent_ids:
        agent = client.agent(agent_id)
        if agent.get("state_day") == party.day and agent.get("location_name") == place_name:
            there.append(agent_id)
    return there


def model_use(client: Any, agents: int, days: float) -> dict[str, Any]:
    stats = client.llm_stats(window_s=30 * 86_400)
    purposes = {p["purpose"]: p for p in stats.get("purposes", [])}
    calls = sum(p["calls"] for p in purposes.values())
    tokens = sum(p.get("prompt_tokens", 0) for p in purposes.values())
    per = max(1, agents) * max(days, 1e-9)
    return {
        "calls_per_agent_day": calls / per,
        "prompt_tokens_per_agent_day": tokens / per,
        "by_purpose": {name: round(p["calls"] / per, 2) for name, p in sorted(purposes.items())},
        "turns": stats.get("turns", 0),
        "fallback_turns": stats.get("fallback_turns", 0),
        # A turn's model call (purpose dialogue): its median and mean seconds.
        "turn_s": {
            key: round(purposes.get("dialogue", {}).get(f"latency_{key}_ms", 0.0) / 1000, 2)
            for key in ("p50", "mean")
        },
    }


def run_party(
    url: str,
    party: Party,
    *,
    seed: int = 1,
    api_key: str | None = None,
    world_id: str | None = None,
    progress: Callable[[str], None] | None = None,
    days: int = 2,
    timeout_s: float = 30.0,
    first_hours: float = 18.0,
) -> dict[str, Any]:
    """Whisper the host, play two game days (day 1 from 06:00, day 2 until the party starts plus half an
    hour, then to midnight), and measure. The world must be freshly loaded (its counts are the run's).
    `days=1` plays only the first day (a slow real model): what the party's day would show is left out.
    `timeout_s`: how long a request may take (a day's first plan on a slow CPU model takes minutes).
    `first_hours`: game hours of the first day played from 06:00 (fewer with `days=1` on a slow model)."""
    from backend.simulate import load_client_package

    machi_client = load_client_package()
    from machi_client.world import HeadlessWorld  # loaded just above

    say = progress or (lambda _text: None)
    with machi_client.MachiClient(
        url, api_key=api_key, world_id=world_id, seed=seed, timeout_s=timeout_s, turn_timeout_s=timeout_s
    ) as client:
        agents, pois = client.agents(), client.pois()
        news = party_news.news_of(party.text, party.host, written_day=party.day - 1, agents=agents, pois=pois)
        report: dict[str, Any] = {
            "agents": len(agents),
            "days": days,
            "host": party.host,
            "place": {p["id"]: p for p in pois}[party.poi]["name"],
            "interview": has_interview(client),
            "first_hours": first_hours if days < 2 else 18.0,
        }
        start_density = density(client, agents)
        body = {"text": party.text, "day": party.day - 1, "time_of_day": 6.0}
        client._send("POST", f"/v1/agents/{party.host}/whisper", body)
        run_id = f"party{seed}-{uuid.uuid4().hex[:4]}"
        world = HeadlessWorld(client, seed=seed, start_day=party.day - 1, start_hour=6.0, run_id=run_id)
        if days >= 2:
            first_hours = 18.0  # the party's day starts at midnight
        say(f"day {party.day - 1}: 06:00 + {first_hours:g} h")
        world.run(first_hours)
        report["memories_stored"] = party_news.wait_for_memories(client, min(timeout_s, 300.0))
        report["knew_day1"] = knowledge(
            client, agents, party, interview=report["interview"], news=news
        ).__dict__
        if days >= 2:
            report.update(_party_day(client, world, agents, (party, news), report, say))
        played = 2.0 if days >= 2 else first_hours / 24
        report.update(_closing(client, world, agents, news, (start_density, played, timeout_s)))
        return report


def _closing(
    client: Any,
    world: Any,
    agents: list[dict[str, Any]],
    news: PartyNews,
    figures: tuple[float, float, float],
) -> dict[str, Any]:
    """What every run ends with (`figures`: the starting density, game days played, the request limit):
    the tellings once the lines are remembered, density, model use, line variety, turns and fallbacks."""
    start_density, played, timeout_s = figures
    stored = party_news.wait_for_memories(client, min(timeout_s, 300.0))
    tellings = party_news.tellings(client, news)
    days = list(range(1, max(1, math.ceil(played)) + 1))  # every scenario starts on game day 1
    talks = variety.read_talks(client)  # read once: the farewell endings and the variety measures
    return {
        "plans": party_minds.plan_sources(client, [a["id"] for a in agents], days),
        "farewells": party_minds.farewell_endings(talks),
        "council": _council(client, agents, news, timeout_s),
        "memories_stored": stored,
        "density": {"start": start_density, "end": density(client, agents)},
        "model": model_use(client, len(agents), played),
        "variety": variety.measure(client, agents, news.places, talks),
        "turns": world.report.turns,
        "fallbacks": world.report.fallbacks,
        "tellings": tellings,
        "telling_counts": party_news.summary(tellings),
    }


def _council(client: Any, agents: list[dict[str, Any]], news: PartyNews, timeout_s: float) -> dict[str, Any]:
    """One round of a council of three guests on holding the party every month (its opinions: real
    sentences of the model's, or not)."""
    guests = [a["id"] for a in agents if a["id"] != news.host][:3]
    host, place = news.people.get(news.host, news.host), news.slots.where_name or news.slots.where or ""
    ja = next((a.get("language") for a in agents if a["id"] == news.host), "ja") != "en"
    proposal = (
        {"title": f"{place}での{host}のパーティーを毎月開く", "language": "ja",
         "background": f"{host}が{place}でパーティーを開いた。毎月開くかどうかを決める。"}
        if ja else
        {"title": f"Hold {host}'s party at {place} every month", "language": "en",
         "background": f"{host} held a party at {place}. The town decides whether to hold it every month."}
    )  # fmt: skip
    return party_minds.council_opinions(client, guests, proposal, timeout_s=max(timeout_s, 60.0) * 2)


def _party_day(
    client: Any,
    world: Any,
    agents: list[dict[str, Any]],
    party_and_news: tuple[Party, PartyNews],
    report: dict[str, Any],
    say: Callable[[str], None],
) -> dict[str, Any]:
    """The party's day: who was invited and who heard, who is there when it starts, who planned it."""
    party, news = party_and_news
    say(f"day {party.day}: 00:00-{party.start + 0.5:g}")
    world.run(party.start + 0.5)
    told = client._send("GET", f"/v1/agents/{party.host}/told")
    others = [a["id"] for a in agents if a["id"] != party.host]
    heard = sorted({a for a in others if client._send("GET", f"/v1/agents/{a}/told")["heard"]})
    there = at_place(client, others, report["place"], party)
    say(f"day {party.day}: {party.start + 0.5:g}-24:00")
    world.run(24.0 - party.start - 0.5)
    party_news.wait_for_memories(client, 300.0)
    return {
        "knew_day2": knowledge(client, agents, party, interview=report["interview"], news=news).__dict__,
        "invited": sorted({t["listener_id"] for t in told["told"]}),
        "heard": heard,
        "plans_hold": plans_hold(client, others, party),
        "at_place": there,
    }
