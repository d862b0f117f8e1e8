"""Council records (numbered per world)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, UniqueConstraint
from sqlmodel import Field, SQLModel

from backend.gametime import utcnow
from backend.world.models import DEFAULT_WORLD


class CouncilRecord(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("world_id", "number", name="uq_council_number"),)

    id: str = Field(primary_key=True, max_length=64)
    world_id: str = Field(default=DEFAULT_WORLD, index=True, max_length=64)
    number: int
    title: str = Field(max_length=300)
    background: str = ""
    expected_effects: str = ""
    category: str | None = Field(default=None, max_length=64)
    proposer: str | None = Field(default=None, max_length=100)
    members: list[str] = Field(default_factory=list, sa_type=JSON)
    moderator: str | None = Field(default=None, max_length=64)
    rounds: int = 2
    language: str = Field(default="ja", max_length=8)
    status: str = Field(default="pending", max_length=16)  # pending | running | done | failed
    outcome: str | None = Field(default=None, max_length=32)
    record: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    error: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
