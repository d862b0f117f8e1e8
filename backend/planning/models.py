"""The daily plan table (one current plan per agent and day)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, UniqueConstraint
from sqlmodel import Field, SQLModel

from backend.gametime import utcnow
from backend.world.models import DEFAULT_WORLD


class Plan(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("world_id", "agent_id", "day", name="uq_plan_day"),)

    id: int | None = Field(default=None, primary_key=True)
    world_id: str = Field(default=DEFAULT_WORLD, index=True, max_length=64)
    agent_id: str = Field(index=True, max_length=64)
    day: int
    items: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSON)
    reason: str | None = None
    version: int = 1
    # How the stored items came about: model | repaired | fallback; `repairs` lists what validation fixed.
    source: str = Field(default="model", max_length=16)
    repairs: list[str] = Field(default_factory=list, sa_type=JSON)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
