"""Fixtures for the LLM layer: a fake model server on 127.0.0.1 and settings pointing each provider at it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from backend.config import Settings
from tests.llm.fakes import FakeModelServer


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        yield server


def settings_for(settings: Settings, provider: str, url: str, **overrides: Any) -> Settings:
    """`settings` with LLM_PROVIDER=provider talking to `url` (short timeouts, no backoff)."""
    update: dict[str, Any] = {"llm_provider": provider, "llm_timeout_s": 5.0, "llm_retry_backoff_s": 0.0}
    if provider == "ollama":
        update.update(ollama_host=url, ollama_model="gemma3n:e4b")
    elif provider == "openai":
        update.update(
            openai_api_key=SecretStr("sk-test"), openai_base_url=f"{url}/v1", openai_model="gpt-test"
        )
    elif provider == "vllm":
        update.update(vllm_base_url=f"{url}/v1", vllm_model="qwen-test", vllm_api_key=SecretStr("vk-test"))
    update.update(overrides)
    return settings.model_copy(update=update)
