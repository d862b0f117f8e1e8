"""Single-flight across processes: named leases in the database, renewed while their work runs.

Several Machi processes share one database (docs/scaling.md). Work that must run once at a time for a
key, whichever process is asked (a day's plan, a council, a world import, loading the demo world at
start-up), takes the key's lease first:

    async with flights.hold("plan:default:aoi:3"):   # waits while another process holds it
        ...                                         # re-read what the other process may have stored

A lease is one row of `machi_flight` (storage/models.py): taken with one `INSERT ... ON CONFLICT DO UPDATE
... WHERE until < now` (SQLite >= 3.24 and PostgreSQL alike), so two processes asking at once get it one
after the other, and a lease whose owner died (kill -9, a lost machine) is free once its `until` passes: at
most `lease_s` later. While held, one heartbeat task per process renews every lease it holds each
`lease_s / 3`. Within a process the in-memory single-flight of each concept stays (an asyncio task per
key); the lease only orders processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta

from sqlalchemy import bindparam, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine

from backend.errors import Conflict
from backend.gametime import utcnow
from backend.storage.models import Flight

log = logging.getLogger(__name__)

_FLIGHT = Flight.__table__  # type: ignore[attr-defined]
#: How often a process waiting for a lease asks again (seconds).
WAIT_STEP_S = 0.1


def process_id() -> str:
    """This process's name in leases and job rows: host, pid and a random part (pids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Flights:
    """The leases one process holds. Built once per app (`app.state.flights`)."""

    def __init__(self, engine: Engine, *, owner: str | None = None, lease_s: float = 30.0) -> None:
        self.engine = engine
        self.owner = owner or process_id()
        self.lease_s = lease_s
        self._held: dict[str, int] = {}  # name -> holds in this process (nested holds share the lease)
        self._beat: asyncio.Task[None] | None = None

    def try_take(self, name: str) -> bool:
        """Take the lease if it is free or expired (or already ours). Blocking: run it in a thread."""
        now = utcnow()
        values = {"name": name, "owner": self.owner, "until": now + timedelta(seconds=self.lease_s)}
        dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        statement = dialect.insert(_FLIGHT).values(**values)
        statement = statement.on_conflict_do_update(
            index_elements=[_FLIGHT.c.name],
            set_={"owner": statement.excluded.owner, "until": statement.excluded.until},
            where=(_FLIGHT.c.until < now) | (_FLIGHT.c.owner == self.owner),
        ).returning(_FLIGHT.c.name)  # a row back: inserted or taken over (rowcount is -1 on some drivers)
        with self.engine.begin() as conn:
            return conn.execute(statement).first() is not None

    def release(self, name: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(_FLIGHT).where(_FLIGHT.c.name == name, _FLIGHT.c.owner == self.owner))

    def live(self, names: Sequence[str]) -> set[str]:
        """Which of these names some process holds now (an unexpired lease)."""
        if not names:
            return set()
        query = select(_FLIGHT.c.name).where(_FLIGHT.c.name.in_(list(names)), _FLIGHT.c.until >= utcnow())
        with self.engine.connect() as conn:
            return {str(name) for (name,) in conn.execute(query)}

    @contextlib.asynccontextmanager
    async def hold(self, name: str, *, wait_s: float | None = None) -> AsyncIterator[None]:
        """Hold the lease `name` for the block, waiting while another process holds it.

        Raises:
            Conflict: `wait_s` passed and another process still holds it.
        """
        if self._held.get(name):
            self._held[name] += 1
        else:
            await self._wait_for(name, wait_s)
            self._held[name] = 1
            self._start_heartbeat()
        try:
            yield
        finally:
            self._held[name] -= 1
            if not self._held[name]:
                del self._held[name]
                await asyncio.to_thread(self.release, name)

    async def _wait_for(self, name: str, wait_s: float | None) -> None:
        loop = asyncio.get_running_loop()
        deadline = None if wait_s is None else loop.time() + wait_s
        while not await asyncio.to_thread(self.try_take, name):
            if deadline is not None and loop.time() >= deadline:
                raise Conflict(
                    f"{name} is under way in another Machi process: try again when it has finished",
                    details={"flight": name},
                )
            await asyncio.sleep(WAIT_STEP_S)

    def _start_heartbeat(self) -> None:
        if self._beat is None or self._beat.done():
            self._beat = asyncio.get_running_loop().create_task(self._heartbeat(), name="flights-heartbeat")

    async def _heartbeat(self) -> None:
        renew = (
            update(_FLIGHT)
            .where(_FLIGHT.c.owner == self.owner, _FLIGHT.c.name.in_(bindparam("names", expanding=True)))
            .values(until=bindparam("until"))
        )
        while self._held:
            await asyncio.sleep(self.lease_s / 3)
            names = list(self._held)
            if not names:
                break
            params = {"names": names, "until": utcnow() + timedelta(seconds=self.lease_s)}
            try:
                await asyncio.to_thread(self._execute, renew, params)
            except Exception:  # noqa: BLE001 - a database hiccup: the next beat tries again
                log.exception("renewing %d lease(s) failed", len(names))

    def _execute(self, statement: object, params: dict[str, object]) -> None:
        with self.engine.begin() as conn:
            conn.execute(statement, params)  # type: ignore[call-overload]

    async def close(self) -> None:
        """Stop renewing (the app's shutdown); leases still held expire on their own."""
        if self._beat is not None:
            self._beat.cancel()
            await asyncio.gather(self._beat, return_exceptions=True)
