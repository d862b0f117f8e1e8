"""LLM_PROVIDER=llamacpp settings and the missing-extra message (no llama.cpp needed to run these)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from backend.config import Settings, describe_settings_error
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
