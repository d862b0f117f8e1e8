"""Conversation's persisted jobs, kinds and payloads: each line's two observation memories, and each
participant's reflection.

A line's observation job merges into the conversation's pending one, if any (`jobs.repo.add` with `merge`):
a busy runner then stores several lines in one run, one memory write per participant instead of one per line.

Both are committed in the transaction that makes them necessary (repo.commit_turn, repo.claim_reflection):
a turn that got a reply always gets its observations, and a conversation marked `reflected` always has its two
reflection jobs, even across a `kill -9`. Their handlers (aftermath.py, registered in backend/app.py) are
idempotent, so a job run again after a crash does no work twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backend.conversation.schemas import TurnRequest
from backend.ids import is_player
from backend.jobs import repo as job_store
from backend.jobs.models import Job, new_job

OBSERVE = "conversation.observe"
REFLECT = "conversation.reflect"


def observe_prefix(world_id: str, session_id: str) -> str:
    return f"{OBSERVE}:{world_id}:{session_id}:"


def observe_job(
    world_id: str,
    req: TurnRequest,
    reply: dict[str, Any],
    *,
    news: bool = False,
    listeners: Sequence[str] = (),
    marks: Sequence[str] = (),
    invitation: bool = False,
    facts: dict[str, Any] | None = None,
) -> Job:
    """The turn's observation job row (repo.commit_turn adds it, merged into the session's pending one when
    there is one, so a busy runner stores several lines of a conversation in one run). A line that told the
    listener news (`news`) is flagged: the listener's memory of it is rated on its own. `marks` (a
    visitor's words: heard.Split.marks) go on every memory of the line.
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
    if listeners:  # a group: everyone still in it hears the line (else the partner alone)
        line["listeners"] = list(listeners)
    if marks:
        line["marks"] = list(marks)
    if invitation:  # the news invites the listener: its memory gets the invitation's importance at once
        line["invitation"] = True
    if facts:  # the told news's slots and host: the listener's memory keeps them (aftermath._with_facts)
        line["facts"] = facts
    return new_job(
        world_id,
        OBSERVE,
        {"session_id": req.session_id, "lines": [line]},
        dedupe_key=f"{observe_prefix(world_id, req.session_id)}lines",
    )


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


def listeners_of(line: dict[str, Any]) -> list[str]:
    """Who heard a line: everyone still in its group, or (a line of two, or stored before groups) the partner."""
    return list(line.get("listeners") or [line["partner_id"]])


def forget_agent(session: Any, world_id: str, agent_id: str) -> int:
    """A deleted agent's pending conversation jobs, in the caller's transaction: its reflections are dropped;
    the lines it spoke or heard stay in their observation jobs for the partner, marked `forgotten` for it, so
    neither it nor an agent re-created under its id remembers them. Returns how many jobs were dropped.

    `session`: the caller's database session (jobs/repo.py reads and rewrites the job rows in it).
    """
    pending = job_store.pending_of(session, world_id, [OBSERVE, REFLECT])
    reflections = [
        i for i, kind, payload in pending if kind == REFLECT and payload.get("agent_id") == agent_id
    ]
    for job_id, kind, payload in pending:
        lines = [dict(line) for line in lines_of(payload)] if kind == OBSERVE else []
        marked = [line for line in lines if agent_id in (line["speaker_id"], *listeners_of(line))]
        for line in marked:
            line["forgotten"] = sorted({*line.get("forgotten", []), agent_id})
        if marked:
            job_store.rewrite_pending(session, job_id, {**payload, "lines": lines})
    return job_store.drop_pending(session, reflections)


def reflection_jobs(world_id: str, session_id: str, members: Sequence[str]) -> list[Job]:
    """One reflection job row per agent of an ended conversation (players have no memory stream)."""
    return [
        new_job(
            world_id,
            REFLECT,
            {"session_id": session_id, "agent_id": me},
            dedupe_key=f"{REFLECT}:{world_id}:{session_id}:{me}",
        )
        for me in members
        if not is_player(me)
    ]
