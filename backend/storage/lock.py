"""The database's process lock: servers and workers share it; commands that rewrite the database hold it alone.

Any number of Machi processes (API processes, `machi worker`s, on one machine or several) share one database:
jobs are claimed with leases (backend/jobs), caches check the database (world/cache.py, memory/cache.py) and
single-flight work takes a lease (storage/flights.py). They hold this lock *shared*. A command that replaces
what those processes read (`machi world import/reset/load`, `machi db vacuum`) holds it *exclusively*: it is
refused while any server or worker runs, and they are refused while it runs, with one line naming the
database and the holder.

SQLite: an OS file lock (`flock` shared or exclusive) on `<database>.lock` beside the file, released by the
kernel when the holder dies, even on `kill -9`; an exclusive holder records who it is there. PostgreSQL: a
session-level advisory lock (shared or exclusive) on a connection kept open for the holder's lifetime; the
holders are found in `pg_locks`. Windows has no shared file lock: there every hold is exclusive (one
process per SQLite database).

Locks belong to the process, so holds on one database within one process share the lock (a count): the
`machi serve` command takes it before starting uvicorn, and the app's lifespan takes it again.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from backend.errors import ConfigError

#: The advisory lock's two keys: "MACH" and 1 (advisory locks are per database already).
PG_LOCK_KEYS = (0x4D414348, 1)
#: Windows locks byte ranges, and a locked byte cannot be read: lock one far past the holder's note.
_WINDOWS_LOCK_OFFSET = 1 << 20


class DatabaseInUse(ConfigError):
    """Another process holds the database in a way that excludes this one."""

    code = "database_in_use"


@dataclass
class _Held:
    release: Callable[[], None]
    count: int = 1


_HELD: dict[str, _Held] = {}
_GUARD = threading.Lock()


@dataclass
class DatabaseLease:
    """A hold on the database's server lock; `release()` (or leaving the `with` block) gives it back."""

    key: str | None
    _released: bool = field(default=False, repr=False)

    def release(self) -> None:
        if self._released or self.key is None:
            return
        self._released = True
        with _GUARD:
            held = _HELD[self.key]
            held.count -= 1
            if held.count == 0:
                del _HELD[self.key]
                held.release()

    def __enter__(self) -> DatabaseLease:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def hold_database(url: str, *, role: str = "server", shared: bool = False) -> DatabaseLease:
    """Take the process lock of the database at `url` (one hold per process, counted).

    Args:
        url: the DATABASE_URL.
        role: what holds it, shown to a process that is refused ("world import" ...).
        shared: servers and workers (any number at once); otherwise this process holds it alone.

    Returns:
        The lease; an in-memory SQLite database has nothing to share and gets an empty one.

    Raises:
        DatabaseInUse: another process holds the lock; the message names the database and that process.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if not database or database == ":memory:" or database.startswith("file:"):
            return DatabaseLease(None)
        key = str(Path(database).expanduser().resolve())
        take: Callable[[], Callable[[], None]] = lambda: _lock_sqlite(Path(key), role, shared)  # noqa: E731
    else:
        key = parsed.render_as_string(hide_password=True)
        take = lambda: _lock_postgres(url, key, role, shared)  # noqa: E731
    with _GUARD:
        if key in _HELD:
            _HELD[key].count += 1
        else:
            _HELD[key] = _Held(release=take())
    return DatabaseLease(key)


def _holder_note(role: str) -> dict[str, Any]:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "role": role,
        "command": " ".join(Path(sys.argv[0]).name.split() + sys.argv[1:])[:200],
        "since": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def _describe(note: dict[str, Any]) -> str:
    who = f"pid {note.get('pid', '?')} on {note.get('host', '?')}"
    parts = [f"a Machi {note.get('role', 'server')}, {who}"]
    if note.get("command"):
        parts.append(f"`{note['command']}`")
    if note.get("since"):
        parts.append(f"since {note['since']}")
    return ", ".join(parts)


#: Who holds a shared lock (they leave no note: there may be many).
SHARED_HOLDERS = "running Machi servers or workers"


def _refusal(database: str, holder: str) -> DatabaseInUse:
    return DatabaseInUse(
        f"the database {database} is in use by {holder}: stop that first, or point DATABASE_URL at another "
        "database (servers and workers share a database; an import, reset, load or vacuum needs it alone)"
    )


def _lock_sqlite(database: Path, role: str, shared: bool) -> Callable[[], None]:
    lock_path = database.with_name(database.name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _try_lock(fd, shared)
    except OSError:
        note = _read_note(fd)
        os.close(fd)
        raise _refusal(str(database), _describe(note) if note else SHARED_HOLDERS) from None
    if not shared:  # shared holders leave the note alone (an exclusive holder's is gone with it)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(_holder_note(role)).encode(), 0)

    def release() -> None:
        if not shared:
            os.ftruncate(fd, 0)  # a file left behind names nobody
        _unlock(fd)
        os.close(fd)

    return release


def _read_note(fd: int) -> dict[str, Any] | None:
    try:
        note = json.loads(os.pread(fd, 4096, 0).decode() or "null")
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) else None


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int, shared: bool) -> None:  # noqa: ARG001 - no shared lock: one process per file
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

    def _unlock(fd: int) -> None:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int, shared: bool) -> None:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


_HOLDER = text(
    "SELECT a.pid, a.application_name, a.client_addr, a.backend_start FROM pg_locks l "
    "JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = :k1 AND l.objid = :k2 "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)


def _lock_postgres(url: str, shown: str, role: str, shared: bool) -> Callable[[], None]:
    note = _holder_note(role)
    name = f"machi {role} pid {note['pid']} on {note['host']}"[:63]
    engine = create_engine(url, poolclass=NullPool, connect_args={"application_name": name})
    connection = engine.connect()
    k1, k2 = PG_LOCK_KEYS
    take = "pg_try_advisory_lock_shared" if shared else "pg_try_advisory_lock"
    got = connection.execute(text(f"SELECT {take}(:k1, :k2)"), {"k1": k1, "k2": k2}).scalar()
    connection.commit()
    if not got:
        row = connection.execute(_HOLDER, {"k1": k1, "k2": k2}).first()
        connection.close()
        engine.dispose()
        holder = "another process"
        if row is not None:
            since = row.backend_start.strftime("%Y-%m-%d %H:%M:%S %Z") if row.backend_start else "?"
            holder = f"{row.application_name or 'a client'} (backend pid {row.pid}, from "
            holder += f"{row.client_addr or 'a local socket'}, since {since})"
        raise _refusal(shown, holder)

    def release() -> None:
        try:
            connection.close()  # the session ends, and with it the advisory lock
        finally:
            engine.dispose()

    return release
