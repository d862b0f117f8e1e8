"""Helpers for the conversation tests: the two demo agents, turn requests, and a stored-data snapshot."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.conversation.models import Conversation, Turn
from backend.memory.models import Memory
from backend.world.models import Agent

AOI = {
    "id": "aoi",
    "name": "葵",
    "language": "ja",
    "traits": ["読書好き", "好奇心旺盛"],
    "backstory": "大学で文学を学ぶ学生。図書館で過ごす時間が一番の楽しみ。",
    "speaking_style": "丁寧でやわらかい口調。",
}
HIKARI = {
    "id": "hikari",
    "name": "ひかり",
    "language": "ja",
    "traits": ["明るい", "社交的"],
    "backstory": "中央カフェで働くバリスタ。",
    "speaking_style": "元気でくだけた話し方。",
}
EMMA = {"id": "emma", "name": "Emma", "language": "en", "backstory": "A florist.", "speaking_style": "warm"}
LIAM = {"id": "liam", "name": "Liam", "language": "en", "backstory": "A postman.", "speaking_style": "dry"}


def add_agents(client: TestClient, *agents: dict[str, Any]) -> None:
    """Insert agent rows directly (the demo world loader is not under test here)."""
    engine = client.app.state.engine  # type: ignore[attr-defined]
    with Session(engine) as session:
        for data in agents or (AOI, HIKARI):
            session.add(Agent(**data))
        session.commit()


def turn(agent: str, target: str, session_id: str, history: list[str], **extra: Any) -> dict[str, Any]:
    body = {
        "agent_id": agent,
        "target_id": target,
        "session_id": session_id,
        "location_name": "中央カフェ",
        "history": history,
        "time_of_day": 14.5,
    }
    body.update(extra)
    return body


def snapshot(client: TestClient) -> dict[str, Any]:
    """Everything the conversation code could write, for 'nothing changed' assertions."""
    engine = client.app.state.engine  # type: ignore[attr-defined]
    with Session(engine) as session:
        return {
            "turns": [t.model_dump() for t in session.exec(select(Turn))],
            "conversations": [c.model_dump() for c in session.exec(select(Conversation))],
            "memories": [m.id for m in session.exec(select(Memory))],
        }


def rows(client: TestClient, model: Any, **where: Any) -> list[Any]:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    with Session(engine) as session:
        query = select(model)
        for key, value in where.items():
            query = query.where(getattr(model, key) == value)
        return list(session.exec(query))


def talk(
    client: TestClient, a: str, b: str, session_id: str, names: dict[str, str], limit: int = 20
) -> list[dict]:
    """Let a and b talk (alternating) until the server ends the conversation; returns the replies."""
    history: list[str] = []
    replies = []
    speaker, partner = a, b
    for _ in range(limit):
        response = client.post("/v1/conversation/turn", json=turn(speaker, partner, session_id, history))
        assert response.status_code == 200, response.text
        reply = response.json()
        replies.append(reply)
        history.append(f"{names[speaker]}: {reply['dialogue']}")
        if reply["is_conversation_end"]:
            break
        speaker, partner = partner, speaker
    return replies
