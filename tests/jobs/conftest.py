"""Job-runner fixtures: one database two runners share (a SQLite file, or PostgreSQL when
MACHI_TEST_POSTGRES_URL is set; see .ci/postgres.sh), and runners built over their own engines, the way two
processes would be."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.config import Settings
from backend.jobs import repo
from backend.jobs.models import Job, new_job
from backend.jobs.runner import JobRunner
from backend.storage.db import create_db_engine, init_db
from backend.tasks import TaskRunner

PG_URL = os.environ.get("MACHI_TEST_POSTGRES_URL")
KIND = "count"


@pytest.fixture
def db_url(database_url: str) -> str:
    """An empty database, initialised: a SQLite file (WAL), then a fresh PostgreSQL database."""
    _init(database_url)
    return database_url


def _init(url: str) -> None:
    engine = create_db_engine(url)
    init_db(engine)
    engine.dispose()


@pytest.fixture
def job_settings(settings: Settings) -> Settings:
    """A short lease (0.3 s, renewed every 0.1 s) and a quick poll, so a takeover happens within a second."""
    return settings.model_copy(update={"job_lease_s": 0.3, "job_poll_s": 0.05, "job_workers": 4})


@pytest.fixture
async def runners(db_url: str, job_settings: Settings) -> AsyncIterator[Callable[..., JobRunner]]:
    """Makes runners over `db_url`, each with its own engine and task runner; all stopped afterwards."""
    made: list[JobRunner] = []

    def make(**overrides: Any) -> JobRunner:
        settings = job_settings.model_copy(update=overrides) if overrides else job_settings
        runner = JobRunner(engine=create_db_engine(db_url), settings=settings, tasks=TaskRunner())
        made.append(runner)
        return runner

    yield make
    for runner in made:
        await runner.stop()
        await runner.tasks.cancel_all()
        await runner.stop()  # the heartbeat ends once no job is left
        runner.engine.dispose()


def add_jobs(engine: Engine, n: int, kind: str = KIND) -> list[Job]:
    with Session(engine, expire_on_commit=False) as session:
        jobs = repo.add(session, [new_job("default", kind, {"n": i}) for i in range(n)])
        session.commit()
    return jobs


def row(engine: Engine, job_id: int) -> Job:
    with Session(engine) as session:
        found = session.get(Job, job_id)
        assert found is not None
        return found


async def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Waits for a state (never asserts a duration: the timeout only bounds a broken run)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)
