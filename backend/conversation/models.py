"""Conversation and turn tables."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, UniqueConstraint
from sqlmodel import Field, SQLModel

from backend.gametime import utcnow
from backend.world.models import DEFAULT_WORLD


class Conversation(SQLModel, table=True):
    world_id: str = Field(default=DEFAULT_WORLD, primary_key=True, max_length=64)
    session_id: str = Field(primary_key=True, max_length=128)
    #: The first two participants (the speaker and the target of the first turn; either may be a player).
    agent_a: str = Field(max_length=64)
    agent_b: str = Field(max_length=64)
    #: Every participant in the order they joined (agents and players, 2-6); None: a conversation stored
    #: before groups, whose participants are agent_a and agent_b.
    participants: list[str] | None = Field(default=None, sa_type=JSON)
    #: Participants who left with a goodbye (a group goes on while two remain), in the order they left.
    left: list[str] | None = Field(default=None, sa_type=JSON)
    location_name: str | None = Field(default=None, max_length=200)
    start_day: int = 1
    start_time_of_day: float = 0.0
    end_day: int | None = None
    end_time_of_day: float | None = None
    ended: bool = False
    end_reason: str | None = Field(default=None, max_length=32)
    turn_count: int = 0
    reflected: bool = False
    #: Language the two speakers used ("ja"/"en"), from the first turn.
    language: str | None = Field(default=None, max_length=8)
    #: The whole transcript as "Name: line" strings, the server's (conversation/transcript.py): it only grows,
    #: by each turn's line and any lines of Unity's own past it (kept for the reflection); Unity's history is
    #: checked against it and never rewrites it. `turn_count` is its length.
    transcript: list[str] = Field(default_factory=list, sa_type=JSON)
    #: One past the newest memory id when the conversation began: each speaker's standing memories in the
    #: turn prompt are those formed before it (the same all conversation long; its own lines are history).
    memory_watermark: int | None = None
    #: Each speaker's standing memories (ids) for this conversation, chosen at its first turn and shown on
    #: every later one in the same order, so the turn prompts of a speaker share them (a prompt cache).
    standing: dict[str, list[int]] = Field(default_factory=dict, sa_type=JSON)
    judge: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class Turn(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("world_id", "session_id", "turn_index", name="uq_turn_index"),)

    id: int | None = Field(default=None, primary_key=True)
    world_id: str = Field(default=DEFAULT_WORLD, index=True, max_length=64)
    session_id: str = Field(index=True, max_length=128)
    turn_index: int
    speaker_id: str = Field(max_length=64)
    target_id: str = Field(max_length=64)
    dialogue: str
    emotion: str = Field(default="neutral", max_length=16)
    is_conversation_end: bool = False
    end_reason: str | None = Field(default=None, max_length=32)
    fallback: bool = False
    reply: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    #: What moderation held back in this turn, for the operator (not sent to Unity): the stage ("line": a
    #: visitor's line; "reply": the model's reply), the check that held it ("word_list", "provider",
    #: "prompt_echo") and its category. None when nothing was held back.
    moderation: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    #: Actions of the model's reply dropped for naming a place, person or gesture the world lacks (each
    #: `{action, reason}`): the trace of what was never sent to Unity.
    dropped_actions: list[dict[str, Any]] | None = Field(default=None, sa_type=JSON)
    #: The item the turn was to tell (intention/telling.py): `{key, told, missing}`, `missing` the slots
    #: (what, when, where) the line left out; a partial telling is not recorded as told; `asked_again`: the
    #: slots the first line left out when the model was asked again (TELLING_TRIES), `tries`: the calls
    #: made then. None: nothing to tell.
    telling: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    day: int = 1
    time_of_day: float = 0.0
    created_at: datetime = Field(default_factory=utcnow)
