"""`machi simulate` reports only its own run and fails when too many lines fell back."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from backend.config import Settings
from backend.simulate import cli, load_client_package
from backend.simulate.server import ServerThread
from backend.simulate.summary import model_counts, own_counts


def _summary(turns: int, fallbacks: int) -> dict[str, Any]:
    return {"hours": 1, "seed": 1, "conversations": 1, "end_reasons": {}, "conversation_log": [],
            "turns": turns, "streamed_turns": 0, "fallbacks": fallbacks, "model": {}, "memories": 0,
            "reflections": 0, "plans": 0, "plan_versions": 0, "plan_requests": 0, "state_reports": 0,
            "errors": 0, "server_errors": 0, "retries": 0, "failures": []}  # fmt: skip


@pytest.mark.parametrize(("fallbacks", "limit", "code"), [(0, 0.1, 0), (1, 0.1, 0), (2, 0.1, 3), (9, 1.0, 0)])
def test_exit_code_follows_the_share_of_fallback_lines(
    monkeypatch: pytest.MonkeyPatch, settings: Settings, fallbacks: int, limit: float, code: int
) -> None:
    monkeypatch.setattr(cli, "run_simulation", lambda *a, **k: _summary(10, fallbacks))
    args = argparse.Namespace(speed="max", api_key=None, server="http://127.0.0.1:9", hours=1.0, seed=1,
                              world=None, day=1, start_hour=6.0, json=None, max_fallback_share=limit,
                              visitors=0)  # fmt: skip
    assert cli._simulate(args, settings) == code


def test_counts_are_the_difference_the_run_made() -> None:
    before = {"model": {"calls": 40, "errors": 1}, "memories": {"aoi": 100}, "reflections": {"aoi": 3}}
    after = {"model": {"calls": 52, "errors": 1}, "memories": {"aoi": 130, "ren": 4}, "reflections": {"aoi": 5},
             "plans": {"aoi": 1}, "plan_versions": 1}  # fmt: skip
    own = own_counts(before, after)
    assert own["model"] == {"calls": 12, "errors": 0}
    assert own["memories"] == {"aoi": 30, "ren": 4} and own["reflections"] == {"aoi": 2}
    assert own["plans"] == {"aoi": 1}


def _totals(url: str) -> tuple[int, int]:
    """Memories stored and model calls traced on the server so far, over all agents."""
    machi_client = load_client_package()
    with machi_client.MachiClient(url) as client:
        memories = sum(client.memories(a["id"], limit=1)["total"] for a in client.agents())
        calls = model_counts(client.llm_stats(window_s=30 * 86_400))["calls"]
    return memories, calls


@pytest.mark.slow
def test_a_second_run_on_the_same_server_reports_only_itself(tmp_path: Path) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=f"sqlite:///{tmp_path / 'machi.db'}",
        llm_provider="scripted",
        load_demo_world=True,
        importance_batch_s=0.0,
    )
    with ServerThread(settings) as url:
        start = _totals(url)
        first = cli.run_simulation(url, hours=1.5, seed=1, start_hour=9.0, run_id="one")
        middle = _totals(url)
        second = cli.run_simulation(url, hours=1.5, seed=2, start_hour=13.0, run_id="two")
        end = _totals(url)
    assert first["turns"] > 0 and second["turns"] > 0
    # Each run counts what it added; work a run left running (a reflection) may land after its count.
    assert 0 < first["memories"] <= middle[0] - start[0]
    assert 0 < first["model"]["calls"] <= middle[1] - start[1]
    assert 0 < second["memories"] <= end[0] - middle[0] + (middle[0] - start[0] - first["memories"])
    assert second["memories"] < end[0] - start[0]  # not the server's totals, which hold the first run too
    assert second["model"]["calls"] < end[1] - start[1]
