"""GET /v1/jobs: the persisted background jobs of a world (what is pending, what failed and why)."""

from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter, Query

from backend.api.deps import EngineDep, WorldDep
from backend.jobs import repo
from backend.jobs.models import JobList, JobPublic

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])


@router.get("", response_model=JobList)
async def list_jobs(
    engine: EngineDep,
    world: WorldDep,
    status: Literal["pending", "running", "done", "failed"] | None = None,
    kind: str | None = Query(None, max_length=32),
    limit: int = Query(50, ge=1, le=500),
) -> JobList:
    """Newest first, with the world's counts per status."""
    rows = await asyncio.to_thread(repo.listing, engine, world, status, kind, limit)
    counts = await asyncio.to_thread(repo.counts, engine, world)
    return JobList(jobs=[JobPublic.model_validate(r, from_attributes=True) for r in rows], counts=counts)
