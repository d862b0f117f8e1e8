"""Agent rows kept between requests, checked against the database on every read.

A turn reads both agents; every stored memory, observation job and reflection reads its agent too. Loading an
`Agent` through the ORM (JSON columns, datetimes, SQLModel's validation) costs far more than asking for its
`updated_at`: so a read asks only for the ids' `updated_at` (one narrow Core query, in repo.py) and loads in full only the
rows whose stamp differs from the kept one. Every write to an agent sets `updated_at` (world/service.py), so a
change made by any request, CLI or other process is seen on the next read; nothing has to invalidate.

The kept objects are detached and shared between threads: callers read them and never change them (a write
loads its own row in its own session, as world/service.py does).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from backend.world import repo
from backend.world.models import Agent

if TYPE_CHECKING:
    from backend.storage.db import Engine, Session

#: Agents kept at most (all of them at once is fine: a world has tens). Past it the cache starts over.
MAX_KEPT = 10_000


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
        stamps = repo.agent_stamps(session, world_id, list(dict.fromkeys(ids)))
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
            loaded = repo.load_agents(session, world_id, stale)
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
        with repo.session(engine) as session:
            return self.get_many(session, world_id, ids)

    def read_one(self, engine: Engine, world_id: str, agent_id: str) -> Agent | None:
        return self.read(engine, world_id, [agent_id]).get(agent_id)
