"""kill -9 under load loses nothing acknowledged: a real server process, concurrent turns, a crash, a restart.

Counts from the database afterwards: every turn a client got a 200 reply for is in the transcript and in both
agents' memories, no memory is duplicated, and the jobs the crash interrupted have all completed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from bench.audit import Ack, audit, converse
from bench.serverproc import ServerProcess

CLIENTS = 8
#: Acknowledged turns before the crash, and the most turns one client sends (bounds the test).
KILL_AFTER = 40
MAX_TURNS_PER_CLIENT = 60
PAIRS = [("aoi", "hikari"), ("ren", "yukino"), ("natsumi", "haruka"), ("hikari", "ren")]
# MEMORY_DEDUP off: the audit counts exact observation rows (a merge would read as a missing line). JOB_LEASE_S
# short: the jobs the kill left running are the restarted server's to take over once their lease runs out.
ENV = {"MEMORY_DEDUP": "false", "JOB_POLL_S": "0.2", "JOB_LEASE_S": "2", "LLM_CONCURRENCY": "2"}


async def _load_then_kill(server: ServerProcess, acks: list[Ack]) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
        names = {agent["id"]: agent["name"] for agent in (await http.get("/v1/agents")).json()}
    clients = [
        asyncio.create_task(
            converse(
                [server.url],
                PAIRS[i % len(PAIRS)],
                names,
                acks,
                label=f"restart-{i}",
                turns=MAX_TURNS_PER_CLIENT,
            )
        )
        for i in range(CLIENTS)
    ]
    while len(acks) < KILL_AFTER and not all(task.done() for task in clients):
        await asyncio.sleep(0.01)
    server.kill()  # mid-load: requests in flight, jobs pending and running
    await asyncio.wait_for(asyncio.gather(*clients), timeout=60)


@pytest.mark.timeout(300)
def test_kill_9_mid_load_loses_nothing_acknowledged(tmp_path: Path) -> None:
    database = tmp_path / "machi.db"
    server = ServerProcess(database, env=ENV)
    server.start()
    acks: list[Ack] = []
    try:
        asyncio.run(_load_then_kill(server, acks))
    finally:
        server.kill()
    assert len(acks) >= KILL_AFTER
    crashed = audit(database, acks)
    assert crashed.missing_turns == 0  # the reply was sent only after the turn's commit
    assert crashed.jobs["pending"] + crashed.jobs["running"] > 0  # the crash did interrupt background work

    again = ServerProcess(database, port=server.port, env=ENV)
    again.start()
    try:
        counts = again.wait_for_jobs(timeout=120)
    finally:
        again.stop()
    result = audit(database, acks)
    assert result.missing_turns == 0 and result.missing_memories == 0
    assert result.duplicated_memories == 0 and result.duplicated_reflections == 0
    assert counts["pending"] == counts["running"] == 0 and counts["failed"] == 0
