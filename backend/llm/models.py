"""The trace of every model call."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON
from sqlmodel import Field, SQLModel

from backend.gametime import utcnow
from backend.ids import DEFAULT_WORLD

#: The labels of a call (`GenerateOptions.labels`) the trace keeps in columns of their own, to filter on.
LABEL_COLUMNS = ("stage", "round", "council_id")


class LLMCall(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    world_id: str = Field(default=DEFAULT_WORLD, index=True, max_length=64)
    purpose: str = Field(index=True, max_length=32)
    stage: str | None = Field(default=None, max_length=32)
    round: int | None = None
    agent_id: str | None = Field(default=None, index=True, max_length=64)
    session_id: str | None = Field(default=None, index=True, max_length=128)
    council_id: str | None = Field(default=None, index=True, max_length=64)
    provider: str = Field(default="", max_length=32)
    model: str = Field(default="", max_length=200)
    messages: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSON)
    schema_name: str | None = Field(default=None, max_length=100)
    raw_reply: str | None = None
    ok: bool = True
    error: str | None = None
    latency_ms: float = 0.0
    prompt_tokens: int | None = None
    #: The prompt's size as Machi counted it when fitting it to the model's context (backend/llm/budget.py).
    prompt_tokens_counted: int | None = None
    completion_tokens: int | None = None
    streamed: bool = False
    #: The reply needed repair (code fences or prose around the JSON object) before it could be parsed.
    repaired: bool = False
    created_at: datetime = Field(default_factory=utcnow, index=True)
