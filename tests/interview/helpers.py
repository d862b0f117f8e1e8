"""Helpers for the interview tests: agents with memories written through the API, and a snapshot of
everything an agent's mind is stored in (every table but the model-call trace)."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session, SQLModel, select

from backend.llm.models import LLMCall
from tests.conversation.helpers import AOI, EMMA, HIKARI, LIAM, add_agents

__all__ = ["AOI", "EMMA", "HIKARI", "LIAM", "add_agents"]

PARTY_JA = "葵が「明日の19時に公園でパーティーをするんだけど、来ない？」と言った"
PARTY_EN = 'Liam told me: "I\'m having a party at the park at 7 tomorrow, want to come?"'
SMALL_TALK_JA = [
    "ひかりと図書館で本の話をした",
    "中央カフェでコーヒーを淹れた",
    "雨が降ってきたので傘を差した",
]
SMALL_TALK_EN = [
    "I watered the roses in the shop.",
    "I had lunch at the cafe.",
    "It rained in the afternoon.",
]


def remember(
    client: TestClient, agent_id: str, *contents: str, day: int = 1, importance: int = 5
) -> list[int]:
    """Store observations (rated, so no background rating call) and return their ids."""
    ids = []
    for hour, content in enumerate(contents, start=9):
        body = {"type": "observation", "content": content, "importance": importance, "day": day,
                "time_of_day": float(hour)}  # fmt: skip
        response = client.post(f"/v1/agents/{agent_id}/memories", json=body)
        assert response.status_code in (200, 201), response.text
        ids.append(response.json()["id"])
    return ids


def ask(client: TestClient, agent_id: str, question: str, **extra: Any) -> dict[str, Any]:
    response = client.post(f"/v1/agents/{agent_id}/interview", json={"question": question, **extra})
    assert response.status_code == 200, response.text
    return response.json()


def stored_mind(client: TestClient) -> dict[str, list[Any]]:
    """Every row of every table except the model-call trace: what an interview must leave as it was."""
    engine = client.app.state.engine  # type: ignore[attr-defined]
    out: dict[str, list[Any]] = {}
    with Session(engine) as session:
        for table in SQLModel.metadata.sorted_tables:
            if table.name == LLMCall.__table__.name:  # type: ignore[attr-defined]
                continue
            out[table.name] = [tuple(row) for row in session.execute(select(table)).all()]
    return out
