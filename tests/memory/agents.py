"""Test helper: agents are made by another concept's endpoint, so memory tests insert Agent rows directly."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.world.models import DEFAULT_WORLD, Agent


def add_agent(
    client: TestClient,
    agent_id: str = "aoi",
    *,
    world: str = DEFAULT_WORLD,
    name: str = "アオイ",
    language: str = "ja",
) -> None:
    app: Any = client.app
    with Session(app.state.engine) as session:
        session.add(Agent(world_id=world, id=agent_id, name=name, language=language))
        session.commit()


def post_memory(client: TestClient, agent_id: str = "aoi", world: str | None = None, **body: Any) -> Any:
    headers = {"X-Machi-World": world} if world else {}
    response = client.post(f"/v1/agents/{agent_id}/memories", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()
