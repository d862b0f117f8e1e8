"""Lost-data audit straight from the database: acknowledged turns missing, memories duplicated.

`Ack` is a turn a client got a 200 reply for. A turn is lost if its Turn row (with that dialogue) is missing,
or either participant lacks the observation of that line. Run the server with MEMORY_DEDUP=false for an exact
count: a near-duplicate merge folds a line into an earlier memory (by design) and would read as missing here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlmodel import Session, create_engine, select

from backend.conversation.models import Turn
from backend.conversation.prompts import observation_texts
from backend.jobs.models import Job
from backend.memory.models import Memory
from backend.world.models import Agent


@dataclass(frozen=True)
class Ack:
    world_id: str
    session_id: str
    turn_index: int
    speaker_id: str
    target_id: str
    dialogue: str


@dataclass
class Audit:
    acknowledged: int = 0
    missing_turns: int = 0
    missing_memories: int = 0
    duplicated_memories: int = 0
    duplicated_reflections: int = 0
    jobs: dict[str, int] = field(default_factory=dict)

    @property
    def lost(self) -> int:
        return self.missing_turns + self.missing_memories


async def converse(
    urls: list[str], pair: tuple[str, str], names: dict[str, str], acks: list[Ack], *, label: str, turns: int
) -> None:
    """A Unity-like client of a load test: whole conversations of `pair` (a new session when the server ends
    one), at most `turns` turns, each acknowledged turn appended to `acks`. Turn i goes to the next process of
    `urls` in turn (a load balancer's round robin); one that no longer answers is dropped, and the client
    stops when none is left."""
    a, b = pair
    async with httpx.AsyncClient(timeout=30) as http:
        conversation, history, speaker, partner = 0, [], a, b
        for turn in range(turns):
            session_id = f"{label}-{conversation}"
            url = urls[turn % len(urls)]
            body = {"agent_id": speaker, "target_id": partner, "session_id": session_id, "history": history,
                    "location_name": "中央カフェ", "time_of_day": 10 + conversation % 10}  # fmt: skip
            try:
                response = await http.post(f"{url}/v1/conversation/turn", json=body)
            except httpx.HTTPError:
                urls = [u for u in urls if u != url]  # that process is gone
                if not urls:
                    return
                continue
            assert response.status_code == 200, response.text
            reply = response.json()
            acks.append(Ack("default", session_id, reply["turn_index"], speaker, partner, reply["dialogue"]))
            history = [*history, f"{names[speaker]}: {reply['dialogue']}"]
            speaker, partner = partner, speaker
            if reply["is_conversation_end"]:
                conversation, history, speaker, partner = conversation + 1, [], a, b


def audit(database: Path | str, acks: list[Ack]) -> Audit:
    """Audit a SQLite file (a Path) or any DATABASE_URL (a str)."""
    engine = create_engine(database if isinstance(database, str) else f"sqlite:///{database}")
    result = Audit(acknowledged=len(acks))
    with Session(engine) as session:
        agents = {(a.world_id, a.id): a for a in session.exec(select(Agent))}
        turns = {(t.world_id, t.session_id, t.turn_index): t for t in session.exec(select(Turn))}
        memories = list(session.exec(select(Memory)))
        for status in ("pending", "running", "done", "failed"):
            result.jobs[status] = len(session.exec(select(Job.id).where(Job.status == status)).all())
    engine.dispose()
    # Conversation lines only: perceptions (state reports) have no session and may repeat by design.
    stored = Counter(
        (m.world_id, m.agent_id, m.session_id, m.content)
        for m in memories
        if m.type == "observation" and m.session_id is not None
    )
    expected: Counter[tuple[str, str, str | None, str]] = Counter()
    for turn in turns.values():
        expected.update(_observations(agents, turn.world_id, turn.session_id, turn.speaker_id, turn.target_id,
                                      turn.dialogue))  # fmt: skip
    result.duplicated_memories = sum(max(0, n - expected[key]) for key, n in stored.items())
    reflections = Counter(
        (m.world_id, m.agent_id, m.session_id) for m in memories if m.origin == "conversation"
    )
    result.duplicated_reflections = sum(n - 1 for n in reflections.values() if n > 1)
    for ack in acks:
        row = turns.get((ack.world_id, ack.session_id, ack.turn_index))
        if row is None or row.dialogue != ack.dialogue:
            result.missing_turns += 1
            continue
        keys = _observations(
            agents, ack.world_id, ack.session_id, ack.speaker_id, ack.target_id, ack.dialogue
        )
        result.missing_memories += sum(1 for key in keys if stored[key] == 0)
    return result


def _observations(
    agents: dict[tuple[str, str], Agent], world: str, session_id: str, speaker: str, target: str, line: str
) -> list[tuple[str, str, str | None, str]]:
    a, b = agents.get((world, speaker)), agents.get((world, target))
    if a is None or b is None:
        return []
    return [(world, agent.id, session_id, text) for agent, text in observation_texts(a, b, [b], line)]
