"""The memory concept's events on the bus: created, updated, evicted (cap and dedup), reflection.created."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.app import build_memory
from backend.config import Settings
from backend.events import Event
from backend.llm.embedding import LocalEmbedder
from backend.memory.models import MemoryCreate
from backend.memory.repo import MemoryRepo
from backend.scripted import ScriptedLLM
from backend.storage.db import create_db_engine, init_db
from backend.tasks import TaskRunner
from backend.world.models import Agent
from tests.conftest import drain, make_client
from tests.memory.agents import add_agent
from tests.memory.helpers import add, call, service

W1 = {"X-Machi-World": "w1"}


@pytest.fixture
def app_client(settings: Settings, scripted: ScriptedLLM) -> Iterator[TestClient]:
    with make_client(settings, scripted, memory_cap_observation=10, memory_evict_batch=0.1,
                     reflection_threshold=1000.0) as client:  # fmt: skip
        add_agent(client, world="w1")
        add_agent(client)  # the same agent id in the default world
        yield client


def listen(client: TestClient, world: str | None = None) -> list[Event[Any]]:
    app: Any = client.app
    heard: list[Event[Any]] = []
    app.state.events.subscribe(heard.append, worlds=[world] if world else None)
    return heard


def of(heard: list[Event[Any]], name: str) -> list[Event[Any]]:
    return [e for e in heard if e.type == name]


def test_created_then_updated_when_the_rating_lands(app_client: TestClient, scripted: ScriptedLLM) -> None:
    w1, default = listen(app_client, "w1"), listen(app_client, "default")
    scripted.enqueue({"importance": 7}, purpose="importance")
    body = {"type": "observation", "content": "ヒカリが広場で転んだ"}
    stored = app_client.post("/v1/agents/aoi/memories", json=body, headers=W1).json()
    drain(app_client)
    created = of(w1, "memory.created")
    assert [e.payload.memory_id for e in created] == [stored["id"]]
    assert created[0].world_id == "w1" and created[0].payload.importance_source == "provisional"
    assert created[0].payload.content == "ヒカリが広場で転んだ" and created[0].payload.agent_id == "aoi"
    updated = of(w1, "memory.updated")
    assert [(e.payload.memory_id, e.payload.importance, e.payload.importance_source) for e in updated] == [
        (stored["id"], 7, "model")
    ]
    assert default == []  # nothing leaks into another world


def test_a_merge_is_an_update_and_a_dedup_eviction(app_client: TestClient) -> None:
    heard = listen(app_client, "w1")
    first = add(app_client, "カフェでヒカリがコーヒーを飲んでいる", world="w1", importance=3)
    again = add(app_client, "カフェでヒカリがコーヒーを飲んでいた", world="w1", importance=6)
    assert again.id == first.id
    assert len(of(heard, "memory.created")) == 1
    [evicted] = of(heard, "memory.evicted")
    assert evicted.payload.reason == "dedup" and evicted.payload.merged_into == first.id
    assert evicted.payload.memory_ids == [] and evicted.world_id == "w1"
    assert (
        evicted.payload.content == "カフェでヒカリがコーヒーを飲んでいた"
    )  # what was folded in, for the dashboard
    [updated] = of(heard, "memory.updated")
    assert updated.payload.memory_id == first.id and updated.payload.importance == 6


def test_cap_eviction_is_published_with_the_ids(app_client: TestClient) -> None:
    made = [add(app_client, f"出来事{i}", world="w1", importance=1 + i % 5, tags=[f"a{i}", f"b{i}"]).id
            for i in range(10)]  # fmt: skip
    heard = listen(app_client)
    add(app_client, "最後の出来事", world="w1", importance=5, tags=["last", "one"])
    [evicted] = of(heard, "memory.evicted")
    assert evicted.world_id == "w1" and evicted.payload.reason == "cap"
    assert evicted.payload.merged_into is None and len(evicted.payload.memory_ids) == 2
    assert set(evicted.payload.memory_ids) == {made[0], made[5]}  # the two importance-1 memories


def test_both_reflection_kinds_are_published(app_client: TestClient) -> None:
    heard = listen(app_client, "w1")
    first = add(app_client, "カフェでヒカリとケーキを食べた", world="w1", importance=5, session_id="talk")
    made = call(app_client, service(app_client).reflect_on_conversation, "w1", "aoi", session_id="talk",
                partner_name="ヒカリ", transcript=["ヒカリ: ケーキ美味しいね", "アオイ: うん!"],
                evidence_ids=[first.id], day=1, time_of_day=12.0, language="ja")  # fmt: skip
    [conversation] = of(heard, "reflection.created")
    assert conversation.world_id == "w1" and conversation.payload.kind == "conversation"
    assert conversation.payload.memory_id == made.id and conversation.payload.evidence_ids == [first.id]
    drain(app_client)  # let the importance rating land first: the insights' prompt must not race it
    insights = call(app_client, service(app_client).reflect_now, "w1", "aoi")
    kinds = [e.payload.kind for e in of(heard, "reflection.created")]
    assert insights and kinds == ["conversation"] + ["insight"] * len(insights)
    created_ids = {e.payload.memory_id for e in of(heard, "memory.created")}
    assert {m.id for m in insights} <= created_ids  # each reflection is also a created memory
    drain(app_client)


def test_a_service_without_a_bus_still_works(settings: Settings, scripted: ScriptedLLM) -> None:
    engine = create_db_engine(settings.database_url)
    init_db(engine)
    with Session(engine) as session:
        session.add(Agent(world_id="default", id="aoi", name="アオイ"))
        session.commit()
    memory = build_memory(MemoryRepo(engine), LocalEmbedder(dim=64), scripted, settings, TaskRunner())

    async def run() -> int:
        row = await memory.add(
            "default", "aoi", MemoryCreate(type="observation", content="x y z", importance=3)
        )
        await memory.tasks.drain(timeout=5)
        return row.id or 0

    assert asyncio.run(run()) > 0
