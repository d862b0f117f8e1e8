"""Reading turn prompts ahead on a model that keeps prompt states (llama.cpp in process): the partner's next
turn after each line, and each agent's opening line once Unity reports the two `talking` with a `partner_id`.
A read-ahead stores nothing and marks no memory accessed; what it reads is the start of the turn's own prompt."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.config import Settings
from backend.conversation.models import Conversation
from backend.conversation.prompts import HISTORY_CLOSE
from backend.llm.base import GenerateOptions, Message
from backend.llm.scripted import ScriptedLLM
from backend.memory.models import Memory
from tests.conftest import drain, make_client
from tests.conversation.helpers import add_agents, turn


class ReadingScripted(ScriptedLLM):
    """The scripted engine, as a model that can read a prompt ahead: records what it was handed."""

    can_prefill = True

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.read: list[tuple[list[Message], str]] = []

    async def prefill(self, messages: Sequence[Message], *, options: GenerateOptions, upto: str) -> bool:
        self.read.append((list(messages), upto))
        return True


@pytest.fixture
def reading() -> ReadingScripted:
    return ReadingScripted()


@pytest.fixture
def client(settings: Settings, reading: ReadingScripted) -> Iterator[TestClient]:
    with make_client(settings, reading) as test_client:
        add_agents(test_client)
        test_client.post("/v1/agents/aoi/memories", json={"type": "observation", "content": "ひかりとケーキを焼いた",
                                                          "importance": 5, "day": 1, "time_of_day": 9})  # fmt: skip
        drain(test_client)
        yield test_client


def _talking(agent: str, partner: str, **extra: Any) -> dict[str, Any]:
    return {"state": "talking", "partner_id": partner, "location_name": "中央カフェ", "day": 1,
            "time_of_day": 14.4, **extra}  # fmt: skip


def _accessed(client: TestClient) -> list[Any]:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        return [
            (m.last_accessed_day, m.last_accessed_time_of_day, m.last_accessed_at)
            for m in session.exec(select(Memory).order_by(Memory.id)).all()
        ]


def test_talking_with_a_partner_reads_each_opening_line_ahead(
    client: TestClient, reading: ReadingScripted
) -> None:
    before = _accessed(client)
    for agent, partner in (("aoi", "hikari"), ("hikari", "aoi")):
        assert client.post(f"/v1/agents/{agent}/state", json=_talking(agent, partner)).status_code == 200
    drain(client)
    assert len(reading.read) == 2
    assert (
        _accessed(client)[: len(before)] == before
    )  # a read-ahead marks no memory accessed (arrivals are new)
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        assert session.exec(select(Conversation)).all() == []  # and stores no conversation
    reading.enqueue({"dialogue": "こんにちは、ひかり!", "emotion": "happy", "is_conversation_end": False},
                    purpose="dialogue")  # fmt: skip
    assert client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-open", [])).status_code == 200
    asked = reading.calls("dialogue")[-1].messages
    read_messages, upto = reading.read[0]
    assert read_messages[0] == asked[0]  # the same system prompt (persona and rules)
    assert asked[-1]["content"].startswith(upto) and "ひかりとケーキを焼いた" in upto
    assert "Now: " not in upto  # time, place and the ask are the turn's own


def test_after_a_line_the_partners_next_turn_is_read_up_to_the_end_of_the_history(
    client: TestClient, reading: ReadingScripted
) -> None:
    reading.enqueue({"dialogue": "こんにちは、ひかり!", "emotion": "happy", "is_conversation_end": False},
                    purpose="dialogue")  # fmt: skip
    first = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-ahead", [])).json()
    drain(client)
    assert len(reading.read) == 1
    _, upto = reading.read[0]
    assert upto.endswith(HISTORY_CLOSE)
    reading.enqueue({"dialogue": "葵ちゃん、いらっしゃい!", "emotion": "happy", "is_conversation_end": False},
                    purpose="dialogue")  # fmt: skip
    history = [f"葵: {first['dialogue']}"]
    assert (
        client.post("/v1/conversation/turn", json=turn("hikari", "aoi", "s-ahead", history)).status_code
        == 200
    )
    assert reading.calls("dialogue")[-1].messages[-1]["content"].startswith(upto)


def test_a_partner_id_is_checked_before_anything_is_stored(
    client: TestClient, reading: ReadingScripted
) -> None:
    moving = {"state": "moving_to_poi", "partner_id": "hikari", "day": 1, "time_of_day": 10.0}
    reply = client.post("/v1/agents/aoi/state", json=moving)
    assert reply.status_code == 422 and "partner_id" in reply.text
    reply = client.post("/v1/agents/aoi/state", json=_talking("aoi", "aoi"))
    assert reply.status_code == 422 and reply.json()["error"]["details"]["field"] == "partner_id"
    reply = client.post("/v1/agents/aoi/state", json=_talking("aoi", "nobody"))
    assert reply.status_code == 404 and "nobody" in reply.text
    assert client.get("/v1/agents/aoi/states").json() == []  # none of the three was stored
    drain(client)
    assert reading.read == []


def test_without_a_partner_or_on_a_model_that_cannot_read_ahead_nothing_is_read(
    settings: Settings, client: TestClient, reading: ReadingScripted
) -> None:
    body = _talking("aoi", "hikari")
    del body["partner_id"]
    assert client.post("/v1/agents/aoi/state", json=body).status_code == 200
    drain(client)
    assert reading.read == []
    plain = ScriptedLLM(seed=0)
    with make_client(settings.model_copy(update={"database_url": settings.database_url}), plain) as other:
        assert other.post("/v1/agents/aoi/state", json=_talking("aoi", "hikari")).status_code == 200
