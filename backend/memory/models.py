"""The memory stream table."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, LargeBinary
from sqlmodel import Field, SQLModel

from backend.gametime import utcnow
from backend.world.models import DEFAULT_WORLD


class Memory(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    world_id: str = Field(default=DEFAULT_WORLD, index=True, max_length=64)
    agent_id: str = Field(index=True, max_length=64)
    type: str = Field(max_length=16)  # observation | reflection | plan
    content: str
    importance: int = 5
    importance_source: str = Field(default="caller", max_length=16)  # caller | provisional | model
    location_name: str | None = Field(default=None, max_length=200)
    tags: list[str] = Field(default_factory=list, sa_type=JSON)
    evidence_ids: list[int] = Field(default_factory=list, sa_type=JSON)
    session_id: str | None = Field(default=None, index=True, max_length=128)
    created_day: int = 1
    created_time_of_day: float = 0.0
    created_at: datetime = Field(default_factory=utcnow)
    last_accessed_day: int = 1
    last_accessed_time_of_day: float = 0.0
    last_accessed_at: datetime = Field(default_factory=utcnow)
    embedding: bytes | None = Field(default=None, sa_type=LargeBinary)
