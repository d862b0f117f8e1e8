"""End to end: the headless stand-in world plays the demo town against the real server over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from backend.config import Settings
from backend.simulate import load_client_package
from backend.simulate.cli import run_simulation
from backend.simulate.server import ServerThread

#: 07:00-15:00 of day 1 with seed 1: long enough that every end rule fires (checked, not assumed, below).
HOURS, SEED, START = 8.0, 1, 7.0


@pytest.fixture(scope="module")
def town(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run the simulation once against a fresh server; return its summary and the server's own records."""
    folder = tmp_path_factory.mktemp("town")
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=f"sqlite:///{folder / 'machi.db'}",
        llm_provider="scripted",
        llm_retry_backoff_s=0.0,
        load_demo_world=True,
    )
    machi_client = load_client_package()
    with ServerThread(settings) as url:
        with machi_client.MachiClient(url) as client:
            agents = [a["id"] for a in client.agents()]
            before = {a: client.memories(a, limit=1)["total"] for a in agents}
        summary = run_simulation(url, hours=HOURS, seed=SEED, start_hour=START, run_id="e2e")
        with machi_client.MachiClient(url) as client:
            server_conversations = client._send("GET", "/v1/conversations", params={"limit": 500})
            plans = {a: client.plan(a, 1) for a in agents}
            names = {p["id"]: p["name"] for p in client.pois()}
    return {"summary": summary, "before": before, "conversations": server_conversations["conversations"],
            "plans": plans, "poi_names": names}  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_no_request_got_a_4xx_or_5xx(town: dict[str, Any]) -> None:
    summary = town["summary"]
    assert summary["errors"] == 0, summary["failures"]
    assert summary["failures"] == [] and summary["retries"] == 0
    assert summary["state_reports"] > 0 and summary["plan_requests"] > 0


@pytest.mark.slow
def test_conversations_happen_and_end_by_every_rule(town: dict[str, Any]) -> None:
    summary = town["summary"]
    assert summary["conversations"] >= 5
    assert {"max_turns", "farewell", "model"} <= set(summary["end_reasons"]), summary["end_reasons"]
    assert summary["streamed_turns"] > 0 and summary["turns"] > summary["streamed_turns"]
    by_session = {c["session_id"]: c for c in town["conversations"]}
    for conv in summary["conversation_log"]:
        stored = by_session[conv["session_id"]]
        assert stored["ended"], conv
        assert stored["end_reason"] == conv["end_reason"], (stored, conv)
        assert stored["turn_count"] == conv["turns"]
        if conv["end_reason"] == "max_turns":
            assert conv["turns"] == 8


@pytest.mark.slow
def test_memories_and_reflections_accumulate(town: dict[str, Any]) -> None:
    summary, before = town["summary"], town["before"]
    per_agent = summary["per_agent"]
    assert sum(per_agent["memories"].values()) > sum(before.values())
    talkers = {a for c in summary["conversation_log"] for a in c["agents"]}
    for agent in talkers:
        assert per_agent["memories"][agent] > before[agent], agent
        assert per_agent["reflections"][agent] >= 1, agent


@pytest.mark.slow
def test_agents_follow_their_plans(town: dict[str, Any]) -> None:
    summary = town["summary"]
    for agent, plan in town["plans"].items():
        planned_now = set(summary["plan_targets"][agent])
        visited = set(summary["visited"][agent])
        assert visited, f"{agent} never arrived anywhere"
        # Everywhere it went while awake was a point of interest its plan named, and it got to one of them.
        assert visited <= planned_now, (agent, visited, planned_now)
        in_plan = {item["poi_id"] for item in plan["items"]}
        assert visited <= in_plan, (agent, visited, in_plan)
