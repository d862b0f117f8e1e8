"""Events across processes: two buses (two processes' worth), each with its relay, on one database.

Every test runs on a SQLite file (the polling relay) and, when MACHI_TEST_POSTGRES_URL points at a
PostgreSQL (CI starts one with .ci/postgres.sh), on PostgreSQL (NOTIFY)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from backend.config import Settings
from backend.events import poll
from backend.events.bus import Event, EventBus
from backend.events.payloads import AgentStatePayload, MemoryPayload
from backend.events.relay import PollingRelay, PostgresRelay, Relay, parse_event, psycopg_url, relay_kind
from backend.events.topics import AGENT_STATE, MEMORY_CREATED

MakeRelay = Callable[[EventBus], Relay]


@pytest.fixture(params=["sqlite", "postgresql"])
def make_relay(request: pytest.FixtureRequest, tmp_path: Path) -> MakeRelay:
    """A relay on the test's one database, for any number of buses."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'machi.db'}"
        return lambda bus: PollingRelay(bus, url, interval_s=0.02)
    pg_url = request.getfixturevalue("pg_url")
    return lambda bus: PostgresRelay(bus, pg_url)


@asynccontextmanager
async def _relayed(make_relay: MakeRelay, *buses: EventBus) -> AsyncIterator[list[Relay]]:
    relays = [make_relay(bus) for bus in buses]
    for relay in relays:
        await relay.start()
    try:
        yield relays
    finally:
        for relay in relays:
            await relay.stop()


def _state(agent: str) -> AgentStatePayload:
    return AgentStatePayload(
        agent_id=agent, state="talking", location_name="中央カフェ", day=1, time_of_day=9.5
    )


def _agents(events: list[Event[Any]]) -> list[str]:
    return [e.payload.agent_id for e in events]


def _heard(events: list[Event[Any]], count: int) -> Callable[[], bool]:
    return lambda: len(events) == count


async def _until(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "the event did not arrive"
        await asyncio.sleep(0.02)


async def test_an_event_published_in_one_process_reaches_the_others_once(make_relay: MakeRelay) -> None:
    a, b = EventBus(), EventBus()
    heard_a: list[Event[Any]] = []
    heard_b: list[Event[Any]] = []
    a.subscribe(heard_a.append)
    b.subscribe(heard_b.append, worlds=["w1"])  # per-world filtering holds for relayed events
    async with _relayed(make_relay, a, b) as relays:
        a.publish(AGENT_STATE, "w1", _state("aoi"))
        a.publish(AGENT_STATE, "w2", _state("ren"))  # another world: b's subscriber does not want it
        a.publish(AGENT_STATE, "w1", _state("a-done"))  # in order after the two: b has seen them once
        await _until(lambda: "a-done" in _agents(heard_b))
        assert _agents(heard_b) == ["aoi", "a-done"]
        assert isinstance(heard_b[0].payload, AgentStatePayload)
        assert heard_b[0].payload.location_name == "中央カフェ" and heard_b[0].world_id == "w1"
        assert relays[1].received == 3
        # b answers; a hears it after its own three went past it (skipped: a delivered them when published).
        b.publish(AGENT_STATE, "w1", _state("b-done"))
        await _until(lambda: "b-done" in _agents(heard_a))
        assert _agents(heard_a) == ["aoi", "ren", "a-done", "b-done"]
        assert _agents(heard_b) == ["aoi", "a-done", "b-done"]  # b's own, once
        assert relays[0].received == 1


async def test_an_event_too_large_for_a_notification_goes_through_the_outbox(make_relay: MakeRelay) -> None:
    a, b = EventBus(), EventBus()
    heard: list[Event[Any]] = []
    b.subscribe(heard.append)
    async with _relayed(make_relay, a, b):
        content = "長い記憶。" * 3000  # about 45 KB of UTF-8, far past a notification's 8,000 bytes
        a.publish(MEMORY_CREATED, "w1", MemoryPayload(agent_id="aoi", memory_id=1, type="observation",
                                                      content=content, importance=5))  # fmt: skip
        await _until(lambda: len(heard) == 1)
        assert heard[0].payload.content == content


async def test_publishing_from_a_worker_thread_is_relayed(make_relay: MakeRelay) -> None:
    a, b = EventBus(), EventBus()
    heard: list[Event[Any]] = []
    b.subscribe(heard.append)
    async with _relayed(make_relay, a, b):
        thread = threading.Thread(target=lambda: a.publish(AGENT_STATE, "w1", _state("hikari")))
        thread.start()
        thread.join(5)
        await _until(lambda: len(heard) == 1)
        assert _agents(heard) == ["hikari"]


async def test_a_process_that_starts_later_hears_only_what_follows(make_relay: MakeRelay) -> None:
    a, b = EventBus(), EventBus()
    heard: list[Event[Any]] = []
    b.subscribe(heard.append)
    async with _relayed(make_relay, a) as (relay_a,):
        a.publish(AGENT_STATE, "w1", _state("before"))
        await _until(lambda: relay_a.sent == 1)  # in the outbox (SQLite), or notified, before b starts
        async with _relayed(make_relay, b):
            a.publish(AGENT_STATE, "w1", _state("after"))
            await _until(lambda: len(heard) == 1)
    assert _agents(heard) == ["after"]


async def test_a_burst_arrives_whole_and_in_order_and_a_process_without_subscribers_reads_nothing(
    make_relay: MakeRelay,
) -> None:
    """A burst published at once (a busy process) reaches the other process complete and in order, a large
    event among small ones too; a third process with no subscriber (a worker, an API process with no
    /v1/events socket open) does not read any of it, then reads what follows once it has one."""
    a, b, idle = EventBus(), EventBus(), EventBus()
    heard: list[Event[Any]] = []
    b.subscribe(heard.append)
    async with _relayed(make_relay, a, b, idle) as (relay_a, relay_b, relay_idle):
        names = [f"agent-{i}" for i in range(300)]
        for i, name in enumerate(names):
            a.publish(AGENT_STATE, "w1", _state(name))
            if i == 150:
                a.publish(MEMORY_CREATED, "w1", MemoryPayload(agent_id="big", memory_id=1, type="observation",
                                                              content="長い記憶。" * 2000, importance=5))  # fmt: skip
        await _until(lambda: len(heard) == len(names) + 1)
        assert [e.payload.agent_id for e in heard] == [*names[:151], "big", *names[151:]]
        assert relay_a.sent == relay_b.received == len(names) + 1
        assert relay_idle.received == 0  # not one was parsed where nobody wanted it
        later: list[Event[Any]] = []
        idle.subscribe(later.append)
        a.publish(AGENT_STATE, "w1", _state("after"))
        await _until(lambda: len(later) == 1)
        assert _agents(later) == ["after"]  # only what followed its subscription


async def test_the_outbox_is_pruned_to_its_row_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(poll.repo, "OUTBOX_KEEP_ROWS", 5)
    monkeypatch.setattr(poll, "PRUNE_EVERY_S", 0.0)
    url = f"sqlite:///{tmp_path / 'machi.db'}"
    a, b = EventBus(), EventBus()
    heard: list[Event[Any]] = []
    b.subscribe(heard.append)
    async with _relayed(lambda bus: PollingRelay(bus, url, interval_s=0.02), a, b):
        for n in range(40):  # in fours, each read by b before the next: a burst past the limit is lost
            a.publish(AGENT_STATE, "w1", _state(f"agent-{n}"))
            if n % 4 == 3:
                await _until(_heard(heard, n + 1))
        await _until(lambda: _outbox(tmp_path)[0] <= 5)  # pruned after the last write
    assert _outbox(tmp_path)[1] == 40  # ids keep counting up (a reader's `id > last seen` stays right)
    assert _agents(heard) == [f"agent-{n}" for n in range(40)]


def _outbox(folder: Path) -> tuple[int, int]:
    """Rows in the outbox and the newest id ever given (AUTOINCREMENT's sequence)."""
    with sqlite3.connect(folder / "machi.db") as conn:
        count = conn.execute("SELECT count(*) FROM machi_event_outbox").fetchone()[0]
        newest = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'machi_event_outbox'").fetchone()[
            0
        ]
    return int(count), int(newest)


async def test_the_postgres_listener_reconnects_after_its_connection_drops(pg_url: str) -> None:
    import psycopg

    a, b = EventBus(), EventBus()
    heard: list[Event[Any]] = []
    b.subscribe(heard.append)
    async with _relayed(lambda bus: PostgresRelay(bus, pg_url), a, b):
        async with await psycopg.AsyncConnection.connect(psycopg_url(pg_url), autocommit=True) as admin:
            await admin.execute(  # what a database restart or a network cut does to both relays
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        # Events sent while the listener is away are lost (at most once): publish until one gets through.
        deadline = asyncio.get_running_loop().time() + 20
        while not heard:
            assert asyncio.get_running_loop().time() < deadline, "the relay did not reconnect"
            a.publish(AGENT_STATE, "w1", _state("again"))
            await asyncio.sleep(0.2)
        assert _agents(heard)[0] == "again"


def test_which_relay_runs(tmp_path: Path) -> None:
    sqlite_url = f"sqlite:///{tmp_path / 'machi.db'}"
    pg = "postgresql+psycopg://u:p@h/db"

    def kind(**values: Any) -> str | None:
        return relay_kind(Settings(_env_file=None, **values))

    assert kind(database_url=sqlite_url) is None  # one process: nothing to relay
    assert kind(database_url=sqlite_url, process_role="api") == "poll"
    assert kind(database_url=sqlite_url, process_role="worker") == "poll"
    assert kind(database_url=sqlite_url, events_relay="on") == "poll"
    assert kind(database_url=sqlite_url, process_role="api", events_relay="off") is None
    assert kind(database_url="sqlite:///:memory:", events_relay="on") is None
    assert kind(database_url=pg) == "notify"
    assert kind(database_url=pg, events_relay="off") is None


def test_urls_and_unknown_event_types() -> None:
    assert psycopg_url("postgresql+psycopg://u:p@h:5432/db") == "postgresql://u:p@h:5432/db"
    assert parse_event({"type": "no.such", "id": 1, "world_id": "w", "at": "2026-01-01T00:00:00Z"}) is None
