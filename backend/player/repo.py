"""All SQL of the player concept: the `player` table.

Functions take the caller's session and leave the transaction to it, except `note_line`, which counts a
visitor's line against the rate limits and records it in a transaction of its own.

Several API processes share the database, and a visitor's lines arrive at once: each read-check-write here
is serialised by the database, not by the process. A new visitor's row is created with
`INSERT ... ON CONFLICT DO NOTHING` (two requests creating it at once: one inserts, the other finds it), and
`note_line` counts under a lock of the world's: on PostgreSQL a transaction-level advisory lock keyed by the
world (then the visitor's row `FOR UPDATE`), on SQLite the database's write lock taken up front
(`BEGIN IMMEDIATE`; SQLite has one writer at a time, and a transaction that read first could not become it).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import delete as sql_delete
from sqlalchemy import text
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col, select

from backend.errors import RateLimited
from backend.gametime import utcnow
from backend.ids import PLAYER_PREFIX
from backend.player.models import Player
from backend.player.schemas import PlayerUpsert

#: The rate limits' window, in seconds of wall clock.
WINDOW_S = 60.0
#: The class of the PostgreSQL advisory lock on a world's visitor lines ("PLAY"); its object is the world id's
#: CRC-32 (two worlds sharing one only wait for each other). Other Machi advisory locks use class "MACH".
LINES_LOCK_CLASS = 0x504C4159
_PLAYER = Player.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Limits:
    """A world's rate limits for visitors' lines (Settings: PLAYER_LINES_PER_MINUTE, ...)."""

    per_player: int
    per_world: int


def default_name(player_id: str) -> str:
    """The display name of a visitor Unity never registered: its id without the prefix."""
    return player_id.removeprefix(PLAYER_PREFIX)


def get(session: Session, world_id: str, player_id: str) -> Player | None:
    return session.get(Player, (world_id, player_id))


def get_many(session: Session, world_id: str, ids: Sequence[str]) -> dict[str, Player]:
    if not ids:
        return {}
    query = select(Player).where(Player.world_id == world_id, col(Player.id).in_(list(ids)))
    return {row.id: row for row in session.exec(query)}


def upsert(session: Session, world_id: str, player_id: str, body: PlayerUpsert) -> tuple[Player, bool]:
    """Register (or rename) a visitor; commits. Returns the row and whether it was created (of two requests
    registering one new visitor at once, one creates it and the other updates it)."""
    created = _create(session, world_id, player_id, body.display_name)
    row = session.get(Player, (world_id, player_id), with_for_update=True, populate_existing=True)
    if row is None:  # pragma: no cover - deleted between the two statements of this transaction
        row = Player(world_id=world_id, id=player_id, display_name=body.display_name)
    row.display_name, row.language, row.registered = body.display_name, body.language, True
    row.last_seen_at = utcnow()
    session.add(row)
    session.commit()
    session.refresh(row)
    return row, created


def register(engine: Any, world_id: str, player_id: str, body: PlayerUpsert) -> tuple[Player, bool]:
    """`upsert` in a session of its own (PUT /v1/players: the route checks the name first, on the event loop,
    holding no connection while it waits)."""
    with Session(engine, expire_on_commit=False) as session:
        return upsert(session, world_id, player_id, body)


def players(session: Session, world_id: str, limit: int = 200) -> list[Player]:
    query = select(Player).where(Player.world_id == world_id)
    return list(session.exec(query.order_by(col(Player.last_seen_at).desc()).limit(limit)))


def delete(session: Session, world_id: str, player_id: str) -> bool:
    """Forget a visitor; commits. False when there was none (or a request at the same time removed it)."""
    query = sql_delete(Player).where(col(Player.world_id) == world_id, col(Player.id) == player_id)
    gone = session.connection().execute(query).rowcount
    session.commit()
    return bool(gone)


def note_line(engine: Any, world_id: str, player_id: str, limits: Limits) -> Player:
    """Count one line of the visitor against the limits and record it (creating a visitor Unity never
    registered, named after its id). Returns the visitor's row.

    Raises:
        RateLimited: the visitor, or all visitors of the world together, said as many lines as the limit
            allows within the last minute; `details` names the limit and when to retry.
    """
    now = utcnow()
    stamp, cutoff = now.timestamp(), now.timestamp() - WINDOW_S
    with Session(engine, expire_on_commit=False) as session:
        _lock_world(session, world_id)
        _create(session, world_id, player_id, default_name(player_id))
        row = session.get(Player, (world_id, player_id), with_for_update=True)
        assert row is not None  # created above, and deleting it waits for this transaction
        mine = [t for t in row.recent or [] if t > cutoff]
        if len(mine) >= limits.per_player:
            raise _limited(
                "PLAYER_LINES_PER_MINUTE", limits.per_player, mine[0] + WINDOW_S - stamp, player_id
            )
        others = _world_lines(session, world_id, player_id, now - timedelta(seconds=WINDOW_S), cutoff)
        if len(others) + len(mine) >= limits.per_world:
            oldest = min([*others, *mine])
            raise _limited("WORLD_PLAYER_LINES_PER_MINUTE", limits.per_world, oldest + WINDOW_S - stamp, None)
        row.recent, row.lines, row.last_seen_at = [*mine, stamp], row.lines + 1, now
        session.add(row)
        session.commit()
        return row


def _lock_world(session: Session, world_id: str) -> None:
    """Begin the session's transaction holding the lock that orders the world's visitor lines (see above)."""
    conn = session.connection()
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")  # the first statement on this connection's transaction
    elif conn.dialect.name == "postgresql":
        key = zlib.crc32(world_id.encode()) - 2**31  # the lock's object is a signed 32-bit integer
        conn.execute(text("SELECT pg_advisory_xact_lock(:a, :b)"), {"a": LINES_LOCK_CLASS, "b": key})


def _create(session: Session, world_id: str, player_id: str, display_name: str) -> bool:
    """Insert the visitor's row unless it exists (then nothing changes). Returns whether it was inserted."""
    dialect = postgresql if session.connection().dialect.name == "postgresql" else sqlite
    values = Player(world_id=world_id, id=player_id, display_name=display_name).model_dump()
    statement = dialect.insert(_PLAYER).values(**values).on_conflict_do_nothing()
    return session.connection().execute(statement.returning(_PLAYER.c.id)).first() is not None


def _world_lines(session: Session, world_id: str, player_id: str, since: Any, cutoff: float) -> list[float]:
    """The times of the world's other visitors' lines in the window (only those seen within it are read)."""
    query = select(Player.recent).where(
        Player.world_id == world_id, Player.id != player_id, col(Player.last_seen_at) >= since
    )
    return [t for recent in session.exec(query) for t in recent or [] if t > cutoff]


def _limited(limit: str, value: int, wait: float, player_id: str | None) -> RateLimited:
    who = f"visitor {player_id!r}" if player_id else "this world's visitors together"
    return RateLimited(
        f"{limit}={value}: {who} said {value} lines within the last minute; wait {max(1, round(wait))} s "
        f"and send the line again (the limit is a server setting)",
        details={"limit": limit, "value": value, "retry_after_s": round(max(wait, 0.0), 1), "field": "text"},
    )
