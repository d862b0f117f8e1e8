"""Memory's persisted jobs: rating provisional importances, then the threshold reflection check.

A batch of stored memories that holds an observation gets a `memory.rate` job, committed in the same
transaction as the memories (a follow-up of MemoryWriter.write). Ratings are gathered per agent: the job is due
`importance_batch_s` after it is added, and memories stored while it is pending join it (`job_store.add` with
`merge`) instead of adding a job each, so one job rates them all, up to RATE_BATCH per model call. Once
claimed, a job no longer takes new memories: those start the next one.

The job rates the memories still provisional (a memory the model already rated is skipped, so a job run again
after a crash does no work twice), then checks the reflection threshold. A failed rating raises, so the
runner retries the job later with backoff.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from backend.jobs import repo as job_store
from backend.jobs.models import Job, new_job
from backend.memory.models import AgentLookup, Key, Memory
from backend.memory.reflection import Rater, Reflector
from backend.memory.repo import FollowUp, MemoryRepo, Transaction

RATE = "memory.rate"
#: Seconds a conversation line may wait for its conversation's reflection before a rating job rates it.
LINE_RATING_GRACE_S = 600.0


def rate_key(key: Key) -> str:
    """The dedupe key every pending rating job of one agent shares (so later memories merge into it)."""
    return f"{RATE}:{key[0]}:{key[1]}"


def merge_ratings(pending: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """A pending rating job's payload with a newer one's memories added (the newest game time kept)."""
    ids = list(dict.fromkeys([*pending.get("memory_ids", []), *new.get("memory_ids", [])]))
    return {**pending, "memory_ids": ids, "day": new.get("day"), "time_of_day": new.get("time_of_day")}


def rating_follow_up(key: Key, created: list[Job], delay_s: float = 0.0) -> FollowUp:
    """A follow-up for MemoryWriter.write: a rating job for a batch holding an observation, due in `delay_s`, or
    merged into the agent's pending one (a job actually added is appended to `created`)."""

    def add(session: Transaction, rows: list[Memory]) -> None:
        if not any(row.type == "observation" for row in rows):
            return
        last = rows[-1]
        payload = {
            "agent_id": key[1],
            "memory_ids": [row.id for row in rows if row.importance_source == "provisional"],
            "day": last.created_day,
            "time_of_day": last.created_time_of_day,
        }
        job = new_job(key[0], RATE, payload, dedupe_key=rate_key(key))
        if delay_s > 0:
            job.run_after = job.run_after + timedelta(seconds=delay_s)
        created.extend(job_store.add(session, [job], merge=merge_ratings))

    return add


def forget_agent(session: Transaction, world_id: str, agent_id: str) -> int:
    """Drop a deleted agent's pending rating jobs in the caller's transaction (its memories are gone, and an
    agent re-created under its id could have new memories with their ids). Returns how many went."""
    pending = job_store.pending_of(session, world_id, [RATE])
    return job_store.drop_pending(
        session, [i for i, _, payload in pending if payload.get("agent_id") == agent_id]
    )


class RatingJob:
    """The `memory.rate` handler: rates what is still provisional, then checks the reflection threshold."""

    def __init__(self, repo: MemoryRepo, agents: AgentLookup, rater: Rater, reflector: Reflector) -> None:
        self.repo = repo
        self.agents = agents
        self.rater = rater
        self.reflector = reflector

    async def run(self, job: Job) -> None:
        """Raises RuntimeError when a rating failed (the runner retries the job)."""
        key = (job.world_id, str(job.payload["agent_id"]))
        ids = [int(i) for i in job.payload.get("memory_ids", [])]
        rows = await asyncio.to_thread(self.repo.by_ids, key, ids, embedding=False)
        agent = await asyncio.to_thread(self.agents, *key)
        if agent is None:
            return  # the agent was deleted: nothing left to rate or reflect into
        # Evicted, deleted, merged away, or already rated by an earlier run: skipped.
        todo = [
            row for i in ids if (row := rows.get(i)) is not None and row.importance_source == "provisional"
        ]
        # Lines of a conversation that never ended get no reflection to rate them: rated here once they are old.
        stale = await asyncio.to_thread(self.repo.unrated_lines, key, LINE_RATING_GRACE_S)
        todo += [row for row in stale if row.id not in set(ids)]
        failed = await self.rater.rate(key, todo, agent.name, agent.language)
        day, time_of_day = int(job.payload.get("day", 1)), float(job.payload.get("time_of_day", 0.0))
        await self.reflector.maybe_reflect(key, day, time_of_day, auto=True)
        if failed:
            raise RuntimeError(f"importance rating failed for memories {failed}")
