"""`machi whisper AGENT "text"`: through a running server, or one served for it."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from backend.cli import main
from backend.config import Settings
from backend.simulate.server import ServerThread
from tests.intention.helpers import PARTY


@pytest.fixture
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    for key, value in (("DATABASE_URL", url), ("LLM_PROVIDER", "scripted"), ("LOAD_DEMO_WORLD", "true")):
        monkeypatch.setenv(key, value)
    return settings.model_copy(update={"database_url": url, "load_demo_world": True})


def test_whisper_through_a_running_server(env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    with ServerThread(env) as url:
        assert main(["whisper", "aoi", PARTY, "--server", url, "--day", "1", "--time", "9"]) == 0
        assert PARTY in capsys.readouterr().out
        assert httpx.get(f"{url}/v1/agents/aoi").json()["intentions"] == PARTY
        assert main(["whisper", "nobody", PARTY, "--server", url]) == 2
        assert "nobody" in capsys.readouterr().err
        assert main(["whisper", "aoi", "", "--server", url]) == 2
        assert "text" in capsys.readouterr().err


def test_whisper_without_a_server_is_kept_in_the_database(
    env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["whisper", "hikari", "今日の15時に中央カフェで新作ケーキを出す"]) == 0
    with ServerThread(env) as url:
        assert httpx.get(f"{url}/v1/agents/hikari/intentions").json()["text"].startswith("今日の15時")
