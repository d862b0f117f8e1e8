"""Shared helpers for council tests: three sisters with distinct temperaments, stored directly."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.llm.models import LLMCall
from backend.world.models import Agent

SISTERS: list[dict[str, Any]] = [
    {
        "id": "yukino",
        "name": "雪乃",
        "traits": ["慎重", "分析的", "責任感が強い"],
        "backstory": "三姉妹の長女。町の会計を任されている。",
        "speaking_style": "落ち着いた丁寧語",
        "council_role": "moderator",
    },
    {
        "id": "natsumi",
        "name": "夏海",
        "traits": ["情熱的", "率直", "感情豊か"],
        "backstory": "次女。思ったことはすぐ口に出す。",
        "speaking_style": "くだけた口調",
        "council_role": "member",
    },
    {
        "id": "haruka",
        "name": "春花",
        "traits": ["共感的", "まとめ役", "穏やか"],
        "backstory": "末っ子。みんなの話をよく聞く。",
        "speaking_style": "やわらかい話し方",
        "council_role": "member",
    },
]


def add_agents(
    client: TestClient, agents: list[dict[str, Any]] | None = None, world: str = "default"
) -> None:
    app: Any = client.app
    with Session(app.state.engine) as session:
        for spec in agents if agents is not None else SISTERS:
            session.add(Agent(world_id=world, **spec))
        session.commit()


def traced(client: TestClient, council_id: str, stage: str | None = None) -> list[LLMCall]:
    """The traced model calls of one council, oldest first."""
    app: Any = client.app
    with Session(app.state.engine) as session:
        query = select(LLMCall).where(LLMCall.council_id == council_id)
        if stage is not None:
            query = query.where(LLMCall.stage == stage)
        return list(session.exec(query.order_by(LLMCall.id)).all())


def prompt_text(call: LLMCall) -> str:
    return "\n".join(str(m.get("content", "")) for m in call.messages)


def opinion(
    stance: str, text: str, concerns: list[str] | None = None, conditions: list[str] | None = None
) -> dict:
    return {"stance": stance, "opinion": text, "concerns": concerns or [], "conditions": conditions or []}
