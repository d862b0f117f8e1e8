"""Wire shapes that have no model of their own in a concept module (health, errors, stream events).

Tests check these against what the server really sends, so they cannot drift from the code that sends it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class HealthPublic(BaseModel):
    """`GET /health`: always public; the first call a client makes (it learns the protocol version here)."""

    status: str = Field(description="ok | degraded")
    version: str
    protocol_version: int = Field(description="The X-Machi-Protocol major this server speaks.")
    llm_provider: str
    llm_model: str
    llm_models: dict[str, str] = Field(description="The model per role (dialogue, plan, ...).")
    llm_reachable: bool | None
    llm_detail: Any = None
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
