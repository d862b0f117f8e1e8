"""The llama.cpp provider keeps a bounded cache of converted grammars (per-call schemas would grow it)."""

from __future__ import annotations

import contextlib
import os

import pytest

from backend.errors import MissingDependency
from backend.llm import llamacpp
from backend.llm.llamacpp import GRAMMARS_KEPT, LlamaCppLLM


def _schema(place: int) -> dict[str, object]:
    return {"type": "object", "properties": {"poi_id": {"enum": [f"place{place}"]}}, "required": ["poi_id"]}


def test_the_newest_grammars_are_kept_and_a_reused_one_stays() -> None:
    provider = LlamaCppLLM(object(), model_name="m.gguf")
    first = provider.grammar_for(_schema(0))
    for place in range(1, GRAMMARS_KEPT + 10):
        provider.grammar_for(_schema(place))
        provider.grammar_for(_schema(0))  # in use all along: never the oldest
    assert len(provider._grammars) == GRAMMARS_KEPT
    assert provider.grammar_for(_schema(0)) == first and "place0" in first


def test_openmp_waits_passively_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)  # restored after the test
    with contextlib.suppress(MissingDependency):  # without the extra it is set before the import all the same
        llamacpp.llama_cpp_module()
    assert os.environ["OMP_WAIT_POLICY"] == "passive"
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")
    with contextlib.suppress(MissingDependency):
        llamacpp.llama_cpp_module()
    assert os.environ["OMP_WAIT_POLICY"] == "active"  # a user's own setting wins
