"""All SQL of the player concept: the `player` table.

Functions take the caller's session and leave the transaction to it, except `note_line`, which counts a
visitor's line against the rate limits and records it in a transaction of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlmodel import Session, col, select

from backend.errors import RateLimited
from backend.gametime import utcnow
from backend.ids import PLAYER_PREFIX
from backend.player.models import Player
from backend.player.schemas import PlayerUpsert

#: The rate limits' window, in seconds of wall clock.
WINDOW_S = 60.0


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
    """Register (or rename) a visitor; commits. Returns the row and whether it was created."""
    row = get(session, world_id, player_id)
    created = row is None
    if row is None:
        row = Player(world_id=world_id, id=player_id, display_name=body.display_name)
    row.display_name, row.language, row.registered = body.display_name, body.language, True
    row.last_seen_at = utcnow()
    session.add(row)
    session.commit()
    session.refresh(row)
    return row, created


def players(session: Session, world_id: str, limit: int = 200) -> list[Player]:
    query = select(Player).where(Player.world_id == world_id)
    return list(session.exec(query.order_by(col(Player.last_seen_at).desc()).limit(limit)))


def delete(session: Session, world_id: str, player_id: str) -> bool:
    row = get(session, world_id, player_id)
    if row is None:
        return False
    session.delete(row)
    session.commit()
    return True


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
        row = get(session, world_id, player_id) or Player(
            world_id=world_id, id=player_id, display_name=default_name(player_id)
        )
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
