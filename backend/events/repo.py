"""The SQL of the event outbox, `machi_event_outbox`: one row per relayed event (its JSON, see wire.py).

The table is not a model: nothing is stored in it for longer than OUTBOX_KEEP_S, no export or migration
needs it, and each relay creates it when it starts. PostgreSQL (notify.py) writes only the events too large
for a notification and reads a row by the id the notification names; SQLite (poll.py) writes every event and
reads `id > last seen`. The SQLite ids are AUTOINCREMENT, so they never go back down, even when pruning
empties the table, and one writer at a time means a row is committed before any row with a larger id.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from backend.storage.db import create_db_engine

TABLE = "machi_event_outbox"
#: Rows older than this many seconds are deleted as new ones are written (a process that far behind has
#: missed them: delivery is at most once).
OUTBOX_KEEP_S = 60
#: And at most this many rows are kept, however young (a burst cannot grow the table without bound).
OUTBOX_KEEP_ROWS = 10_000

# --- PostgreSQL (psycopg, async; %s parameters) ---
PG_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
    "id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())"
)
#: Prunes by age and count, then writes one event; returns its id. Params: keep_s, keep_rows, body.
PG_INSERT = (
    f"WITH old AS (DELETE FROM {TABLE} WHERE created_at < now() - make_interval(secs => %s) "
    f"OR id <= (SELECT max(id) FROM {TABLE}) - %s) "
    f"INSERT INTO {TABLE} (body) VALUES (%s) RETURNING id"
)
PG_READ = f"SELECT body FROM {TABLE} WHERE id = %s"
PG_NOTIFY = "SELECT pg_notify(%s, %s)"

# --- SQLite (SQLAlchemy, sync; run in the relay's own thread) ---
_SQLITE_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
    "id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL, created_at REAL NOT NULL)"
)


def open_engine(database_url: str) -> Engine:
    """The polling relay's own engine (it holds one connection, in its own thread)."""
    return create_db_engine(database_url)


def create(conn: Connection) -> int:
    """Create the table if missing; returns the newest id (a starting process reads only what follows)."""
    conn.execute(text(_SQLITE_CREATE))
    conn.commit()
    return newest(conn)


def append(conn: Connection, bodies: Sequence[str], now: float) -> None:
    """Write a batch of events in one transaction."""
    rows = [{"body": body, "at": now} for body in bodies]
    conn.execute(text(f"INSERT INTO {TABLE} (body, created_at) VALUES (:body, :at)"), rows)
    conn.commit()


def newest(conn: Connection) -> int:
    """The newest row's id (0 when empty): where a process that skips what it has no reader for goes on."""
    found = conn.execute(text(f"SELECT max(id) FROM {TABLE}")).scalar()
    conn.commit()
    return int(found or 0)


def read_after(conn: Connection, last_id: int, limit: int) -> list[tuple[int, str]]:
    """Up to `limit` rows written after `last_id`, oldest first (the primary key: one index lookup)."""
    rows = conn.execute(
        text(f"SELECT id, body FROM {TABLE} WHERE id > :last ORDER BY id LIMIT :limit"),
        {"last": last_id, "limit": limit},
    ).all()
    conn.commit()  # ends the read transaction, so the next read sees newer commits (and WAL can checkpoint)
    return [(int(row[0]), str(row[1])) for row in rows]


def prune(conn: Connection, before: float, keep_rows: int) -> int:
    """Delete rows written before `before` (unix seconds) or more than `keep_rows` behind the newest."""
    result = conn.execute(
        text(
            f"DELETE FROM {TABLE} WHERE created_at < :before OR id <= (SELECT max(id) FROM {TABLE}) - :keep"
        ),
        {"before": before, "keep": keep_rows},
    )
    conn.commit()
    return int(result.rowcount or 0)
