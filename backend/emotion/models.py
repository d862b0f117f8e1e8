"""Emotion state (latest per agent) and its history."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON
from sqlmodel import Field, SQLModel

from backend.gametime import utcnow
from backend.world.models import DEFAULT_WORLD

PLUTCHIK = ("joy", "trust", "fear", "surprise", "sadness", "disgust", "anger", "anticipation")


class EmotionRecord(SQLModel, table=True):
    """One evaluation of an agent's emotion; the newest per agent is its current state."""

    id: int | None = Field(default=None, primary_key=True)
    world_id: str = Field(default=DEFAULT_WORLD, index=True, max_length=64)
    agent_id: str = Field(index=True, max_length=64)
    values: dict[str, float] = Field(default_factory=dict, sa_type=JSON)
    label: str = Field(default="", max_length=32)
    cause: str | None = None
    day: int = 1
    time_of_day: float = 0.0
    created_at: datetime = Field(default_factory=utcnow)
    extra: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
