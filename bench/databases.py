"""Fresh, empty databases for benches and tests: a SQLite file, or a new database on a PostgreSQL server whose
role may create databases (dropped afterwards, its connections ended)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def fresh_postgres(server_url: str, prefix: str = "machi_test") -> Iterator[str]:
    """The URL of a new database on the server `server_url` points at; dropped when the block ends."""
    from sqlalchemy import create_engine, make_url, text

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def fresh_database(kind: str, folder: Path, postgres: str | None = None) -> Iterator[str]:
    """A new empty database's URL: `kind` "sqlite" (a file in `folder`) or "postgresql" (on `postgres`)."""
    if kind == "sqlite":
        yield f"sqlite:///{folder / f'machi-{uuid.uuid4().hex[:8]}.db'}"
        return
    if not postgres:
        raise ValueError("a PostgreSQL database needs the URL of a server whose role may create databases")
    with fresh_postgres(postgres) as url:
        yield url
