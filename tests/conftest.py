"""Shared fixtures: a scripted model, a real SQLite database in tmp_path, and the real app."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.app import create_app
from backend.config import Settings
from backend.scripted import ScriptedLLM
from bench.databases import fresh_database, fresh_postgres


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings isolated from the developer's .env and environment."""
    monkeypatch.chdir(tmp_path)
    for key in list(__import__("os").environ):
        if key.startswith(
            (
                "MACHI_",
                "LLM_",
                "OLLAMA_",
                "OPENAI_",
                "VLLM_",
                "EMBEDDING_",
                "DATABASE_",
                "PROCESS_",
                "EVENTS_",
                "PLAYER_",
                "WORLD_PLAYER_",
                "MODERATION",
                "RETRIEVAL_",
                "WEIGHT_",
                "MEMORY_",
            )
        ):
            monkeypatch.delenv(key, raising=False)
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=f"sqlite:///{tmp_path / 'machi.db'}",
        llm_provider="scripted",
        llm_retry_backoff_s=0.0,
        load_demo_world=False,
        importance_batch_s=0.0,  # rate at once; tests/memory/test_rating_batch.py covers the gathering
    )


@pytest.fixture
def scripted() -> ScriptedLLM:
    return ScriptedLLM(seed=0)


def make_client(settings: Settings, scripted: ScriptedLLM, **overrides: Any) -> TestClient:
    if overrides:
        settings = settings.model_copy(update=overrides)
    return TestClient(create_app(settings, llm=scripted), raise_server_exceptions=True)


@pytest.fixture
def client(settings: Settings, scripted: ScriptedLLM) -> Iterator[TestClient]:
    """The real app (lifespan run) over a fresh SQLite file, with the scripted engine."""
    with make_client(settings, scripted) as test_client:
        yield test_client


def drain(client: TestClient, timeout: float = 30.0) -> None:
    """Wait for the app's background work (importance ratings, reflections...) to finish."""
    app: Any = client.app
    client.portal.call(app.state.tasks.drain, timeout)  # type: ignore[union-attr]


#: A PostgreSQL whose role may create databases (CI starts one with .ci/postgres.sh); tests that need it skip.
POSTGRES_URL = os.environ.get("MACHI_TEST_POSTGRES_URL")


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards (skips without one)."""
    if not POSTGRES_URL:
        pytest.skip("set MACHI_TEST_POSTGRES_URL (see .ci/postgres.sh) to run the PostgreSQL tests")
    with fresh_postgres(POSTGRES_URL) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """One empty database for everything in the test to share (two apps, two runners, real processes): a
    SQLite file (WAL), then a fresh PostgreSQL database (skipped without MACHI_TEST_POSTGRES_URL)."""
    if request.param == "postgresql" and not POSTGRES_URL:
        pytest.skip("set MACHI_TEST_POSTGRES_URL (see .ci/postgres.sh) to run the PostgreSQL case")
    with fresh_database(request.param, tmp_path, POSTGRES_URL) as url:
        yield url
