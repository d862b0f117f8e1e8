"""Actions sized to the model: off below ACTIONS_MIN_MODEL_B, on for a model of unknown size."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.action.sizing import actions_for_model
from backend.app import create_app
from backend.config import Settings
from backend.llm.base import model_parameters
from backend.llm.llamacpp import LlamaCppLLM, size_from_label
from backend.scripted import ScriptedLLM
from tests.conversation.helpers import add_agents, turn


class _SmallScripted(ScriptedLLM):
    """The scripted engine, claiming the size of SmolLM2-135M."""

    def parameter_count(self) -> int:
        return 134_515_008


class _FakeModel:
    def __init__(self, count: int) -> None:
        self.count = count

    def n_params(self) -> int:
        return self.count


class _FakeLlama:
    def __init__(self, count: int, label: str | None = None) -> None:
        self._model = _FakeModel(count)
        self.metadata = {"general.size_label": label} if label else {}


def test_a_small_model_is_asked_without_actions_by_default(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    small = _SmallScripted(seed=0)
    with caplog.at_level(logging.WARNING, logger="backend.action.sizing"):
        with TestClient(create_app(settings, llm=small)) as client:
            add_agents(client)
            client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "z-1", []))
    call = small.calls("dialogue")[-1]
    assert "actions" not in (call.schema or {}).get("properties", {})
    assert "- actions:" not in call.messages[0]["content"]
    lines = [r.getMessage() for r in caplog.records if "actions in turns are off" in r.getMessage()]
    assert len(lines) == 1 and "ACTIONS_MIN_MODEL_B=1" in lines[0] and "0.135 billion" in lines[0]


def test_the_floor_and_unknown_sizes_keep_actions(settings: Settings) -> None:
    assert actions_for_model(settings, None).actions_in_turns  # Ollama, OpenAI-compatible: unknown
    assert actions_for_model(settings, 8_000_000_000).actions_in_turns
    assert not actions_for_model(settings, 270_000_000).actions_in_turns
    anyway = settings.model_copy(update={"actions_min_model_b": 0})
    assert actions_for_model(anyway, 135_000_000).actions_in_turns
    higher = settings.model_copy(update={"actions_min_model_b": 10})
    assert not actions_for_model(higher, 8_000_000_000).actions_in_turns


def test_the_llamacpp_provider_reads_its_size_from_the_gguf() -> None:
    counted: Any = LlamaCppLLM(_FakeLlama(134_515_008), model_name="smol.gguf")
    assert model_parameters(counted) == 134_515_008
    labelled: Any = LlamaCppLLM(_FakeLlama(0, "270M"), model_name="gemma.gguf")
    assert model_parameters(labelled) == 270_000_000
    assert model_parameters(ScriptedLLM(seed=0)) is None


@pytest.mark.parametrize(
    ("label", "count"),
    [("135M", 135_000_000), ("1.7B", 1_700_000_000), ("8x7B", None), ("", None), ("360m", 360_000_000)],
)
def test_size_labels(label: str, count: int | None) -> None:
    assert size_from_label(label) == count
