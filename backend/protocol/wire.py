"""Wire shapes that have no model of their own in a concept module (health, errors, stream events).

Tests check these against what the server really sends, so they cannot drift from the code that sends it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class LLMHealthPublic(BaseModel):
    """`/health`'s `llm_health`: how the model's real calls went lately, and the last idle probe."""

    checked_by: str | None = Field(
        None, description="call | probe: what `llm_reachable` comes from (the latest of the two); null before"
    )
    last_success_at: datetime | None = Field(None, description="When a call last got an answer.")
    last_failure_at: datetime | None = Field(
        None, description="When a call last got none (unreachable, timed out)."
    )
    last_error: str | None = Field(None, description="What the last failed call or probe said.")
    window_s: float = Field(description="LLM_HEALTH_WINDOW_S: the seconds the recent_* figures cover.")
    recent_calls: int = Field(description="Call attempts that finished within the window.")
    recent_failures: int = Field(description="Of those, the ones that got no answer.")
    recent_failure_share: float | None = Field(
        None, description="recent_failures / recent_calls; null without calls in the window."
    )
    last_probe_at: datetime | None = Field(
        None, description="When the provider's cheap check last ran (start-up, then when idle)."
    )
    last_probe_ok: bool | None = None


class HealthPublic(BaseModel):
    """`GET /health`: always public; the first call a client makes (it learns the protocol version here)."""

    status: str = Field(description="ok | degraded")
    version: str
    protocol_version: int = Field(description="The X-Machi-Protocol major this server speaks.")
    llm_provider: str
    llm_model: str
    llm_models: dict[str, str] = Field(description="The model per role (dialogue, plan, ...).")
    llm_reachable: bool | None = Field(
        description="Whether the model answers: the latest real call's outcome or idle probe's, whichever is "
        "newer (a reply that failed its schema still counts as an answer); null before either."
    )
    llm_detail: Any = Field(None, description="The provider's check line, or why the model is not answering.")
    llm_health: LLMHealthPublic | None = None
    embedding_provider: str
    embedding_model: str
    database: str
    database_ok: bool
    background_tasks: int
    llm_queue: dict[str, Any] | None = Field(
        None,
        description="The model call queue: slots, in flight, depth and waits per priority, fallback turns.",
    )
    jobs: dict[str, int] | None = Field(
        None, description="Background jobs by status (pending, running, failed...)."
    )


class ErrorInfo(BaseModel):
    code: str = Field(
        description="Machine-readable, e.g. not_found, validation_error, invalid_json, unsupported_protocol, internal_error."
    )
    message: str = Field(description="What went wrong, for a developer to act on.")
    details: Any = None


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer, and the `error` event of a streamed turn."""

    error: ErrorInfo


class TurnDelta(BaseModel):
    """SSE `delta` event: more of the dialogue. Deltas since the last `reset` concatenate to the reply's text."""

    text: str


class TurnReset(BaseModel):
    """SSE `reset` event: discard the text shown so far; the next deltas carry the whole final line."""

    model_config = ConfigDict(extra="forbid")


class DeleteResult(BaseModel):
    """`DELETE /v1/agents/{id}` and `/v1/pois/{id}`."""

    model_config = ConfigDict(extra="allow")

    deleted: str
