"""GET /health: is the server up, and what is it running on."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy import text

from backend import PROTOCOL_VERSION, __version__
from backend.jobs import repo as job_store
from backend.llm.scheduler import find_scheduler
from backend.protocol.wire import HealthPublic

router = APIRouter(tags=["health"])


@router.get("/health", response_model=HealthPublic)
def health(request: Request) -> dict[str, Any]:
    """Always public. Reports the model's reachability (from the latest real calls, or the idle probe)
    instead of failing when it is down; reads only what is already known, never waiting on the model."""
    state = request.app.state
    settings = state.settings
    try:
        with state.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        database_ok = True
    except Exception:  # noqa: BLE001 - reported, not raised
        database_ok = False
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
        "embedding_provider": settings.embedding_provider,
        "embedding_model": settings.embedding_model_name(),
        "database": settings.database_kind(),
        "database_ok": database_ok,
        "background_tasks": state.tasks.pending,
        "llm_queue": llm_queue(state),
        "jobs": job_counts(state) if database_ok else None,
    }


def llm_queue(state: Any) -> dict[str, Any] | None:
    """The scheduler's queue: slots, in flight, depth and waits per priority, fallback turns."""
    scheduler = find_scheduler(state.llm)
    return scheduler.snapshot() if scheduler is not None else None


def job_counts(state: Any) -> dict[str, int]:
    return job_store.counts(state.engine)
