"""A conversation's lines are rated with their conversation: its reflection's importance, no rating call."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.memory.models import Memory
from backend.memory.repo import MemoryRepo
from backend.scripted import ScriptedLLM
from tests.conftest import drain
from tests.conversation.helpers import add_agents, turn


def _lines(client: TestClient, agent_id: str) -> list[Memory]:
    app: Any = client.app
    with Session(app.state.engine) as session:
        query = select(Memory).where(Memory.agent_id == agent_id, Memory.type == "observation")
        return list(session.exec(query).all())


def test_lines_take_the_conversations_importance(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    # One end-of-conversation call per participant (the reflection and person memory in one reply).
    learned = {"traits_noticed": [], "notes": [], "person_summary": "よく話す相手。"}
    scripted.enqueue(
        {"reflection": "ひかりと話せてうれしかった。", "importance": 8, **learned}, purpose="reflection"
    )
    scripted.enqueue({"reflection": "葵と話した。", "importance": 4, **learned}, purpose="reflection")
    # Two lines about different things (near-identical lines would merge into one memory: hygiene.py).
    scripted.enqueue(
        {
            "dialogue": "こんにちは、ひかりさん。図書館の帰りです。",
            "emotion": "happy",
            "is_conversation_end": False,
        },
        {"dialogue": "おつかれさま！新しい豆が入ったよ。", "emotion": "happy", "is_conversation_end": False},
        purpose="dialogue",
    )
    first = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-r", [])).json()
    client.post("/v1/conversation/turn", json=turn("hikari", "aoi", "s-r", [f"葵: {first['dialogue']}"]))
    client.post("/v1/conversation/end", json={"session_id": "s-r", "reason": "distance"})
    drain(client)
    aoi, hikari = _lines(client, "aoi"), _lines(client, "hikari")
    assert len(aoi) == 2 and len(hikari) == 2
    assert scripted.calls("importance") == []
    reflections = {call.options.agent_id for call in scripted.calls("reflection")}
    assert reflections == {"aoi", "hikari"}
    by_agent = {"aoi": aoi, "hikari": hikari}
    importances = {
        agent: {(m.importance, m.importance_source) for m in rows} for agent, rows in by_agent.items()
    }
    # Which participant reflected first is up to the runner: each gets one of the two ratings for all its lines.
    assert {next(iter(v)) for v in importances.values()} == {(8, "model"), (4, "model")}
    assert all(len(v) == 1 for v in importances.values())


def test_lines_of_a_conversation_that_never_ends_wait_for_the_grace(client: TestClient) -> None:
    add_agents(client)
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-open", []))
    drain(client)
    app: Any = client.app
    lines = _lines(client, "aoi")
    assert [m.importance_source for m in lines] == ["provisional"]
    assert MemoryRepo(app.state.engine).unrated_lines(("default", "aoi"), 600.0) == []
    # Past the grace the next rating job of the agent takes them.
    assert [m.id for m in MemoryRepo(app.state.engine).unrated_lines((lines[0].world_id, "aoi"), -1.0)] == [
        lines[0].id
    ]
