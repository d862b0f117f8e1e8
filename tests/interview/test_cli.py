"""`machi interview AGENT "question"` asks over HTTP: a running server (--server) or one it serves itself."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from backend.cli import main
from backend.config import Settings
from backend.simulate.server import ServerThread
from tests.interview.helpers import PARTY_JA


@pytest.fixture
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    for key, value in (("DATABASE_URL", url), ("LLM_PROVIDER", "scripted"), ("LOAD_DEMO_WORLD", "true")):
        monkeypatch.setenv(key, value)
    return settings.model_copy(update={"database_url": url, "load_demo_world": True})


def test_the_answer_of_a_running_servers_agent_is_printed(
    env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    with ServerThread(env) as url:
        memory = {"type": "observation", "content": PARTY_JA, "importance": 8}
        assert httpx.post(f"{url}/v1/agents/hikari/memories", json=memory).status_code == 201
        assert main(["interview", "hikari", "パーティーのこと、何か知ってる？", "--server", url]) == 0
        out, err = capsys.readouterr()
        assert "明日の19時に公園でパーティーをする" in out and "memories used" in err
        assert main(["interview", "nobody", "パーティーのこと？", "--server", url]) == 2
        assert "no agent 'nobody'" in capsys.readouterr().err
        assert main(["interview", "hikari", "", "--server", url]) == 2
        assert "question" in capsys.readouterr().err


def test_without_a_server_it_serves_the_configured_app_for_the_question(
    env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["interview", "aoi", "What do you know about the party?", "--json"]) == 0
    reply = json.loads(capsys.readouterr().out)
    assert (
        reply["agent_id"] == "aoi" and reply["fallback"] is False and "party" not in reply["answer"].lower()
    )
