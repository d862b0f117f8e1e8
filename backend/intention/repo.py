"""All SQL of the intention concept: the `intention` and `told` tables, and the one read of another concept's
rows it needs (the listener's rating of the news it heard, in memory's table). Plain functions on a session."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from backend.intention.models import Intention, Told
from backend.memory.models import NEWS_TAG, Memory


def session(engine: Engine) -> Session:
    """A session of its own (objects stay usable after it closes)."""
    return Session(engine, expire_on_commit=False)


def save(session: Session, row: Intention) -> None:
    session.add(row)
    session.commit()


def read(session: Session, world_id: str, agent_id: str) -> Intention | None:
    return session.get(Intention, (world_id, agent_id))


def heard_rows(session: Session, world_id: str, listener_id: str) -> list[Told]:
    return list(session.exec(select(Told).where(Told.world_id == world_id, Told.listener_id == listener_id)))


def told_rows(session: Session, world_id: str, agent_id: str) -> list[Told]:
    """Every telling the agent took part in (as teller or listener), oldest first."""
    query = (
        select(Told)
        .where(Told.world_id == world_id, (Told.teller_id == agent_id) | (Told.listener_id == agent_id))
        .order_by(col(Told.day), col(Told.time_of_day), col(Told.created_at))
    )
    return list(session.exec(query))


def forget_agent(session: Session, world_id: str, agent_id: str) -> None:
    """A deleted agent's intentions and every telling it was part of go with it."""
    row = read(session, world_id, agent_id)
    if row is not None:
        session.delete(row)
    told = select(Told).where(
        Told.world_id == world_id, (Told.teller_id == agent_id) | (Told.listener_id == agent_id)
    )
    for record in session.exec(told):
        session.delete(record)
    session.commit()


def record_told(session: Session, told: Told) -> None:
    """What was told to whom, once per (teller, listener, item), in the caller's transaction (a turn's
    commit): a second telling keeps the first record."""
    key = (told.world_id, told.teller_id, told.listener_id, told.item_key)
    if session.get(Told, key) is None:
        session.add(Told.model_validate(told.model_dump()))
        session.flush()


def known_keys(session: Session, world_id: str, agent_id: str) -> set[str]:
    """Keys of everything the agent knows: what it was told (by anyone) and what it told others."""
    query = select(Told.item_key).where(
        Told.world_id == world_id, (Told.listener_id == agent_id) | (Told.teller_id == agent_id)
    )
    return set(session.exec(query))


def news_importance(session: Session, world_id: str, agent_id: str, sessions: set[str]) -> dict[str, int]:
    """Per conversation, the importance the agent's own memory of the news heard there was rated."""
    if not sessions:
        return {}
    query = select(Memory.session_id, Memory.importance, Memory.tags).where(
        Memory.world_id == world_id,
        Memory.agent_id == agent_id,
        Memory.type == "observation",
        col(Memory.session_id).in_(sorted(sessions)),
    )
    found: dict[str, int] = {}
    for session_id, importance, tags in session.exec(query):
        if NEWS_TAG in (tags or []) and session_id:
            found[session_id] = max(found.get(session_id, 0), int(importance))
    return found
