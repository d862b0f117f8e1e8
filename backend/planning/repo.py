"""All SQL for the `plan` table: one plan per agent and day."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, delete
from sqlalchemy import select as core_select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from backend.planning.models import Plan

_PLANS = Plan.__table__  # type: ignore[attr-defined]
#: A day's items, read on every turn (the speaker's activity now): the statement is built once.
_ITEMS = core_select(_PLANS.c["items"]).where(  # c["items"]: c.items is the collection's own method
    _PLANS.c.world_id == bindparam("world_id"),
    _PLANS.c.agent_id == bindparam("agent_id"),
    _PLANS.c.day == bindparam("day"),
)


def session(engine: Engine) -> Session:
    """A session of its own for plan work off the request (objects stay usable after it closes)."""
    return Session(engine, expire_on_commit=False)


def stored_plan(session: Session, world_id: str, agent_id: str, day: int) -> Plan | None:
    query = select(Plan).where(Plan.world_id == world_id, Plan.agent_id == agent_id, Plan.day == day)
    return session.exec(query).first()


def items(conn: Connection, world_id: str, agent_id: str, day: int) -> list[dict[str, Any]] | None:
    """The day's plan items (None without a plan): one narrow Core read on the caller's connection."""
    found = conn.execute(_ITEMS, {"world_id": world_id, "agent_id": agent_id, "day": day}).scalar()
    return list(found) if found is not None else None


def store(session: Session, plan: Plan) -> bool:
    """Commit the plan (new or changed) and refresh it. False, rolled back, when another request stored the
    same day's plan meanwhile (the unique key on agent and day)."""
    session.add(plan)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        return False
    session.refresh(plan)
    return True


def forget_agent(session: Session, world_id: str, agent_id: str) -> int:
    """Delete the agent's plans (not committed). Returns how many went."""
    query = delete(Plan).where(col(Plan.world_id) == world_id, col(Plan.agent_id) == agent_id)
    return int(session.execute(query).rowcount)  # type: ignore[attr-defined]
