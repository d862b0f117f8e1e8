"""All SQL of the conversation concept: the `turn` and `conversation` tables.

Reading what a turn needs, committing a turn atomically (with its job rows), ending a conversation, claiming
its reflection, and the reads of the conversation API. Synchronous functions taking an engine or a session;
the service runs them in a worker thread. Core statements on the hot path (every turn runs them), written
against the models' own tables.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, String, bindparam, cast, func, insert, update
from sqlalchemy import select as core_select
from sqlalchemy.engine import RowMapping
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, or_, select

from backend.conversation import jobs as turn_jobs
from backend.conversation.models import Conversation, Turn
from backend.conversation.schemas import MAX_PARTICIPANTS, TurnRequest
from backend.conversation.transcript import after_turn, check_not_behind
from backend.errors import Conflict, NotFound
from backend.gametime import utcnow
from backend.intention import repo as intention_repo
from backend.intention.models import Told
from backend.jobs import repo as job_repo
from backend.jobs.models import Job

_TURNS = Turn.__table__  # type: ignore[attr-defined]
_CONVERSATIONS = Conversation.__table__  # type: ignore[attr-defined]
# Built once (every turn runs them): the statements, not only their compiled SQL, are reused.
_STORED_TURN = core_select(_TURNS.c.reply, _TURNS.c.speaker_id, _TURNS.c.target_id).where(
    _TURNS.c.world_id == bindparam("world_id"),
    _TURNS.c.session_id == bindparam("session_id"),
    _TURNS.c.turn_index == bindparam("turn_index"),
)
_INSERT_TURN = insert(_TURNS)
_INSERT_CONVERSATION = insert(_CONVERSATIONS)
_CONVERSATION_KEY = (
    _CONVERSATIONS.c.world_id == bindparam("w"),
    _CONVERSATIONS.c.session_id == bindparam("s"),
)
# What a turn reads of its conversation, before asking the model and in its commit (not the whole row: the
# dates and the judge's verdict are not needed, and parsing them costs every turn).
_CONVERSATION = core_select(
    *(
        _CONVERSATIONS.c[name]
        for name in (
            "agent_a",
            "agent_b",
            "participants",
            "left",
            "ended",
            "end_reason",
            "transcript",
            "memory_watermark",
            "standing",
        )
    )
).where(*_CONVERSATION_KEY)
_UPDATE_CONVERSATION = update(_CONVERSATIONS).where(*_CONVERSATION_KEY)
_CLAIM_REFLECTION = (
    update(_CONVERSATIONS)
    .where(*_CONVERSATION_KEY, _CONVERSATIONS.c.ended.is_(True), _CONVERSATIONS.c.reflected.is_(False))
    .values(reflected=True)
)


@dataclass
class StoredTurn:
    """What storage knows of a requested turn before the model is asked."""

    #: The reply stored for this turn (a retry), else None.
    reply: dict[str, Any] | None = None
    #: The conversation's stored transcript (empty for a first turn): the history is checked against it.
    transcript: list[str] = field(default_factory=list)
    #: The conversation's memory watermark (None for a first turn, or a conversation stored before it).
    watermark: int | None = None
    #: The speaker's standing memory ids for this conversation, once it has spoken in it.
    standing: list[int] | None = None
    #: The conversation's participants in the order they joined (the request's for a first turn, joiners
    #: added), and those who left it.
    members: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)


@dataclass
class Said:
    """What a turn's commit stores besides the reply: its transcript line and language, the memory watermark
    of a first turn, and the speaker's standing memory ids (kept from its first turn on)."""

    line: str
    language: str
    watermark: int | None = None
    standing: list[int] | None = None
    #: What moderation held back in the turn (the turn row's `moderation`), None when nothing.
    moderation: dict[str, Any] | None = None
    #: The reply's actions dropped for naming what the world lacks (the turn row's `dropped_actions`).
    dropped_actions: list[dict[str, Any]] | None = None
    #: Whether the line told the item it was to tell, and the slots it left out (the turn row's `telling`).
    telling: dict[str, Any] | None = None


@dataclass
class Committed:
    """A turn's commit: the reply as stored, whether this call stored it (False: an identical request stored
    it first), and the job rows it added (the observation, and the reflections of a turn that ended it)."""

    reply: dict[str, Any]
    created: bool
    jobs: list[Job] = field(default_factory=list)


def read_turn(session: Session, world_id: str, req: TurnRequest) -> StoredTurn:
    """The stored reply of this turn (a retry), else the conversation's transcript, participants and kept
    memories.

    Raises:
        Conflict: the conversation has ended, the speaker left it, the history stops short of its
            transcript (checked first when the turn at this index is its two's other one: the partner's line
            not appended), or this turn index belongs to another pair.
    """
    conn = session.connection()
    turn_index = len(req.history)
    stored = conn.execute(
        _STORED_TURN, {"world_id": world_id, "session_id": req.session_id, "turn_index": turn_index}
    ).first()
    if stored is not None and (stored.speaker_id, stored.target_id) == (req.agent_id, req.target_id):
        return StoredTurn(reply=stored.reply)
    conv = conn.execute(_CONVERSATION, {"w": world_id, "s": req.session_id}).mappings().first()
    if stored is not None:  # another pair's turn at this index
        _check_pair_in(conv, req, turn_index, stored.speaker_id, stored.target_id)
    if conv is None:
        return StoredTurn(members=req.members())
    members, left = members_of(conv), list(conv["left"] or [])
    _check_open(req, conv["ended"], conv["end_reason"], members, left)
    lines = list(conv["transcript"] or [])
    check_not_behind(req.session_id, turn_index, len(lines))
    standing = (conv["standing"] or {}).get(req.agent_id)
    return StoredTurn(None, lines, conv["memory_watermark"], standing, joined(members, req), left)


def members_of(conv: RowMapping) -> list[str]:
    """A stored conversation's participants, from the columns a turn reads (`participants(conv)` for a row)."""
    return _members(conv["participants"], conv["agent_a"], conv["agent_b"])


def _members(participants: list[str] | None, agent_a: str, agent_b: str) -> list[str]:
    # One stored before groups has no list: its participants are its two agents.
    return list(participants or [agent_a, agent_b])


def joined(members: Sequence[str], req: TurnRequest) -> list[str]:
    """The participants once this request's joiners (in its `participants`, not yet in the conversation)
    are added, in the order they joined."""
    return [*members, *(member for member in req.members() if member not in members)]


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


def _check_pair_in(
    conv: RowMapping | None, req: TurnRequest, turn_index: int, spoken_by: str, spoken_to: str
) -> None:
    """Another pair's turn at this index: when the request's two are in the conversation, their history is
    most likely behind it (the partner's line not appended), which is the 409 to name; else `check_pair`'s."""
    if conv is not None and {req.agent_id, req.target_id} <= set(members_of(conv)):
        check_not_behind(req.session_id, turn_index, len(conv["transcript"] or []))
    check_pair(req, turn_index, spoken_by, spoken_to)


def _check_open(
    req: TurnRequest, ended: bool, end_reason: str | None, members: Sequence[str], left: Sequence[str]
) -> None:
    """The conversation is open to this request: not ended, the speaker and target among its participants
    (or joining it through the request's `participants`, up to MAX_PARTICIPANTS), the speaker still in it."""
    if ended:
        raise Conflict(
            f"conversation {req.session_id!r} has ended ({end_reason}); start a new session_id",
            details={"field": "session_id", "end_reason": end_reason},
        )
    everyone = joined(members, req) if req.participants else list(members)
    outside = [who for who in (req.agent_id, req.target_id) if who not in everyone]
    if outside:
        raise Conflict(
            f"session {req.session_id!r} is a conversation of {', '.join(map(repr, members))}; "
            f"{', '.join(map(repr, outside))} is not in it (list newcomers in `participants` to join them, "
            "or start another session_id)",
            details={"field": "session_id", "participants": list(members)},
        )
    if len(everyone) > MAX_PARTICIPANTS:
        raise Conflict(
            f"session {req.session_id!r} would have {len(everyone)} participants; at most {MAX_PARTICIPANTS}",
            details={"field": "participants", "participants": list(members)},
        )
    if req.agent_id in left:
        raise Conflict(
            f"{req.agent_id!r} left conversation {req.session_id!r} (said goodbye); it cannot speak in it again",
            details={"field": "agent_id", "left": list(left)},
        )


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
    """The reply stored for this turn (the read `read_turn` makes for a retry), or None.

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
    jobs: Sequence[Job] = (),
    told: Told | None = None,
) -> Committed:
    """Store the turn and update its conversation in one transaction.

    `said`: the transcript line and what the conversation keeps of the turn's memories (`Said`).
    `jobs`: the turn's job rows (its observation job, conversation/jobs.py), committed in the same
    transaction, merged into the session's pending observation job when there is one; a turn that ends the
    conversation also commits its two reflection jobs (it then counts as `reflected`). A turn that got a reply
    therefore always gets its memories, even after a crash.
    `told`: the line told the listener something (intention/telling.py); recorded with the turn, once
    (intention/repo.py).

    Core statements on the session's connection: every turn runs this, and the ORM's unit of work and
    object construction cost more than the two rows.

    Raises:
        Conflict: another pair stored this turn or this session first (a race `read_turn` could not see).
    """
    for _attempt in range(2):
        try:
            with Session(engine) as session:
                added = _store_turn(session, world_id, req, reply, said, jobs, told)
                session.commit()
                return Committed(reply, True, added)
        except IntegrityError:
            existing = stored_reply(engine, world_id, req, reply["turn_index"])
            if existing is not None:
                return Committed(existing, False)
            # The conversation row raced with another first turn; its row exists now, so try again.
    raise Conflict(f"could not store turn {reply['turn_index']} of {req.session_id!r}; retry")


def _store_turn(
    session: Session,
    world_id: str,
    req: TurnRequest,
    reply: dict[str, Any],
    said: Said,
    jobs: Sequence[Job],
    told: Told | None,
) -> list[Job]:
    conn = session.connection()
    now = utcnow()
    # The unique (world, session, turn_index) constraint fires here for a retry.
    trace = {"moderation": said.moderation, "dropped_actions": said.dropped_actions, "telling": said.telling}
    conn.execute(_INSERT_TURN, {**_turn_values(world_id, req, reply, now), **trace})
    members, ended = _upsert_conversation(conn, world_id, req, reply, said, now)
    if told is not None:
        intention_repo.record_told(session, told)
    added = job_repo.add(session, jobs, merge=turn_jobs.merge_lines) if jobs else []
    if ended and _claim_reflection(conn, world_id, req.session_id):
        added += job_repo.add(session, turn_jobs.reflection_jobs(world_id, req.session_id, members))
    return added


def _turn_values(world_id: str, req: TurnRequest, reply: dict[str, Any], now: datetime) -> dict[str, Any]:
    return {
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
    }


def _upsert_conversation(
    conn: Connection, world_id: str, req: TurnRequest, reply: dict[str, Any], said: Said, now: datetime
) -> tuple[list[str], bool]:
    """Create the conversation on its first turn, or bring it up to this turn (transcript, count, joiners,
    who left, end, the speaker's standing memories). Returns its participants and whether it has ended."""
    key = {"w": world_id, "s": req.session_id}
    found = conn.execute(_CONVERSATION, key).mappings().first()
    ends = bool(reply["is_conversation_end"])
    if found is None:
        # A concurrent first turn inserting the same key raises IntegrityError: the caller tries again.
        conn.execute(_INSERT_CONVERSATION, _first_turn_values(world_id, req, reply, said, now))
        return req.members(), ends
    members, left, ended = members_of(found), list(found["left"] or []), bool(found["ended"])
    # Another first turn may have won the race, or someone left meanwhile: a 409 as read_turn gives.
    _check_open(req, False, None, members, left)
    values = _turn_update(found, req, said, now)
    everyone = joined(members, req)
    if everyone != members or (found["participants"] is None and req.participants):
        values["participants"] = everyone
    if reply.get("left"):
        values["left"] = [*left, *(who for who in reply["left"] if who not in left)]
    if ends and not ended:
        values.update(
            ended=True, end_reason=reply["end_reason"], end_day=req.day, end_time_of_day=req.time_of_day
        )
        ended = True
    conn.execute(_UPDATE_CONVERSATION.values(**values), key)
    return everyone, ended


def _turn_update(found: RowMapping, req: TurnRequest, said: Said, now: datetime) -> dict[str, Any]:
    """A later turn's changes to its conversation row (its end aside)."""
    stored = found["transcript"] or []
    # The stored lines stay (a later turn may have stored lines past this one's history meanwhile: a 409).
    check_not_behind(req.session_id, len(req.history), len(stored))
    lines = after_turn(stored, req.history, said.line)
    values: dict[str, Any] = {"turn_count": len(lines), "transcript": lines, "updated_at": now}
    if req.location_name:
        values["location_name"] = req.location_name
    standing = found["standing"] or {}
    if said.standing is not None and req.agent_id not in standing:
        values["standing"] = {**standing, req.agent_id: said.standing}
    return values


def _first_turn_values(
    world_id: str, req: TurnRequest, reply: dict[str, Any], said: Said, now: datetime
) -> dict[str, Any]:
    lines = [*req.history, said.line]
    ends = bool(reply["is_conversation_end"])
    return {  # the other columns take their table defaults (not reflected, no judge's verdict)
        "world_id": world_id,
        "session_id": req.session_id,
        "agent_a": req.agent_id,
        "agent_b": req.target_id,
        "participants": req.members(),
        "left": list(reply.get("left") or []),
        "location_name": req.location_name,
        "start_day": req.day,
        "start_time_of_day": req.time_of_day,
        "end_day": req.day if ends else None,
        "end_time_of_day": req.time_of_day if ends else None,
        "ended": ends,
        "end_reason": reply["end_reason"] if ends else None,
        "turn_count": len(lines),
        "language": said.language,
        "transcript": lines,
        "memory_watermark": said.watermark,
        "standing": {req.agent_id: said.standing} if said.standing is not None else {},
        "created_at": now,
        "updated_at": now,
    }


def end_conversation(
    engine: Any, world_id: str, session_id: str, reason: str, day: int | None, time_of_day: float | None
) -> tuple[Conversation, bool]:
    """Mark a conversation ended (idempotent). Returns (conversation, already_ended)."""
    with Session(engine, expire_on_commit=False) as session:
        conv = get_conversation(session, world_id, session_id)
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


def claim_reflection(engine: Any, world_id: str, session_id: str) -> list[Job]:
    """Atomically flip `reflected` and commit the two reflection jobs with it. Returns the jobs added: none
    but for exactly one caller however many times the end is reported."""
    with Session(engine, expire_on_commit=False) as session:
        added: list[Job] = []
        if _claim_reflection(session.connection(), world_id, session_id):
            conv = get_conversation(session, world_id, session_id)
            rows = turn_jobs.reflection_jobs(world_id, session_id, participants(conv))
            added = job_repo.add(session, rows)
        session.commit()
        return added


def _claim_reflection(conn: Connection, world_id: str, session_id: str) -> bool:
    """Flip an ended conversation's `reflected` in the caller's transaction; True when this call flipped it."""
    return bool(conn.execute(_CLAIM_REFLECTION, {"w": world_id, "s": session_id}).rowcount == 1)


def get_conversation(session: Session, world_id: str, session_id: str) -> Conversation:
    """Raises NotFound when the world has no such conversation."""
    conv = session.get(Conversation, (world_id, session_id))
    if conv is None:
        raise NotFound(
            f"no conversation {session_id!r} in world {world_id!r}", details={"field": "session_id"}
        )
    return conv


def participants(conv: Conversation) -> list[str]:
    """A conversation's participants in the order they joined (one stored before groups: its two)."""
    return _members(conv.participants, conv.agent_a, conv.agent_b)


def read_conversation(engine: Any, world_id: str, session_id: str) -> Conversation:
    """`get_conversation` in a session of its own."""
    with Session(engine, expire_on_commit=False) as session:
        return get_conversation(session, world_id, session_id)


def conversation_turns(session: Session, world_id: str, session_id: str) -> list[Turn]:
    query = select(Turn).where(Turn.world_id == world_id, Turn.session_id == session_id)
    return list(session.exec(query.order_by(col(Turn.turn_index))))


def list_conversations(
    session: Session, world_id: str, agent_id: str | None, limit: int
) -> list[Conversation]:
    query = select(Conversation).where(Conversation.world_id == world_id)
    if agent_id:
        # A group's third to sixth participants are only in the JSON list: matched as its quoted item ('_'
        # is an id character and a LIKE wildcard, so it is escaped).
        quoted = "%" + json.dumps(agent_id).replace("_", "\\_") + "%"
        query = query.where(
            or_(
                Conversation.agent_a == agent_id,
                Conversation.agent_b == agent_id,
                cast(col(Conversation.participants), String).like(quoted, escape="\\"),
            )
        )
    return list(session.exec(query.order_by(col(Conversation.updated_at).desc()).limit(limit)))


def read_session(engine: Any) -> Session:
    """A session for the reads a turn makes before the model is asked (one worker-thread hop for all of
    them, its own and its collaborators': agents, person memory, emotion, intentions, the plan item)."""
    return Session(engine, expire_on_commit=False)


def fallback_counts(session: Session, world_id: str, since: datetime) -> dict[bool, int]:
    """A world's turns since `since`, counted by whether they got a fallback line (for the LLM stats)."""
    rows = session.exec(
        select(col(Turn.fallback), func.count())
        .where(Turn.world_id == world_id, col(Turn.created_at) >= since)
        .group_by(col(Turn.fallback))
    ).all()
    return {bool(fallback): int(n) for fallback, n in rows}
