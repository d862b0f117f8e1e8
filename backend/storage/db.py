"""Engine, sessions and start-up schema management (SQLite by default, PostgreSQL when scaled)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, SQLModel, create_engine

from backend.errors import MissingDependency
from backend.storage.migrate import migrate

#: The pip extra that brings the driver of each database that is not built into Python.
DRIVER_EXTRAS: dict[str, str] = {"postgresql": "postgres"}

#: Modules whose tables make up the schema. A new concept adds its models module here.
MODEL_MODULES = (
    "backend.world.models",
    "backend.player.models",
    "backend.memory.models",
    "backend.conversation.models",
    "backend.planning.models",
    "backend.emotion.models",
    "backend.council.models",
    "backend.llm.models",
    "backend.jobs.models",
    "backend.intention.models",
    "backend.storage.models",
)


def import_models() -> None:
    for module in MODEL_MODULES:
        importlib.import_module(module)


def check_driver(url: str) -> None:
    """Refuse, in one line naming DATABASE_URL and the extra, a database whose driver is not installed."""
    parsed = make_url(url)
    try:
        parsed.get_dialect().import_dbapi()
    except ImportError as exc:
        extra = DRIVER_EXTRAS.get(parsed.get_backend_name())
        hint = (
            f"pip install -e '.[{extra}]'" if extra else f"pip install {getattr(exc, 'name', None) or 'it'}"
        )
        raise MissingDependency(
            f"DATABASE_URL names {parsed.get_backend_name()} through {parsed.get_driver_name()!r}, "
            f"whose package is not installed: {hint}"
        ) from exc


def create_db_engine(url: str, *, echo: bool = False, pool_size: int = 5, max_overflow: int = 10) -> Engine:
    """An engine for `url`. SQLite gets WAL, foreign keys and a busy timeout; its folder is created.
    `pool_size`/`max_overflow` size a PostgreSQL pool (DATABASE_POOL_SIZE, DATABASE_MAX_OVERFLOW)."""
    parsed = make_url(url)
    kwargs: dict[str, Any] = {"echo": echo}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        # Some routes hold their session across awaits (a plan/now that waits for the model's queue, a
        # perception waiting for the agent's memory writer): under load (bench/load.py, 100 clients) the
        # default 5+10 connections ran out. A SQLite connection is a file handle; writes still serialise.
        kwargs.update(pool_size=20, max_overflow=80, pool_timeout=60)
        engine = create_engine(url, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    kwargs.update(pool_pre_ping=True, pool_size=pool_size, max_overflow=max_overflow)
    return create_engine(url, **kwargs)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # NORMAL is durable across application crashes in WAL mode (only a power loss can drop the last commit).
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def reachable(engine: Engine) -> bool:
    """Whether the database answers a trivial query (`/health` reports it; never raises)."""
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception:  # noqa: BLE001 - reported, not raised
        return False
    return True


def init_db(engine: Engine) -> list[str]:
    """Create missing tables and add missing columns; never drops data. Returns what was changed.

    Several processes may start at once on one database (`machi serve --workers N`, a worker, a second
    machine): the migration runs under a lock of the database's own (`migration_lock`), so one process
    creates the tables and the others find them.
    """
    import_models()
    with migration_lock(engine):
        SQLModel.metadata.create_all(engine)
        return migrate(engine, SQLModel.metadata)


#: The PostgreSQL advisory lock keys of the migration ("MACH", 2; the lock.py server lock is "MACH", 1).
MIGRATION_LOCK_KEYS = (0x4D414348, 2)
_MIGRATION_KEYS = {"a": MIGRATION_LOCK_KEYS[0], "b": MIGRATION_LOCK_KEYS[1]}


@contextmanager
def migration_lock(engine: Engine) -> Iterator[None]:
    """Hold the database's migration lock: a PostgreSQL advisory lock, or an OS lock on `<file>.migrate`
    beside a SQLite file (an in-memory database belongs to one process and needs none)."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:a, :b)"), _MIGRATION_KEYS)
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:a, :b)"), _MIGRATION_KEYS)
        return
    database = engine.url.database or ""
    if (
        engine.dialect.name != "sqlite"
        or not database
        or database == ":memory:"
        or database.startswith("file:")
    ):
        yield
        return
    with _file_lock(Path(database).expanduser().with_name(Path(database).name + ".migrate")):
        yield


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if sys.platform != "win32":  # pragma: no branch - Windows runs one process per database
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the file releases the lock


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session that commits on success and rolls back on error (for background work and the CLI)."""
    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
