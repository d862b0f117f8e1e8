"""GET /health: is the server up, and what is it running on."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from backend import PROTOCOL_VERSION, __version__
from backend.jobs import repo as job_store
from backend.llm.scheduler import find_scheduler
from backend.storage.db import reachable

router = APIRouter(tags=["health"])


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
    embeddings: dict[str, Any] | None = Field(
        None,
        description="Memories embedded by the current embedder: embedder (its identity), ready, total, "
        "pending, worlds_pending. Pending ones are being embedded by the worker (a new embedder, a large "
        "write); meanwhile retrieval finds them by their words.",
    )


@router.get("/health", response_model=HealthPublic)
def health(request: Request) -> dict[str, Any]:
    """Always public. Reports the model's reachability (from the latest real calls, or the idle probe)
    instead of failing when it is down; reads only what is already known, never waiting on the model."""
    state = request.app.state
    settings = state.settings
    database_ok = reachable(state.engine)
    return {
        "status": "ok" if database_ok else "degraded",
        "version": __version__,
        "protocol_version": PROTOCOL_VERSION,
        "llm_provider": settings.llm_provider,
        "llm_model": settings.provider_model(),
        "llm_models": settings.role_models(),
        "llm_reachable": state.model_health.reachable,
        "llm_detail": state.model_health.detail,
        "llm_health": state.model_health.snapshot(),
        "embedding_provider": state.embedder.name,
        "embedding_model": state.embedder.model or settings.embedding_model_name(),
        "database": settings.database_kind(),
        "database_ok": database_ok,
        "background_tasks": state.tasks.pending,
        "llm_queue": llm_queue(state),
        "jobs": job_counts(state) if database_ok else None,
        "embeddings": state.memory.embeddings.progress().public() if database_ok else None,
    }


def llm_queue(state: Any) -> dict[str, Any] | None:
    """The scheduler's queue: slots, in flight, depth and waits per priority, fallback turns."""
    scheduler = find_scheduler(state.llm)
    return scheduler.snapshot() if scheduler is not None else None


def job_counts(state: Any) -> dict[str, int]:
    return job_store.counts(state.engine)
