"""Memory's persisted jobs: rating provisional importances, then the threshold reflection check.

A batch of stored memories that holds an observation gets one `memory.rate` job, committed in the same
transaction as the memories (writer.store's follow-up). The job rates the memories still provisional (a memory
the model already rated is skipped, so a job run again after a crash does no work twice), then checks the
reflection threshold. A failed rating raises, so the runner retries the job later with backoff.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from backend.jobs.models import Job, new_job
from backend.memory import stream
from backend.memory.cache import Key
from backend.memory.models import Memory

if TYPE_CHECKING:
    from backend.memory.service import MemoryService
    from backend.memory.writer import FollowUp

RATE = "memory.rate"


def rating_follow_up(key: Key, created: list[Job]) -> FollowUp:
    """A follow-up for writer.store: one rating job for a batch holding an observation (appended to `created`)."""

    def build(rows: list[Memory]) -> list[Job]:
        if not any(row.type == "observation" for row in rows):
            return []
        last = rows[-1]
        payload = {
            "agent_id": key[1],
            "memory_ids": [row.id for row in rows if row.importance_source == "provisional"],
            "day": last.created_day,
            "time_of_day": last.created_time_of_day,
        }
        job = new_job(key[0], RATE, payload, dedupe_key=f"{RATE}:{key[0]}:{key[1]}:{rows[0].id}")
        created.append(job)
        return [job]

    return build


async def run_rating(service: MemoryService, job: Job) -> None:
    """The `memory.rate` handler. Raises RuntimeError when a rating failed (the runner retries the job)."""
    key = (job.world_id, str(job.payload["agent_id"]))
    ids = [int(i) for i in job.payload.get("memory_ids", [])]
    rows = await asyncio.to_thread(stream.by_ids, service.engine, *key, ids)
    agent = await asyncio.to_thread(stream.agent_row, service.engine, *key)
    if agent is None:
        return  # the agent was deleted: nothing left to rate or reflect into
    failed = []
    for memory_id in ids:
        row = rows.get(memory_id)
        if row is None or row.importance_source != "provisional":
            continue  # evicted, deleted, merged away, or already rated by an earlier run
        if not await service._rate(key, row, agent.name, agent.language):
            failed.append(memory_id)
    day, time_of_day = int(job.payload.get("day", 1)), float(job.payload.get("time_of_day", 0.0))
    await service.maybe_reflect(*key, day=day, time_of_day=time_of_day, auto=True)
    if failed:
        raise RuntimeError(f"importance rating failed for memories {failed}")
