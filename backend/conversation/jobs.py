"""Conversation's persisted jobs: each line's two observation memories, and each participant's reflection.

A line's observation job merges into the conversation's pending one, if any (`job_store.add` with `merge`):
a busy runner then stores several lines in one run, one memory write per participant instead of one per line.

Both are committed in the transaction that makes them necessary (store.commit_turn, store.claim_reflection):
a turn that got a reply always gets its observations, and a conversation marked `reflected` always has its two
reflection jobs, even across a `kill -9`. Handlers are idempotent (see each), so a job run again after a crash
does no work twice.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from sqlmodel import Session, col, select

from backend.conversation.schemas import TurnRequest
from backend.jobs import store as job_store
from backend.jobs.models import Job, new_job
from backend.jobs.runner import JobRunner, NotReady
from backend.memory.models import Memory

if TYPE_CHECKING:
    from backend.conversation.aftermath import Aftermath

OBSERVE = "conversation.observe"
REFLECT = "conversation.reflect"


def observe_prefix(world_id: str, session_id: str) -> str:
    return f"{OBSERVE}:{world_id}:{session_id}:"


class Participants(Protocol):
    """A conversation as the reflection jobs need it (a `Conversation` row, or a turn's commit state)."""

    session_id: str
    agent_a: str
    agent_b: str


def for_turn(
    session: Session, world_id: str, req: TurnRequest, reply: dict[str, Any], *, news: bool = False
) -> list[Job]:
    """The turn's observation job, added to its transaction (store.commit_turn adds the reflection jobs of a
    turn that ends the conversation).

    The line's observation job merges into the session's pending one when there is one (a busy runner then
    stores several lines of a conversation in one run), so it may add no row of its own. A line that told
    the listener news (`news`) is flagged: the listener's memory of it is rated on its own.
    """
    line = {
        "turn_index": reply["turn_index"],
        "speaker_id": req.agent_id,
        "partner_id": req.target_id,
        "dialogue": reply["dialogue"],
        "location_name": req.location_name,
        "day": req.day,
        "time_of_day": req.time_of_day,
    }
    if news:  # the line told the listener something: its observation gets a rating of its own
        line["news"] = True
    observe = new_job(
        world_id,
        OBSERVE,
        {"session_id": req.session_id, "lines": [line]},
        dedupe_key=f"{observe_prefix(world_id, req.session_id)}lines",
    )
    return job_store.add(session, [observe], merge=merge_lines)


def merge_lines(pending: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """A pending observation job's payload with a newer line of the conversation added."""
    known = {line["turn_index"] for line in lines_of(pending)}
    return {
        **pending,
        "lines": [*lines_of(pending), *(x for x in lines_of(new) if x["turn_index"] not in known)],
    }


def lines_of(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The lines an observation job stores (a job written before lines were merged holds one, flat)."""
    return list(payload["lines"]) if "lines" in payload else [payload]


def forget_agent(session: Session, world_id: str, agent_id: str) -> int:
    """A deleted agent's pending conversation jobs, in the caller's transaction: its reflections are dropped;
    the lines it spoke or heard stay in their observation jobs for the partner, marked `forgotten` for it, so
    neither it nor an agent re-created under its id remembers them. Returns how many jobs were dropped."""
    pending = job_store.pending_of(session, world_id, [OBSERVE, REFLECT])
    reflections = [
        i for i, kind, payload in pending if kind == REFLECT and payload.get("agent_id") == agent_id
    ]
    for job_id, kind, payload in pending:
        lines = [dict(line) for line in lines_of(payload)] if kind == OBSERVE else []
        marked = [line for line in lines if agent_id in (line["speaker_id"], line["partner_id"])]
        for line in marked:
            line["forgotten"] = sorted({*line.get("forgotten", []), agent_id})
        if marked:
            job_store.rewrite_pending(session, job_id, {**payload, "lines": lines})
    return job_store.drop_pending(session, reflections)


def reflection_jobs(session: Session, world_id: str, conv: Participants) -> list[Job]:
    """One reflection job per participant, added to the caller's transaction."""
    return job_store.add(session, _reflection_rows(world_id, conv))


def _reflection_rows(world_id: str, conv: Participants) -> list[Job]:
    return [
        new_job(
            world_id,
            REFLECT,
            {"session_id": conv.session_id, "agent_id": me, "partner_id": other},
            dedupe_key=f"{REFLECT}:{world_id}:{conv.session_id}:{me}",
        )
        for me, other in ((conv.agent_a, conv.agent_b), (conv.agent_b, conv.agent_a))
    ]


def has_observation(engine: Any, world_id: str, agent_id: str, session_id: str, content: str) -> bool:
    """Whether this line is already in the agent's memories (a job run again after a crash)."""
    query = select(Memory.id).where(
        Memory.session_id == session_id,
        Memory.world_id == world_id,
        Memory.agent_id == agent_id,
        Memory.type == "observation",
        Memory.content == content,
    )
    with Session(engine) as session:
        return session.exec(query).first() is not None


def has_reflection(engine: Any, world_id: str, agent_id: str, session_id: str) -> bool:
    return reflection_of(engine, world_id, agent_id, session_id) is not None


def reflection_of(engine: Any, world_id: str, agent_id: str, session_id: str) -> Memory | None:
    """The agent's stored reflection on this conversation, if any (a job run again after a crash)."""
    query = select(Memory).where(
        Memory.session_id == session_id,
        Memory.world_id == world_id,
        Memory.agent_id == agent_id,
        col(Memory.origin) == "conversation",
    )
    with Session(engine, expire_on_commit=False) as session:
        return session.exec(query).first()


def register(runner: JobRunner, after: Aftermath) -> None:
    """Install the conversation job handlers on the app's runner."""

    async def observe(job: Job) -> None:
        # `attempts` counts this run: 1 means no earlier run can have stored anything.
        await after.observe_job(job.world_id, job.payload, rerun=job.attempts > 1)

    async def reflect(job: Job) -> None:
        session_id = str(job.payload["session_id"])
        prefix = observe_prefix(job.world_id, session_id)
        # The reflection reads every line's observation: defer (without holding a job slot) while any is
        # still pending or running.
        if await asyncio.to_thread(job_store.live_with_prefix, runner.engine, prefix):
            raise NotReady("observations of the conversation are still pending", delay_s=0.2)
        made = await after.reflect_participant(job.world_id, session_id, str(job.payload["agent_id"]))
        if not made:
            raise RuntimeError(f"the conversation reflection for {job.payload['agent_id']} failed")

    runner.register(OBSERVE, observe, merging=True)
    runner.register(REFLECT, reflect)
