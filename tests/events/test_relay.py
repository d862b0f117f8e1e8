"""Events across processes through PostgreSQL: two buses (two processes' worth) on one database.

Runs when MACHI_TEST_POSTGRES_URL points at a PostgreSQL (CI starts one with .ci/postgres.sh)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from backend.events.bus import Event, EventBus
from backend.events.payloads import AgentStatePayload, MemoryPayload
from backend.events.relay import PostgresRelay, parse_event, psycopg_url
from backend.events.topics import AGENT_STATE, MEMORY_CREATED


def _state(agent: str) -> AgentStatePayload:
    return AgentStatePayload(
        agent_id=agent, state="talking", location_name="中央カフェ", day=1, time_of_day=9.5
    )


async def _until(condition: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "the event did not arrive"
        await asyncio.sleep(0.02)


async def test_an_event_published_in_one_process_reaches_the_others_once(pg_url: str) -> None:
    a, b = EventBus(), EventBus()
    heard_a: list[Event[Any]] = []
    heard_b: list[Event[Any]] = []
    a.subscribe(heard_a.append)
    b.subscribe(heard_b.append, worlds=["w1"])  # per-world filtering holds for relayed events
    relays = [
        PostgresRelay(a, pg_url, channel="machi_test_events"),
        PostgresRelay(b, pg_url, channel="machi_test_events"),
    ]
    for relay in relays:
        await relay.start()
    try:
        a.publish(AGENT_STATE, "w1", _state("aoi"))
        a.publish(AGENT_STATE, "w2", _state("ren"))  # another world: b's subscriber does not want it
        await _until(lambda: relays[1].received == 2)
        assert [e.payload.agent_id for e in heard_b] == ["aoi"]
        assert (
            isinstance(heard_b[0].payload, AgentStatePayload)
            and heard_b[0].payload.location_name == "中央カフェ"
        )
        assert [e.payload.agent_id for e in heard_a] == ["aoi", "ren"]  # its own, once each (not echoed back)
        await asyncio.sleep(0.2)
        assert relays[0].received == 0
    finally:
        for relay in relays:
            await relay.stop()


async def test_an_event_too_large_for_a_notification_goes_through_the_outbox(pg_url: str) -> None:
    a, b = EventBus(), EventBus()
    heard: list[Event[Any]] = []
    b.subscribe(heard.append)
    relays = [
        PostgresRelay(a, pg_url, channel="machi_test_large"),
        PostgresRelay(b, pg_url, channel="machi_test_large"),
    ]
    for relay in relays:
        await relay.start()
    try:
        content = "長い記憶。" * 3000  # about 45 KB of UTF-8
        a.publish(MEMORY_CREATED, "w1", MemoryPayload(agent_id="aoi", memory_id=1, type="observation",
                                                      content=content, importance=5))  # fmt: skip
        await _until(lambda: len(heard) == 1)
        assert heard[0].payload.content == content
    finally:
        for relay in relays:
            await relay.stop()


async def test_publishing_from_a_worker_thread_is_relayed_and_never_blocks(pg_url: str) -> None:
    a, b = EventBus(), EventBus()
    heard: list[Event[Any]] = []
    b.subscribe(heard.append)
    relays = [
        PostgresRelay(a, pg_url, channel="machi_test_thread"),
        PostgresRelay(b, pg_url, channel="machi_test_thread"),
    ]
    for relay in relays:
        await relay.start()
    try:
        thread = threading.Thread(target=lambda: a.publish(AGENT_STATE, "w1", _state("hikari")))
        thread.start()
        thread.join(5)
        await _until(lambda: len(heard) == 1)
    finally:
        for relay in relays:
            await relay.stop()


def test_urls_and_unknown_event_types() -> None:
    assert psycopg_url("postgresql+psycopg://u:p@h:5432/db") == "postgresql://u:p@h:5432/db"
    assert parse_event({"type": "no.such", "id": 1, "world_id": "w", "at": "2026-01-01T00:00:00Z"}) is None
