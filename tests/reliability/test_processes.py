"""Several processes on one database: two API processes and a worker, as `machi serve --no-worker` twice and
`machi worker` once, on SQLite (WAL) and on PostgreSQL (MACHI_TEST_POSTGRES_URL).

Shown end to end, with real processes: turns answered by both; a retry sent to the other process gets the
stored reply; a memory written through one is retrieved through the other on the next request; an event
published in one reaches a WebSocket on the other; then `kill -9` of one API process and of the worker
under load, a restart, and an audit from the database: no acknowledged turn lost, no memory or reflection
duplicated, every job done or failed with its error, none held by a dead process past its lease.
"""

from __future__ import annotations

import asyncio
import json
import os
import time

import httpx
import pytest
from sqlalchemy import text
from sqlmodel import create_engine
from websockets.sync.client import connect

from bench.audit import Ack, audit, converse
from bench.serverproc import ServerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

PG_URL = os.environ.get("MACHI_TEST_POSTGRES_URL")
# MEMORY_DEDUP off: the audit counts exact observation rows. A short lease: a dead worker's jobs are taken
# over within seconds, and a poll often enough that the audit's wait is short.
ENV = {"MEMORY_DEDUP": "false", "JOB_POLL_S": "0.2", "JOB_LEASE_S": "3", "LLM_CONCURRENCY": "2"}
PAIRS = [("aoi", "hikari"), ("ren", "yukino"), ("natsumi", "haruka"), ("hikari", "ren")]
CLIENTS = 6
KILL_AFTER = 30
MAX_TURNS_PER_CLIENT = 40


def _turn(speaker: str, partner: str, session_id: str, history: list[str]) -> dict[str, object]:
    return {"agent_id": speaker, "target_id": partner, "session_id": session_id, "history": history,
            "location_name": "中央カフェ", "time_of_day": 10}  # fmt: skip


def _shared_state(one: ServerProcess, other: ServerProcess) -> None:
    """A retry, a memory and an event, each crossing from one API process to the other."""
    body = _turn("aoi", "hikari", "cross-retry", [])
    first = httpx.post(f"{one.url}/v1/conversation/turn", json=body, timeout=30)
    again = httpx.post(f"{other.url}/v1/conversation/turn", json=body, timeout=30)
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()  # the stored reply, found by the other process in the database

    with connect(f"ws://127.0.0.1:{other.port}/v1/events?types=memory.created", open_timeout=10) as socket:
        time.sleep(0.5)  # the subscription is registered once the handshake's first await has run
        content = "北の灯台の鍵は、古い時計塔の地下にしまってある。"
        added = httpx.post(
            f"{one.url}/v1/agents/ren/memories", json={"type": "observation", "content": content}, timeout=30
        )
        assert added.status_code == 201, added.text
        event = _next_event(socket, lambda e: e.get("payload", {}).get("content") == content)
        assert event["type"] == "memory.created" and event["payload"]["agent_id"] == "ren"

    found = httpx.post(
        f"{other.url}/v1/agents/ren/memories/retrieve", json={"query": "灯台の鍵はどこ", "k": 3}, timeout=30
    )
    assert found.status_code == 200, found.text
    assert content in [hit["memory"]["content"] for hit in found.json()["results"]]


def _next_event(socket: object, wanted: object, timeout: float = 20.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, "no such event reached the other process"
        event = json.loads(socket.recv(timeout=remaining))  # type: ignore[attr-defined]
        if wanted(event):  # type: ignore[operator]
            return event  # type: ignore[no-any-return]


async def _load_then_kill(apis: list[ServerProcess], worker: ServerProcess, acks: list[Ack]) -> None:
    names = {agent["id"]: agent["name"] for agent in httpx.get(f"{apis[0].url}/v1/agents", timeout=10).json()}
    urls = [api.url for api in apis]
    # Each client starts on another process, then goes round them (a load balancer's round robin).
    rotated = [urls[i % len(urls) :] + urls[: i % len(urls)] for i in range(CLIENTS)]
    clients = [
        asyncio.create_task(
            converse(
                rotated[i], PAIRS[i % len(PAIRS)], names, acks, label=f"procs-{i}", turns=MAX_TURNS_PER_CLIENT
            )
        )
        for i in range(CLIENTS)
    ]
    while len(acks) < KILL_AFTER and not all(task.done() for task in clients):
        await asyncio.sleep(0.01)
    apis[0].kill()  # mid-load: its requests in flight are lost to their clients, never half-stored
    worker.kill()  # and the jobs it was running stay `running` under its lease
    await asyncio.wait_for(asyncio.gather(*clients), timeout=120)


def test_two_api_processes_and_a_worker_share_one_database(database_url: str) -> None:
    database = database_url  # a SQLite file, then a PostgreSQL database (tests/conftest.py)
    apis = [ServerProcess(database, env=ENV, args=["--no-worker"]) for _ in range(2)]
    worker = ServerProcess(database, env=ENV, command="worker")
    for process in (*apis, worker):
        process.start()
    acks: list[Ack] = []
    try:
        _shared_state(apis[0], apis[1])
        asyncio.run(_load_then_kill(apis, worker, acks))
        assert len(acks) >= KILL_AFTER
        assert audit(database, acks).missing_turns == 0  # a reply is sent only after its turn's commit
        restarted = [ServerProcess(database, env=ENV, port=apis[0].port, args=["--no-worker"]),
                     ServerProcess(database, env=ENV, command="worker")]  # fmt: skip
        for process in restarted:
            process.start()
        counts = apis[1].wait_for_jobs(timeout=180)
    finally:
        for process in (*apis, worker, *locals().get("restarted", [])):
            process.stop()
    result = audit(database, acks)
    assert result.missing_turns == 0 and result.missing_memories == 0
    assert result.duplicated_memories == 0 and result.duplicated_reflections == 0
    assert counts["pending"] == counts["running"] == 0  # the dead worker's jobs were taken over
    assert counts["done"] > 0
    engine = create_engine(database)
    with engine.connect() as conn:
        unexplained = conn.execute(
            text("SELECT COUNT(*) FROM job WHERE status = 'failed' AND last_error IS NULL")
        )
        assert unexplained.scalar() == 0
    engine.dispose()
