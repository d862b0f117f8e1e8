"""The job table: background work that must survive a crash (ratings, observations, reflections)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel
from sqlalchemy import JSON, Index
from sqlmodel import Field, SQLModel

from backend.gametime import utcnow
from backend.storage.rows import build

#: The world a job row names when none is given: world's `DEFAULT_WORLD`, spelled out because jobs sit
#: below world in the layers (a job names its world by id only).
DEFAULT_WORLD = "default"

JobStatus = Literal["pending", "running", "done", "failed"]
#: Jobs still to run; a new job with the dedupe key of one of these is not added again.
LIVE = ("pending", "running")


class Job(SQLModel, table=True):
    # The runners' poll: pending jobs whose run_after has come, and running jobs whose lease has run out
    # (one index for each half of its OR).
    __table_args__ = (
        Index("ix_job_status_run_after", "status", "run_after"),
        Index("ix_job_status_lease_until", "status", "lease_until"),
    )

    id: int | None = Field(default=None, primary_key=True)
    world_id: str = Field(default=DEFAULT_WORLD, index=True, max_length=64)
    kind: str = Field(max_length=32)
    payload: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    status: str = Field(default="pending", max_length=16)  # pending | running | done | failed
    attempts: int = 0
    run_after: datetime = Field(default_factory=utcnow)
    last_error: str | None = Field(default=None, max_length=1000)
    #: At most one live (pending/running) job per key; finished ones give their key up (see repo.add).
    dedupe_key: str | None = Field(default=None, unique=True, max_length=400)
    #: The runner that claimed the job last (`host:pid:hex`); only it may record the outcome of its run.
    owner: str | None = Field(default=None, max_length=128)
    #: A running job's claim holds until then (its runner renews it); after that, or NULL (a row written by
    #: a version without leases), any runner may take the job over.
    lease_until: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


def new_job(world_id: str, kind: str, payload: dict[str, Any], dedupe_key: str | None = None) -> Job:
    # `build`: a turn makes jobs on every commit, and the constructor's per-field events cost more than the row.
    return build(Job, {"world_id": world_id, "kind": kind, "payload": payload, "dedupe_key": dedupe_key})


class JobPublic(BaseModel):
    id: int
    world_id: str
    kind: str
    payload: dict[str, Any]
    status: str
    attempts: int
    run_after: datetime
    last_error: str | None
    dedupe_key: str | None
    owner: str | None = None
    lease_until: datetime | None = None
    created_at: datetime
    updated_at: datetime


class JobList(BaseModel):
    jobs: list[JobPublic]
    counts: dict[str, int]
