"""Helpers for the reliability tests: an app over a faulty provider, waiting for the job table."""

from __future__ import annotations

import time
from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.app import create_app
from backend.config import Settings
from backend.jobs.models import Job
from tests.reliability.faulty import FaultyLLM


def faulty_client(settings: Settings, llm: FaultyLLM, **overrides: Any) -> TestClient:
    return TestClient(create_app(settings.model_copy(update=overrides), llm=llm))


def jobs(client: TestClient, **where: Any) -> list[Job]:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        query = select(Job)
        for key, value in where.items():
            query = query.where(getattr(Job, key) == value)
        return list(session.exec(query.order_by(Job.id)))  # type: ignore[arg-type]


def wait_until(predicate: Any, timeout: float = 30.0, what: str = "condition") -> None:
    """Poll `predicate` (bounded); the tests assert outcomes, never how long they took."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
