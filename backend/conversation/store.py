"""Conversation storage: reading what a turn needs, committing a turn atomically, claiming the reflection.

All functions are synchronous (SQLModel sessions) and take the engine; the service runs them in a thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, update
from sqlalchemy import select as core_select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, or_, select

from backend.conversation import jobs as turn_jobs
from backend.conversation.models import Conversation, Turn
from backend.conversation.schemas import TurnRequest
from backend.conversation.transcript import after_turn, check_not_behind
from backend.errors import Conflict, NotFound
from backend.gametime import utcnow
from backend.intention.models import Told
from backend.jobs.models import Job
from backend.memory.models import Memory
from backend.planning import repo as plan_repo
from backend.planning.service import activity_at
from backend.storage.rows import build, values_of
from backend.world.cache import AgentCache
from backend.world.models import Agent


@dataclass
class TurnState:
    """What storage knows about a requested turn before the model is asked."""

    speaker: Agent
    partner: Agent
    stored_reply: dict[str, Any] | None
    plan_activity: str | None
    #: The conversation's stored transcript (empty for a first turn): the history is checked against it.
    transcript: list[str] = field(default_factory=list)
    #: The conversation's memory watermark (None for a first turn, or a conversation stored before it).
    watermark: int | None = None
    #: The speaker's standing memory ids for this conversation, once it has spoken in it.
    standing: list[int] | None = None


@dataclass
class Said:
    """What a turn's commit stores besides the reply: its transcript line and language, the memory watermark
    of a first turn, and the speaker's standing memory ids (kept from its first turn on)."""

    line: str
    language: str
    watermark: int | None = None
    standing: list[int] | None = None


def _agent(found: dict[str, Agent], world_id: str, agent_id: str, field: str) -> Agent:
    agent = found.get(agent_id)
    if agent is None:
        raise NotFound(f"no agent {agent_id!r} in world {world_id!r}", details={"field": field})
    return agent


def load_turn_state(session: Session, world_id: str, req: TurnRequest, agents: AgentCache) -> TurnState:
    """Agents, the stored reply for this turn (a retry), and the speaker's plan item, read in `session`.

    The agents come from `agents` (kept rows, checked against `updated_at`); the rest are Core reads of
    the columns needed: every turn runs this.

    Raises:
        NotFound: the agent or the target does not exist.
        Conflict: the conversation has ended, or this turn index belongs to another speaker.
    """
    found = agents.get_many(session, world_id, [req.agent_id, req.target_id])
    speaker = _agent(found, world_id, req.agent_id, "agent_id")
    partner = _agent(found, world_id, req.target_id, "target_id")
    conn = session.connection()
    turn_index = len(req.history)
    stored = conn.execute(
        _STORED_TURN, {"world_id": world_id, "session_id": req.session_id, "turn_index": turn_index}
    ).first()
    if stored is not None:
        reply, spoken_by, spoken_to = stored
        check_pair(req, turn_index, spoken_by, spoken_to)
        return TurnState(speaker, partner, reply, None)
    conv = conn.execute(_CONVERSATION_OPEN, {"w": world_id, "s": req.session_id}).first()
    lines: list[str] = []
    watermark, standing = None, None
    if conv is not None:
        *state, lines, watermark, by_speaker = conv
        _check_open(req, *state)
        lines = list(lines or [])
        check_not_behind(req.session_id, turn_index, len(lines))
        standing = (by_speaker or {}).get(req.agent_id)
    activity = _plan_activity(conn, world_id, req)
    return TurnState(speaker, partner, None, activity, lines, watermark, standing)


def check_pair(req: TurnRequest, turn_index: int, spoken_by: str, spoken_to: str) -> None:
    """A stored turn answers only its own pair: another speaker or target at its index is a 409 naming both."""
    if (spoken_by, spoken_to) == (req.agent_id, req.target_id):
        return
    raise Conflict(
        f"turn {turn_index} of session {req.session_id!r} was spoken by {spoken_by!r} to {spoken_to!r}; this "
        f"request is {req.agent_id!r} to {req.target_id!r} (another pair needs another session_id)",
        details={
            "field": "agent_id" if spoken_by != req.agent_id else "target_id",
            "turn_index": turn_index,
            "stored": {"agent_id": spoken_by, "target_id": spoken_to},
            "requested": {"agent_id": req.agent_id, "target_id": req.target_id},
        },
    )


def _check_open(req: TurnRequest, ended: bool, end_reason: str | None, agent_a: str, agent_b: str) -> None:
    if ended:
        raise Conflict(
            f"conversation {req.session_id!r} has ended ({end_reason}); start a new session_id",
            details={"field": "session_id", "end_reason": end_reason},
        )
    if {agent_a, agent_b} != {req.agent_id, req.target_id}:
        raise Conflict(
            f"session {req.session_id!r} is a conversation between {agent_a!r} and {agent_b!r}",
            details={"field": "session_id"},
        )


# Built once (every turn runs them): the statements, not only their compiled SQL, are reused.
_TURN_KEY = (
    col(Turn.world_id) == bindparam("world_id"),
    col(Turn.session_id) == bindparam("session_id"),
    col(Turn.turn_index) == bindparam("turn_index"),
)
_STORED_TURN = select(col(Turn.reply), col(Turn.speaker_id), col(Turn.target_id)).where(*_TURN_KEY)


def _plan_activity(conn: Connection, world_id: str, req: TurnRequest) -> str | None:
    """The speaker's planned activity at this time of day, when a plan exists."""
    items = plan_repo.items(conn, world_id, req.agent_id, req.day)
    return activity_at(items, req.time_of_day) if items else None


def last_emotion(engine: Any, world_id: str, session_id: str, agent_id: str) -> str | None:
    """The speaker's emotion on its latest turn in this conversation (a fallback line keeps that face)."""
    query = (
        select(Turn.emotion)
        .where(Turn.world_id == world_id, Turn.session_id == session_id, Turn.speaker_id == agent_id)
        .order_by(col(Turn.turn_index).desc())
    )
    with Session(engine) as session:
        return session.exec(query).first()


def stored_reply(engine: Any, world_id: str, req: TurnRequest, turn_index: int) -> dict[str, Any] | None:
    """The reply stored for this turn (the read `load_turn_state` makes for a retry), or None.

    Raises:
        Conflict: the turn was stored for another speaker or target (see `check_pair`).
    """
    params = {"world_id": world_id, "session_id": req.session_id, "turn_index": turn_index}
    with engine.connect() as conn:
        row = conn.execute(_STORED_TURN, params).first()
    if row is None:
        return None
    reply, spoken_by, spoken_to = row
    check_pair(req, turn_index, spoken_by, spoken_to)
    return dict(reply)


def commit_turn(
    engine: Any,
    world_id: str,
    req: TurnRequest,
    reply: dict[str, Any],
    said: Said,
    jobs: list[Job] | None = None,
    told: Told | None = None,
) -> tuple[dict[str, Any], bool]:
    """Store the turn and update its conversation in one transaction.

    `told`: the line told the listener something (intention/telling.py); recorded with the turn, once.
    `said`: the transcript line and what the conversation keeps of the turn's memories (`Said`).

    With `jobs` (a list to fill), the turn's background work is committed in the same transaction as the
    turn: the observation job, and the two reflection jobs when this turn ends the conversation (which then
    counts as `reflected`). A turn that got a reply therefore always gets its memories, even after a crash.

    Core statements on the session's connection: every turn runs this, and the ORM's unit of work and
    object construction cost more than the two rows.

    Returns:
        (the reply as stored, True) or, when an identical request stored this turn first, (its reply, False).

    Raises:
        Conflict: another pair stored this turn or this session first (a race `load_turn_state` could not see).
    """
    for _attempt in range(2):
        try:
            with Session(engine) as session:
                conn = session.connection()
                now = utcnow()
                # The unique (world, session, turn_index) constraint fires here for a retry.
                conn.execute(_INSERT_TURN, values_of(_new_turn(world_id, req, reply, now)))
                conv = _upsert_conversation(conn, world_id, req, reply, said, now)
                added: list[Job] = []
                if told is not None:
                    _record_told(session, told)
                if jobs is not None:
                    added = turn_jobs.for_turn(session, world_id, req, reply, news=told is not None)
                    if conv.ended and _claim_reflection(conn, world_id, req.session_id):
                        added += turn_jobs.reflection_jobs(session, world_id, conv)
                session.commit()
                if jobs is not None:
                    jobs.extend(added)
                return reply, True
        except IntegrityError:
            existing = stored_reply(engine, world_id, req, reply["turn_index"])
            if existing is not None:
                return existing, False
            # The conversation row raced with another first turn; its row exists now, so try again.
    raise Conflict(f"could not store turn {reply['turn_index']} of {req.session_id!r}; retry")


def _record_told(session: Session, told: Told) -> None:
    """What was told to whom, once per (teller, listener, item): a second telling keeps the first record."""
    key = (told.world_id, told.teller_id, told.listener_id, told.item_key)
    if session.get(Told, key) is None:
        session.add(Told.model_validate(told.model_dump()))
        session.flush()


_TURNS = Turn.__table__  # type: ignore[attr-defined]
_CONVERSATIONS = Conversation.__table__  # type: ignore[attr-defined]
_INSERT_TURN = insert(_TURNS)
_INSERT_CONVERSATION = insert(_CONVERSATIONS)
_CONVERSATION_KEY = (
    _CONVERSATIONS.c.world_id == bindparam("w"),
    _CONVERSATIONS.c.session_id == bindparam("s"),
)
_CONVERSATION_STATE = core_select(
    _CONVERSATIONS.c.agent_a,
    _CONVERSATIONS.c.agent_b,
    _CONVERSATIONS.c.transcript,
    _CONVERSATIONS.c.turn_count,
    _CONVERSATIONS.c.ended,
    _CONVERSATIONS.c.standing,
).where(*_CONVERSATION_KEY)
_UPDATE_CONVERSATION = update(_CONVERSATIONS).where(*_CONVERSATION_KEY)
_CLAIM_REFLECTION = (
    update(_CONVERSATIONS)
    .where(*_CONVERSATION_KEY, _CONVERSATIONS.c.ended.is_(True), _CONVERSATIONS.c.reflected.is_(False))
    .values(reflected=True)
)
_CONVERSATION_OPEN = core_select(
    _CONVERSATIONS.c.ended,
    _CONVERSATIONS.c.end_reason,
    _CONVERSATIONS.c.agent_a,
    _CONVERSATIONS.c.agent_b,
    _CONVERSATIONS.c.transcript,
    _CONVERSATIONS.c.memory_watermark,
    _CONVERSATIONS.c.standing,
).where(*_CONVERSATION_KEY)


@dataclass
class ConversationState:
    """What a turn's commit knows of its conversation (the reflection jobs read it)."""

    session_id: str
    agent_a: str
    agent_b: str
    ended: bool


def _new_turn(world_id: str, req: TurnRequest, reply: dict[str, Any], now: datetime) -> Turn:
    return build(
        Turn,
        {
            "world_id": world_id,
            "session_id": req.session_id,
            "turn_index": reply["turn_index"],
            "speaker_id": req.agent_id,
            "target_id": req.target_id,
            "dialogue": reply["dialogue"],
            "emotion": reply["emotion"],
            "is_conversation_end": reply["is_conversation_end"],
            "end_reason": reply["end_reason"],
            "fallback": reply["fallback"],
            "reply": reply,
            "day": req.day,
            "time_of_day": req.time_of_day,
            "created_at": now,
        },
    )


def _upsert_conversation(
    conn: Connection,
    world_id: str,
    req: TurnRequest,
    reply: dict[str, Any],
    said: Said,
    now: datetime,
) -> ConversationState:
    """Create the conversation on its first turn, or bring it up to this turn (transcript, count, end, the
    speaker's standing memories)."""
    line, language, watermark = said.line, said.language, said.watermark
    own = {req.agent_id: said.standing} if said.standing is not None else {}
    key = {"w": world_id, "s": req.session_id}
    found = conn.execute(_CONVERSATION_STATE, key).first()
    lines = [*req.history, line]
    ends = bool(reply["is_conversation_end"])
    if found is None:
        # A concurrent first turn inserting the same key raises IntegrityError: the caller tries again.
        conv = build(
            Conversation,
            {
                "world_id": world_id,
                "session_id": req.session_id,
                "agent_a": req.agent_id,
                "agent_b": req.target_id,
                "location_name": req.location_name,
                "start_day": req.day,
                "start_time_of_day": req.time_of_day,
                "end_day": req.day if ends else None,
                "end_time_of_day": req.time_of_day if ends else None,
                "ended": ends,
                "end_reason": reply["end_reason"] if ends else None,
                "turn_count": len(lines),
                "language": language,
                "transcript": lines,
                "memory_watermark": watermark,
                "standing": own,
                "created_at": now,
                "updated_at": now,
            },
        )
        conn.execute(_INSERT_CONVERSATION, values_of(conv))
        return ConversationState(req.session_id, req.agent_id, req.target_id, ends)
    agent_a, agent_b, stored, _turn_count, ended, standing = found
    if {agent_a, agent_b} != {req.agent_id, req.target_id}:
        _check_open(req, False, None, agent_a, agent_b)  # another pair's first turn won the race: a 409
    # The stored lines stay (a later turn may have stored lines past this one's history meanwhile: a 409).
    check_not_behind(req.session_id, len(req.history), len(stored or []))
    lines = after_turn(stored or [], req.history, line)
    values: dict[str, Any] = {"turn_count": len(lines), "transcript": lines, "updated_at": now}
    if req.location_name:
        values["location_name"] = req.location_name
    if own and req.agent_id not in (standing or {}):
        values["standing"] = {**(standing or {}), **own}
    if ends and not ended:
        values.update(
            ended=True, end_reason=reply["end_reason"], end_day=req.day, end_time_of_day=req.time_of_day
        )
        ended = True
    conn.execute(_UPDATE_CONVERSATION.values(**values), key)
    return ConversationState(req.session_id, agent_a, agent_b, bool(ended))


def end_conversation(
    engine: Any, world_id: str, session_id: str, reason: str, day: int | None, time_of_day: float | None
) -> tuple[Conversation, bool]:
    """Mark a conversation ended (idempotent). Returns (conversation, already_ended)."""
    with Session(engine, expire_on_commit=False) as session:
        conv = get_conversation_row(session, world_id, session_id)
        if conv.ended:
            return conv, True
        last = session.exec(
            select(Turn)
            .where(Turn.world_id == world_id, Turn.session_id == session_id)
            .order_by(col(Turn.turn_index).desc())
        ).first()
        conv.ended, conv.end_reason = True, reason
        conv.end_day = day if day is not None else (last.day if last else conv.start_day)
        conv.end_time_of_day = (
            time_of_day if time_of_day is not None else (last.time_of_day if last else conv.start_time_of_day)
        )
        conv.updated_at = utcnow()
        session.add(conv)
        session.commit()
        return conv, False


def claim_reflection(engine: Any, world_id: str, session_id: str, jobs: list[Job] | None = None) -> bool:
    """Atomically flip `reflected`; True for exactly one caller however many times the end is reported.

    With `jobs` (a list to fill), the two reflection jobs are committed in the same transaction as the flip.
    """
    with Session(engine, expire_on_commit=False) as session:
        claimed = _claim_reflection(session.connection(), world_id, session_id)
        added = []
        if claimed and jobs is not None:
            conv = get_conversation_row(session, world_id, session_id)
            added = turn_jobs.reflection_jobs(session, world_id, conv)
        session.commit()
        if jobs is not None:
            jobs.extend(added)
        return claimed


def _claim_reflection(conn: Connection, world_id: str, session_id: str) -> bool:
    """Flip an ended conversation's `reflected` in the caller's transaction; True when this call flipped it."""
    return bool(conn.execute(_CLAIM_REFLECTION, {"w": world_id, "s": session_id}).rowcount == 1)


def get_conversation_row(session: Session, world_id: str, session_id: str) -> Conversation:
    conv = session.get(Conversation, (world_id, session_id))
    if conv is None:
        raise NotFound(
            f"no conversation {session_id!r} in world {world_id!r}", details={"field": "session_id"}
        )
    return conv


def conversation_turns(session: Session, world_id: str, session_id: str) -> list[Turn]:
    query = select(Turn).where(Turn.world_id == world_id, Turn.session_id == session_id)
    return list(session.exec(query.order_by(col(Turn.turn_index))))


def list_conversations(
    session: Session, world_id: str, agent_id: str | None, limit: int
) -> list[Conversation]:
    query = select(Conversation).where(Conversation.world_id == world_id)
    if agent_id:
        query = query.where(or_(Conversation.agent_a == agent_id, Conversation.agent_b == agent_id))
    return list(session.exec(query.order_by(col(Conversation.updated_at).desc()).limit(limit)))


def names(session: Session, world_id: str, agent_ids: set[str]) -> dict[str, str]:
    if not agent_ids:
        return {}
    rows = session.exec(select(Agent).where(Agent.world_id == world_id, col(Agent.id).in_(agent_ids)))
    return {agent.id: agent.name for agent in rows}


def load_participants(
    engine: Any, world_id: str, session_id: str, agents: AgentCache
) -> tuple[Conversation, dict[str, Agent]]:
    with Session(engine, expire_on_commit=False) as session:
        conv = get_conversation_row(session, world_id, session_id)
        return conv, agents.get_many(session, world_id, [conv.agent_a, conv.agent_b])


def observation_ids(engine: Any, world_id: str, agent_id: str, session_id: str) -> list[int]:
    """The agent's observation memories from this conversation (the reflection's evidence)."""
    # Filter on session_id alone in SQL: with world_id/agent_id in the WHERE too, SQLite (no ANALYZE stats)
    # picks the low-selectivity world_id index and scans every memory of the world.
    query = select(Memory.id, Memory.world_id, Memory.agent_id, Memory.type).where(
        Memory.session_id == session_id
    )
    with Session(engine) as session:
        found = session.exec(query.order_by(col(Memory.id))).all()
    return [
        row[0]
        for row in found
        if row[0] is not None and (row[1], row[2], row[3]) == (world_id, agent_id, "observation")
    ]


def fallback_counts(session: Session, world_id: str, since: datetime) -> dict[bool, int]:
    """A world's turns since `since`, counted by whether they got a fallback line (for the LLM stats)."""
    rows = session.exec(
        select(col(Turn.fallback), func.count())
        .where(Turn.world_id == world_id, col(Turn.created_at) >= since)
        .group_by(col(Turn.fallback))
    ).all()
    return {bool(fallback): int(n) for fallback, n in rows}
