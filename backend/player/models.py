"""The player table."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON
from sqlmodel import Field, SQLModel

from backend.gametime import utcnow
from backend.ids import DEFAULT_WORLD


class Player(SQLModel, table=True):
    world_id: str = Field(default=DEFAULT_WORLD, primary_key=True, max_length=64)
    #: `player:` and an id (backend/ids.py).
    id: str = Field(primary_key=True, max_length=64)
    display_name: str = Field(max_length=64)
    #: The visitor's language ("ja"/"en"), None: the character's own.
    language: str | None = Field(default=None, max_length=8)
    #: Whether Unity registered the visitor (PUT /v1/players/{id}); False: known only from a player turn.
    registered: bool = False
    #: Unix times (wall clock) of the visitor's lines in the last minute, oldest first (the rate limits).
    recent: list[float] = Field(default_factory=list, sa_type=JSON)
    lines: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    last_seen_at: datetime = Field(default_factory=utcnow)
