"""The app's start-up probe calls the provider's `check()`: an unreachable Ollama is reported, not fatal."""

from __future__ import annotations

import time
from typing import Any

from fastapi.testclient import TestClient

from backend.app import create_app
from backend.config import Settings
from tests.llm.conftest import settings_for
from tests.llm.fakes import FakeModelServer, closed_port_url


def health_after_probe(client: TestClient) -> dict[str, Any]:
    """/health once the background probe has answered (it runs right after start-up)."""
    for _ in range(200):
        body: dict[str, Any] = client.get("/health").json()
        if body["llm_reachable"] is not None:
            return body
        time.sleep(0.01)
    raise AssertionError("the provider probe never finished")


def test_unreachable_ollama_still_starts_and_health_says_why(settings: Settings) -> None:
    configured = settings_for(settings, "ollama", closed_port_url())
    with TestClient(create_app(configured)) as client:
        body = health_after_probe(client)
        assert body["status"] == "ok"  # the server runs; only the model is missing
        assert body["llm_provider"] == "ollama" and body["llm_reachable"] is False
        assert "cannot reach Ollama" in body["llm_detail"]


def test_reachable_ollama_missing_the_model_says_what_to_pull(
    settings: Settings, fake: FakeModelServer
) -> None:
    fake.models = ["llama3.2:latest"]
    with TestClient(create_app(settings_for(settings, "ollama", fake.url))) as client:
        body = health_after_probe(client)
        assert body["llm_reachable"] is False
        assert "ollama pull gemma3n:e4b" in body["llm_detail"]


def test_reachable_vllm_is_reported_ready(settings: Settings, fake: FakeModelServer) -> None:
    fake.models = ["qwen-test"]
    with TestClient(create_app(settings_for(settings, "vllm", fake.url))) as client:
        body = health_after_probe(client)
        assert body["llm_reachable"] is True and "qwen-test" in body["llm_detail"]
