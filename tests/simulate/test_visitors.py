"""`machi simulate --visitors N`: scripted visitors walk up to agents and talk, against the real app."""

from __future__ import annotations

import argparse
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.config import DEFAULT_FAREWELLS, Settings
from backend.conversation.rules import has_farewell
from backend.moderation.wordlist import WordList
from backend.simulate import cli, load_client_package, visitor_lines
from backend.simulate.server import ServerThread
from backend.simulate.summary import render

WORDS = Path(__file__).resolve().parents[2] / "backend" / "moderation" / "words.txt"


def _settings(tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=f"sqlite:///{tmp_path / 'machi.db'}",
        llm_provider="scripted",
        load_demo_world=True,
        importance_batch_s=0.0,
        **overrides,
    )


@pytest.fixture(scope="module")
def visited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Any]]]:
    """Two game hours with two visitors whose every visit holds a rough line; the server stays up."""
    with ServerThread(_settings(tmp_path_factory.mktemp("visitors"))) as url:
        summary = cli.run_simulation(
            url, hours=2.0, seed=1, start_hour=9.0, run_id="vis", visitors=2, rough_share=1.0
        )
        yield url, summary


def _get(url: str, path: str, **params: Any) -> Any:
    machi_client = load_client_package()
    with machi_client.MachiClient(url) as client:
        return client._send("GET", path, params=params or None)


def test_visitor_lines_end_with_a_farewell_and_rough_ones_are_on_the_word_list() -> None:
    words, rng = WordList.from_file(WORDS), random.Random(3)
    for language in ("ja", "en"):
        for _ in range(20):
            lines = visitor_lines.visit_lines(rng, language, "葵", rough=True)
            assert 3 <= len(lines) <= 4 and has_farewell(lines[-1], DEFAULT_FAREWELLS)
            assert not any(has_farewell(line, DEFAULT_FAREWELLS) for line in lines[:-1])
            assert sum(words.find(line) is not None for line in lines) == 1
        calm = visitor_lines.visit_lines(rng, language, "葵")
        assert all(words.find(line) is None for line in calm)


@pytest.mark.slow
def test_visitors_talk_with_agents_between_the_agents_own_conversations(
    visited: tuple[str, dict[str, Any]],
) -> None:
    url, summary = visited
    visitors = summary["visitors"]
    assert summary["errors"] == 0 and summary["conversations"] > 0  # the agents still talked among themselves
    assert visitors["players"] == 2 and visitors["conversations"] >= 2
    log = visitors["conversation_log"]
    assert {c["player"] for c in log} == {"player:visitor-1", "player:visitor-2"}
    assert visitors["lines"] == sum(c["lines"] for c in log) // 2
    assert visitors["end_reasons"] == dict(Counter(c["end_reason"] for c in log))
    # Every visit had a rough line: those said were held back and answered with a deflection.
    assert visitors["held_back"] >= 1 and visitors["deflected"] >= visitors["held_back"]
    assert visitors["held_back"] == sum(c["held_back"] for c in log)
    text = render(summary)
    assert "visitors: 2, conversations: " in text and f"deflected replies: {visitors['deflected']}" in text


@pytest.mark.slow
def test_visitor_conversations_are_stored_with_their_player_participant(
    visited: tuple[str, dict[str, Any]],
) -> None:
    url, summary = visited
    log = summary["visitors"]["conversation_log"]
    listed = {c["session_id"]: c for c in _get(url, "/v1/conversations", limit=200)["conversations"]}
    for visit in log:
        stored = listed[visit["session_id"]]
        kinds = {p["id"]: p["kind"] for p in stored["participants"]}
        assert kinds == {visit["player"]: "player", visit["agent"]: "agent"}
        assert stored["ended"] and stored["turn_count"] == visit["lines"]
    held = [v for v in log if v["held_back"]][0]
    turns = _get(url, f"/v1/conversations/{held['session_id']}")["turns"]
    marked = [t for t in turns if t["moderation"]]
    assert marked and marked[0]["moderation"]["stage"] == "line" and marked[0]["speaker_id"] == held["player"]
    assert all("死ね" not in t["dialogue"] and "shit" not in t["dialogue"] for t in turns)
    players = {p["id"]: p for p in _get(url, "/v1/players")["players"]}
    assert players["player:visitor-1"]["display_name"] == "来場者1"
    assert players["player:visitor-2"]["language"] == "en"
    said = {pid: sum(v["lines"] // 2 for v in log if v["player"] == pid) for pid in players}
    assert all(players[pid]["lines"] == n for pid, n in said.items())


@pytest.mark.slow
def test_a_rate_limited_visitor_waits_instead_of_failing_the_run(tmp_path: Path) -> None:
    with ServerThread(_settings(tmp_path, player_lines_per_minute=2)) as url:
        summary = cli.run_simulation(url, hours=1.5, seed=2, start_hour=9.0, run_id="rate", visitors=1)
        stored = _get(url, "/v1/players/visitor-1")
    visitors = summary["visitors"]
    assert visitors["rate_limited"] > 0  # the server said 429 ...
    assert summary["errors"] == 0 and not summary["failures"]  # ... which the visitor waited out
    assert stored["lines"] == visitors["lines"]  # the refused lines were not stored, the waited ones were


def test_visitors_must_be_a_small_count(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(speed="max", api_key=None, server="http://127.0.0.1:9", hours=1.0, seed=1,
                              world=None, day=1, start_hour=6.0, json=None, max_fallback_share=0.1,
                              visitors=-1)  # fmt: skip
    assert cli._simulate(args, settings) == 2
    assert "--visitors must be 0-" in capsys.readouterr().err
