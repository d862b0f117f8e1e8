"""All SQL of the council concept: the `councilrecord` table, and the stored conversation the judge scores.

The judge's two statements on `conversation`/`turn` (read a conversation with its turns, keep a verdict on
it) are the one place council touches another concept's table; council imports conversation's models and
conversation never imports council, so the dependency runs one way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, select

from backend.conversation.models import Conversation, Turn
from backend.council.models import CouncilRecord
from backend.gametime import utcnow
from backend.world.models import Agent

ACTIVE = ("pending", "running")


def session(engine: Engine) -> Session:
    """A session of its own (objects stay usable after it closes)."""
    return Session(engine, expire_on_commit=False)


def get(session: Session, council_id: str) -> CouncilRecord | None:
    return session.get(CouncilRecord, council_id)


def read(engine: Engine, council_id: str) -> CouncilRecord | None:
    """The council row, read in a session of its own."""
    with Session(engine, expire_on_commit=False) as session:
        return session.get(CouncilRecord, council_id)


def insert_numbered(engine: Engine, row: CouncilRecord) -> bool:
    """Store a new council with the next number of its world. False (rolled back) when another writer took
    that number first or held the write lock: the caller counts again and retries."""
    with Session(engine, expire_on_commit=False) as session:
        current = session.exec(
            select(func.max(CouncilRecord.number)).where(CouncilRecord.world_id == row.world_id)
        ).one()
        row.number = int(current or 0) + 1
        session.add(row)
        try:
            session.commit()
        except (IntegrityError, OperationalError) as exc:
            session.rollback()
            if isinstance(exc, OperationalError) and "locked" not in str(exc) and "busy" not in str(exc):
                raise
            return False
    return True


def store_values(engine: Engine, council_id: str, values: dict[str, Any]) -> None:
    """Write some columns of one council row."""
    with Session(engine) as session:
        stored = session.get(CouncilRecord, council_id)
        if stored is None:
            raise LookupError(f"council {council_id} vanished while running")
        for key, value in values.items():
            setattr(stored, key, value)
        session.add(stored)
        session.commit()


def listed(
    session: Session, world_id: str, *, status: str | None, limit: int, offset: int
) -> list[CouncilRecord]:
    """A world's councils, newest number first."""
    query = select(CouncilRecord).where(CouncilRecord.world_id == world_id)
    if status is not None:
        query = query.where(CouncilRecord.status == status)
    return list(
        session.exec(query.order_by(col(CouncilRecord.number).desc()).offset(offset).limit(limit)).all()
    )


def active_ids(engine: Engine) -> list[str]:
    """The councils left pending or running."""
    query = select(CouncilRecord.id).where(col(CouncilRecord.status).in_(ACTIVE))
    with Session(engine) as session:
        return [str(council_id) for council_id in session.exec(query)]


def council_agents(session: Session, world_id: str) -> list[Agent]:
    """The world's standing council: the agents with a council role."""
    query = select(Agent).where(Agent.world_id == world_id, col(Agent.council_role).is_not(None))
    return list(session.exec(query).all())


def agents(session: Session, world_id: str, ids: Sequence[str]) -> dict[str, Agent]:
    """The agents with these ids that exist, by id."""
    query = select(Agent).where(Agent.world_id == world_id, col(Agent.id).in_(list(ids)))
    return {agent.id: agent for agent in session.exec(query).all()}


def conversation(
    engine: Engine, world_id: str, session_id: str
) -> tuple[Conversation, list[Turn], dict[str, Agent]] | None:
    """A stored conversation with its turns (in order) and its two agents (those that still exist)."""
    with Session(engine, expire_on_commit=False) as session:
        found = session.get(Conversation, (world_id, session_id))
        if found is None:
            return None
        query = (
            select(Turn)
            .where(Turn.world_id == world_id, Turn.session_id == session_id)
            .order_by(col(Turn.turn_index))
        )
        turns = list(session.exec(query).all())
        pair = [found.agent_a, found.agent_b]
        present = agents(session, world_id, pair)
    return found, turns, {agent_id: present[agent_id] for agent_id in pair if agent_id in present}


def keep_verdict(engine: Engine, world_id: str, session_id: str, verdict: dict[str, Any]) -> None:
    """Keep the judge's verdict on a stored conversation (nothing when it went meanwhile)."""
    with Session(engine) as session:
        found = session.get(Conversation, (world_id, session_id))
        if found is None:
            return
        found.judge = verdict
        found.updated_at = utcnow()
        session.add(found)
        session.commit()
