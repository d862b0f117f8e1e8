"""All SQL for the world's tables: agents, points of interest, state events, world facts.

Functions take the caller's session (a route's, a job's) and leave the transaction to it unless they say
they commit. The agent cache's two statements are built once here: a turn runs them on every read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, func
from sqlalchemy import select as core_select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from backend.world.models import Agent, AgentStateEvent, PointOfInterest, WorldMeta, WorldStamp

_AGENTS = Agent.__table__  # type: ignore[attr-defined]
_STAMPS = core_select(_AGENTS.c.id, _AGENTS.c.updated_at).where(
    _AGENTS.c.world_id == bindparam("world_id"), _AGENTS.c.id.in_(bindparam("ids", expanding=True))
)
_ROWS = select(Agent).where(
    col(Agent.world_id) == bindparam("world_id"), col(Agent.id).in_(bindparam("ids", expanding=True))
)


def session(engine: Engine) -> Session:
    """A session of its own for a reader without one (objects stay usable after it closes)."""
    return Session(engine, expire_on_commit=False)


def agent(session: Session, world_id: str, agent_id: str) -> Agent | None:
    return session.get(Agent, (world_id, agent_id))


def poi(session: Session, world_id: str, poi_id: str) -> PointOfInterest | None:
    return session.get(PointOfInterest, (world_id, poi_id))


def agents(session: Session, world_id: str) -> list[Agent]:
    return list(session.exec(select(Agent).where(Agent.world_id == world_id).order_by(col(Agent.id))))


def pois(session: Session, world_id: str) -> list[PointOfInterest]:
    query = select(PointOfInterest).where(PointOfInterest.world_id == world_id)
    return list(session.exec(query.order_by(col(PointOfInterest.id))))


def names(session: Session, world_id: str, ids: Sequence[str]) -> dict[str, str]:
    """The names of the agents with these ids that exist, by id."""
    if not ids:
        return {}
    query = select(Agent.id, Agent.name).where(Agent.world_id == world_id, col(Agent.id).in_(list(ids)))
    return dict(session.exec(query).all())


def name_map(session: Session, world_id: str) -> dict[str, str]:
    """Every agent's name in the world, by id (who a line of news names)."""
    return dict(session.exec(select(Agent.id, Agent.name).where(Agent.world_id == world_id)).all())


def agent_names(session: Session, world_id: str) -> list[str]:
    """Every agent's name in the world (a visitor may not take one: player/names.py)."""
    return list(session.exec(select(Agent.name).where(Agent.world_id == world_id)).all())


def action_targets(
    session: Session, world_id: str
) -> tuple[list[tuple[str, str, float, float]], list[str], list[str] | None]:
    """What an action may name in the world: (id, name, x, z) of each point of interest, the agents' ids,
    and the declared gestures (None: the world declared none). Narrow reads (no persona, no description)."""
    pois = select(PointOfInterest.id, PointOfInterest.name, PointOfInterest.x, PointOfInterest.z).where(
        PointOfInterest.world_id == world_id
    )
    agent_ids = select(Agent.id).where(Agent.world_id == world_id)
    return (
        [(poi_id, name, x, z) for poi_id, name, x, z in session.exec(pois.order_by(col(PointOfInterest.id)))],
        list(session.exec(agent_ids.order_by(col(Agent.id)))),
        gestures(session, world_id),
    )


def facts_rev(session: Session, world_id: str) -> int:
    """The revision of the world's facts (0: never changed through the API, an import or a town)."""
    found = session.exec(select(WorldStamp.rev).where(WorldStamp.world_id == world_id)).first()
    return int(found or 0)


def touch_facts(session: Session, world_id: str) -> None:
    """Raise the revision of the world's facts in the caller's transaction (every process's cache of them
    reloads on its next read). One upsert: concurrent writers each raise it."""
    table = WorldStamp.__table__  # type: ignore[attr-defined]
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    statement = dialect.insert(table).values(world_id=world_id, rev=1)
    statement = statement.on_conflict_do_update(
        index_elements=[table.c.world_id], set_={"rev": table.c.rev + 1}
    )
    session.execute(statement)


def gestures(session: Session, world_id: str) -> list[str] | None:
    """The gestures the world declared, or None when it declared none."""
    query = select(WorldMeta.gestures).where(WorldMeta.world_id == world_id)
    declared = session.exec(query).first()
    return list(declared) if declared is not None else None


def has_agents(session: Session, world_id: str) -> bool:
    return session.exec(select(Agent.id).where(Agent.world_id == world_id).limit(1)).first() is not None


def meta(session: Session, world_id: str) -> WorldMeta | None:
    return session.get(WorldMeta, world_id)


def save(session: Session, *rows: Any) -> None:
    """Store the rows (agents, places, state events, world facts) and commit; each row is refreshed."""
    session.add_all(rows)
    session.commit()
    for row in rows:
        session.refresh(row)


def remove(session: Session, row: Agent | PointOfInterest) -> None:
    """Delete the row and commit."""
    session.delete(row)
    session.commit()


def agent_stamps(session: Session, world_id: str, ids: Sequence[str]) -> list[tuple[str, datetime]]:
    """(id, updated_at) of the agents with these ids that exist: one narrow Core query (see cache.py)."""
    params: dict[str, Any] = {"world_id": world_id, "ids": list(ids)}
    return [(row[0], row[1]) for row in session.connection().execute(_STAMPS, params).all()]


def load_agents(session: Session, world_id: str, ids: Sequence[str]) -> list[Agent]:
    """The agents with these ids, loaded in full and detached from `session` (shared between threads)."""
    loaded = list(session.exec(_ROWS, params={"world_id": world_id, "ids": list(ids)}))
    for row in loaded:
        session.expunge(row)  # a later commit of `session` must not expire the shared objects
    return loaded


def add_state_event(session: Session, agent: Agent, event: AgentStateEvent) -> None:
    """Store the agent's new state with its history row, in one commit."""
    session.add(agent)
    session.add(event)
    session.commit()


def prune_state_events(session: Session, world_id: str, agent_id: str, keep: int) -> None:
    """Keep the agent's newest `keep` state events (commits when it deletes)."""
    kept = session.exec(
        select(AgentStateEvent.id)
        .where(AgentStateEvent.world_id == world_id, AgentStateEvent.agent_id == agent_id)
        .order_by(col(AgentStateEvent.id).desc())
        .limit(keep)
    ).all()
    if len(kept) < keep:
        return
    session.execute(
        delete(AgentStateEvent).where(
            col(AgentStateEvent.world_id) == world_id,
            col(AgentStateEvent.agent_id) == agent_id,
            col(AgentStateEvent.id) < min(k for k in kept if k is not None),
        )
    )
    session.commit()


def state_events(session: Session, world_id: str, agent_id: str, limit: int) -> list[AgentStateEvent]:
    query = (
        select(AgentStateEvent)
        .where(AgentStateEvent.world_id == world_id, AgentStateEvent.agent_id == agent_id)
        .order_by(col(AgentStateEvent.id).desc())
        .limit(limit)
    )
    return list(session.exec(query))


def forget_state_events(session: Session, world_id: str, agent_id: str) -> int:
    """Delete the agent's state history (not committed). Returns how many rows went."""
    query = delete(AgentStateEvent).where(
        col(AgentStateEvent.world_id) == world_id, col(AgentStateEvent.agent_id) == agent_id
    )
    return int(session.execute(query).rowcount)  # type: ignore[attr-defined]


def world_census(session: Session) -> dict[str, dict[str, int]]:
    """Every world that has agents or points of interest: name -> {"agents": n, "pois": n}."""
    census: dict[str, dict[str, int]] = {}
    for table, key in ((Agent, "agents"), (PointOfInterest, "pois")):
        for world_id, count in session.exec(select(table.world_id, func.count()).group_by(table.world_id)):
            census.setdefault(world_id, {"agents": 0, "pois": 0})[key] = count
    return dict(sorted(census.items()))
