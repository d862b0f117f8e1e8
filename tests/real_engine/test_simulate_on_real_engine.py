"""End to end on a real engine: `machi simulate --hours 2 --seed 1` with LLM_PROVIDER=llamacpp and the tiny model.

The tiny model's words are nonsense; every reply's structure comes from grammar-constrained decoding. The run
must finish with no 5xx (no 4xx either), and the summary says how the model's replies fared: repaired,
re-asked, failed, and how many lines fell back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.config import Settings
from backend.simulate.cli import run_simulation
from backend.simulate.server import ServerThread
from backend.simulate.summary import render
from tests.real_engine.conftest import N_CTX


def test_two_game_hours_of_the_demo_town_on_the_tiny_model(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=f"sqlite:///{tmp_path / 'machi.db'}",
        llm_provider="llamacpp",
        llamacpp_model_path=str(tiny_model),
        llamacpp_n_gpu_layers=0,
        llamacpp_n_ctx=N_CTX,
        llamacpp_threads=1,
        load_demo_world=True,
        llm_retry_backoff_s=0.0,
    )
    with ServerThread(settings) as url:
        summary = run_simulation(url, hours=2, seed=1)
    with capsys.disabled():
        print("\n" + render(summary))
    assert summary["server_errors"] == 0
    assert summary["errors"] == 0, summary["failures"]
    assert summary["turns"] > 0 and summary["conversations"] > 0
    assert summary["plans"] > 0 and summary["memories"] > 0
    model = summary["model"]
    assert model["calls"] > summary["turns"]  # turns, plans, ratings, reflections, emotion all ran
    assert set(model) == {"calls", "errors", "repaired", "reasked"}
