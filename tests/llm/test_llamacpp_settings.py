"""LLM_PROVIDER=llamacpp settings and the missing-extra message (no llama.cpp needed to run these)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from backend.config import (
    DEFAULT_TEMPERATURE,
    PACKAGED_MODELS,
    Settings,
    describe_settings_error,
    packaged_of,
    temperature_of,
)
from backend.errors import MissingDependency
from backend.llm.registry import build_embedder, build_provider


def llamacpp_settings(tmp_path: Path, model: Path | None, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "llm_provider": "llamacpp",
        "llamacpp_model_path": str(model) if model else None,
    }
    return Settings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'm.db'}", **{**values, **extra})  # type: ignore[call-arg]


def test_a_missing_model_file_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as caught:
        llamacpp_settings(tmp_path, tmp_path / "nope.gguf")
    message = describe_settings_error(caught.value)
    assert message.count("\n") == 0
    assert "LLAMACPP_MODEL_PATH" in message and "nope.gguf" in message
    with pytest.raises(ValidationError, match="LLAMACPP_MODEL_PATH"):
        llamacpp_settings(tmp_path, None)


def test_embeddings_may_use_their_own_model_file(tmp_path: Path) -> None:
    chat, embed = tmp_path / "chat.gguf", tmp_path / "embed.gguf"
    chat.write_bytes(b"x")
    with pytest.raises(ValidationError, match="LLAMACPP_EMBEDDING_MODEL_PATH"):
        llamacpp_settings(
            tmp_path, chat, embedding_provider="llamacpp", llamacpp_embedding_model_path=str(embed)
        )
    embed.write_bytes(b"x")
    settings = llamacpp_settings(
        tmp_path, chat, embedding_provider="llamacpp", llamacpp_embedding_model_path=str(embed)
    )
    assert (settings.provider_model(), settings.embedding_model_name()) == ("chat.gguf", "embed.gguf")
    assert settings.llamacpp_n_gpu_layers == -1  # every layer on the GPU unless told otherwise


def test_other_providers_need_no_model_file(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, llm_provider="scripted", llamacpp_model_path="/no/such.gguf")  # type: ignore[call-arg]
    assert settings.llm_provider == "scripted"


def test_without_the_extra_the_error_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"x")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if llama-cpp-python were not installed
    monkeypatch.delitem(sys.modules, "backend.llm.llamacpp", raising=False)
    settings = llamacpp_settings(tmp_path, model, embedding_provider="llamacpp")
    for build in (build_provider, build_embedder):
        with pytest.raises(MissingDependency, match=r"pip install 'machi\[llamacpp\]'"):
            build(settings)


def test_serve_without_the_extra_stops_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from backend.cli import main

    model = tmp_path / "m.gguf"
    model.write_bytes(b"x")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LLM_PROVIDER", "llamacpp")
    monkeypatch.setenv("LLAMACPP_MODEL_PATH", str(model))
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'm.db'}")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if llama-cpp-python were not installed
    assert main(["serve", "--port", "1"]) == 2  # refused before binding anything
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert err.startswith("config error: LLM_PROVIDER=llamacpp needs the package 'llama_cpp'")
    assert "pip install -e '.[llamacpp]'" in err


def test_a_postgres_url_without_its_driver_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from backend.app import create_app

    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the postgres extra were not installed
    settings = Settings(_env_file=None, database_url="postgresql+psycopg://machi@127.0.0.1/machi")  # type: ignore[call-arg]
    with pytest.raises(MissingDependency, match=r"DATABASE_URL names postgresql .*'\.\[postgres\]'"):
        create_app(settings)


def test_a_packaged_model_is_sampled_as_its_makers_recommend_unless_told_otherwise(tmp_path: Path) -> None:
    """SmolLM2-135M at 0.7 drifts into word salad; its model card recommends temperature 0.2, top_p 0.9."""
    values: dict[str, Any] = {"llm_provider": "llamacpp", "llamacpp_model_path": "package:smollm2"}
    smollm2 = Settings.model_construct(**values)  # unvalidated: the smollm2 extra need not be installed
    assert temperature_of(smollm2) == 0.2 and packaged_of(smollm2) == PACKAGED_MODELS["smollm2"]
    assert temperature_of(Settings.model_construct(**values, llm_temperature=0.9)) == 0.9
    assert temperature_of(Settings(_env_file=None)) == DEFAULT_TEMPERATURE  # type: ignore[call-arg]
    model = tmp_path / "own.gguf"
    model.write_bytes(b"x")
    assert packaged_of(llamacpp_settings(tmp_path, model)) is None  # a file of one's own: the default
    assert temperature_of(llamacpp_settings(tmp_path, model)) == DEFAULT_TEMPERATURE


def test_the_llamacpp_request_carries_the_sampling(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    from backend.llm.base import GenerateOptions
    from backend.llm.llamacpp import LlamaCppLLM

    llm = LlamaCppLLM(object(), model_name="m.gguf", temperature=0.2, top_p=0.9)
    request = llm.request([{"role": "user", "content": "hi"}], GenerateOptions(purpose="dialogue"), None)
    assert (request["temperature"], request["top_p"]) == (0.2, 0.9) and "top_k" not in request
    hotter = llm.request([], GenerateOptions(purpose="dialogue", temperature=0.5), None)
    assert hotter["temperature"] == 0.5 and hotter["top_p"] == 0.9
