"""A server with both keys set, holding two populated worlds; built once per module (seeding is slow)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from backend.app import create_app
from backend.config import Settings
from backend.scripted import ScriptedLLM
from tests.security.world import Seeded, seed_world

ADMIN_KEY = "admin-key-0123456789abcdef"
VIEWER_KEY = "viewer-key-fedcba9876543210"
ADMIN = {"X-Api-Key": ADMIN_KEY}
VIEWER = {"Authorization": f"Bearer {VIEWER_KEY}"}


def secured_settings(directory: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "database_url": f"sqlite:///{directory / 'machi.db'}",
        "llm_provider": "scripted",
        "llm_retry_backoff_s": 0.0,
        "load_demo_world": False,
        "machi_api_key": ADMIN_KEY,
        "machi_viewer_key": VIEWER_KEY,
        # The route-list tests send hundreds of wrong keys from one address; test_throttle.py sets a limit.
        "auth_failure_limit": 0,
        **overrides,
    }
    return Settings(_env_file=None, **values)  # type: ignore[call-arg, arg-type]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Seeded, Seeded]]:
    """(client, world A "alpha", world B "bravo"): the same agent ids in both, different texts."""
    settings = secured_settings(tmp_path_factory.mktemp("secured"))
    with TestClient(create_app(settings, llm=ScriptedLLM(seed=0))) as client:
        alpha = seed_world(client, "alpha", "ALPHA", ADMIN)
        bravo = seed_world(client, "bravo", "BRAVO", ADMIN)
        yield client, alpha, bravo
