"""Agent rows kept between requests, checked against the database on every read.

A turn reads both agents; every stored memory, observation job and reflection reads its agent too. Loading an
`Agent` through the ORM (JSON columns, datetimes, SQLModel's validation) costs far more than asking for its
`updated_at`: so a read asks only for the ids' `updated_at` (one narrow Core query) and loads in full only the
rows whose stamp differs from the kept one. Every write to an agent sets `updated_at` (world/service.py), so a
change made by any request, CLI or other process is seen on the next read; nothing has to invalidate.

The kept objects are detached and shared between threads: callers read them and never change them (a write
loads its own row in its own session, as world/service.py does).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam
from sqlalchemy import select as core_select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from backend.world.models import Agent

#: Agents kept at most (all of them at once is fine: a world has tens). Past it the cache starts over.
MAX_KEPT = 10_000

_TABLE = Agent.__table__  # type: ignore[attr-defined]
_STAMPS = core_select(_TABLE.c.id, _TABLE.c.updated_at).where(
    _TABLE.c.world_id == bindparam("world_id"), _TABLE.c.id.in_(bindparam("ids", expanding=True))
)
_ROWS = select(Agent).where(
    col(Agent.world_id) == bindparam("world_id"), col(Agent.id).in_(bindparam("ids", expanding=True))
)


class AgentCache:
    """Agents by (world, id), each as of its `updated_at`. Thread-safe; one per app (`app.state.agents`)."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str], Agent] = {}
        self._lock = threading.Lock()
        self.loads = 0  # rows loaded in full (a miss or a changed agent), for tests and the curious

    def get_many(self, session: Session, world_id: str, ids: Sequence[str]) -> dict[str, Agent]:
        """The agents with these ids that exist, read in `session`. Missing ids are left out."""
        if not ids:
            return {}
        params: dict[str, Any] = {"world_id": world_id, "ids": list(dict.fromkeys(ids))}
        stamps = session.connection().execute(_STAMPS, params).all()
        found: dict[str, Agent] = {}
        stale: list[str] = []
        with self._lock:
            for agent_id, updated_at in stamps:
                kept = self._kept.get((world_id, agent_id))
                if kept is not None and kept.updated_at == updated_at:
                    found[agent_id] = kept
                else:
                    stale.append(agent_id)
        if stale:
            loaded = list(session.exec(_ROWS, params={"world_id": world_id, "ids": stale}))
            for agent in loaded:
                session.expunge(agent)  # a later commit of `session` must not expire the shared objects
            with self._lock:
                if len(self._kept) + len(loaded) > MAX_KEPT:
                    self._kept.clear()
                for agent in loaded:
                    self._kept[(world_id, agent.id)] = agent
                    found[agent.id] = agent
            self.loads += len(loaded)
        return found

    def read(self, engine: Engine, world_id: str, ids: Sequence[str]) -> dict[str, Agent]:
        """`get_many` in a session of its own."""
        with Session(engine, expire_on_commit=False) as session:
            return self.get_many(session, world_id, ids)

    def read_one(self, engine: Engine, world_id: str, agent_id: str) -> Agent | None:
        return self.read(engine, world_id, [agent_id]).get(agent_id)
