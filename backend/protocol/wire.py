"""Wire shapes that have no model of their own in a concept module (errors, stream events; health is re-exported).

Tests check these against what the server really sends, so they cannot drift from the code that sends it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# `/health`'s shape is declared with its route (the API may not import this entry-point concept).
from backend.api.health import HealthPublic, LLMHealthPublic

__all__ = [
    "DeleteResult",
    "ErrorBody",
    "ErrorInfo",
    "HealthPublic",
    "LLMHealthPublic",
    "TurnDelta",
    "TurnReset",
]


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
