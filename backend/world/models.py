"""Tables for agents and points of interest. Every row belongs to a world."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON
from sqlmodel import Field, SQLModel

from backend.gametime import utcnow
from backend.ids import DEFAULT_WORLD as DEFAULT_WORLD  # one constant, kept in the basics (llm/ reads it)


class Agent(SQLModel, table=True):
    world_id: str = Field(default=DEFAULT_WORLD, primary_key=True, max_length=64)
    id: str = Field(primary_key=True, max_length=64)
    name: str = Field(max_length=100)
    language: str = Field(default="ja", max_length=8)
    age: int | None = None
    traits: list[str] = Field(default_factory=list, sa_type=JSON)
    backstory: str = ""
    speaking_style: str = ""
    home_poi: str | None = Field(default=None, max_length=64)
    wake_hour: float = 7.0
    sleep_hour: float = 23.0
    council_role: str | None = Field(default=None, max_length=32)
    # Last state reported by Unity.
    state: str | None = Field(default=None, max_length=32)
    location_name: str | None = Field(default=None, max_length=200)
    position: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    state_day: int | None = None
    state_time_of_day: float | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class AgentStateEvent(SQLModel, table=True):
    """A short history of the states Unity reported for an agent."""

    id: int | None = Field(default=None, primary_key=True)
    world_id: str = Field(default=DEFAULT_WORLD, index=True, max_length=64)
    agent_id: str = Field(index=True, max_length=64)
    state: str = Field(max_length=32)
    location_name: str | None = Field(default=None, max_length=200)
    position: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    day: int = 1
    time_of_day: float = 0.0
    created_at: datetime = Field(default_factory=utcnow)


class PointOfInterest(SQLModel, table=True):
    world_id: str = Field(default=DEFAULT_WORLD, primary_key=True, max_length=64)
    id: str = Field(primary_key=True, max_length=64)
    name: str = Field(max_length=200)
    kind: str = Field(default="place", max_length=64)
    description: str = ""
    x: float = 0.0
    y: float = 0.0
    z: float = 0.0


class WorldMeta(SQLModel, table=True):
    """Facts about a world as a whole (so the demo world is loaded once, not on every start; its gestures)."""

    world_id: str = Field(primary_key=True, max_length=64)
    demo_loaded_at: datetime | None = None
    imported_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    #: The gesture names Unity's animator knows (`PUT /v1/world/gestures`); None: the world declared none, so
    #: its characters use DEFAULT_GESTURES (world/schemas.py).
    gestures: list[str] | None = Field(default=None, sa_type=JSON)


class WorldStamp(SQLModel, table=True):
    """The revision of a world's facts (its places, its agents' ids and names, its gestures): raised in the
    same transaction as every change to them (world/service.py, an import or a town loaded), read on every
    turn by the facts cache (world/facts.py) to know whether what it keeps is current, in any process. Not
    part of a world's export: an import replaces the facts and raises the revision, never lowers it."""

    world_id: str = Field(primary_key=True, max_length=64)
    rev: int = 0
