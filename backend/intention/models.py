"""Tables of the intention concept: what an agent means to do, and what it has told to whom."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON
from sqlmodel import Field, SQLModel

from backend.gametime import utcnow
from backend.world.models import DEFAULT_WORLD


class Intention(SQLModel, table=True):
    """An agent's intentions (the Generative Agents paper's "currently"): a few short lines, newest first.

    `lines` holds `{"text", "day", "time_of_day", "source"}` per line; the day a line was written is what
    its relative words (明日, tomorrow) are read against.
    """

    world_id: str = Field(default=DEFAULT_WORLD, primary_key=True, max_length=64)
    agent_id: str = Field(primary_key=True, max_length=64)
    lines: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSON)
    #: Game day of the last morning revision (a day's first plan revises at most once).
    revised_day: int | None = None
    updated_at: datetime = Field(default_factory=utcnow)


class Told(SQLModel, table=True):
    """One thing an agent told another (once per teller, listener and item): who knows what, and from whom.

    `origin_id` is whose news it is (the host of a party), `text` the item as the teller held it. The rows
    where an agent is the listener are the news it can pass on.
    """

    world_id: str = Field(default=DEFAULT_WORLD, primary_key=True, max_length=64)
    teller_id: str = Field(primary_key=True, max_length=64)
    listener_id: str = Field(primary_key=True, index=True, max_length=64)
    item_key: str = Field(primary_key=True, max_length=32)
    origin_id: str = Field(max_length=64)
    text: str = Field(max_length=400)
    #: The day the item's words were written (what 明日 in them is read against).
    written_day: int = 1
    session_id: str | None = Field(default=None, max_length=128)
    day: int = 1
    time_of_day: float = 0.0
    created_at: datetime = Field(default_factory=utcnow)
