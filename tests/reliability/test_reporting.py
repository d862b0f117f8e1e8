"""Where the queue reports: /health, GET /v1/llm-calls/stats, /metrics (per app, no global registry)."""

from __future__ import annotations

from backend.config import Settings
from tests.conftest import drain, make_client
from tests.conversation.helpers import add_agents, talk
from tests.reliability.faulty import FaultyLLM
from tests.reliability.helpers import faulty_client


def test_health_stats_and_metrics_report_the_queue(settings: Settings) -> None:
    llm = FaultyLLM()
    with faulty_client(settings, llm, llm_concurrency=2) as client:
        add_agents(client)
        replies = talk(client, "aoi", "hikari", "report-1", {"aoi": "葵", "hikari": "ひかり"})
        drain(client)
        queue = client.get("/health").json()["llm_queue"]
        assert queue["concurrency"] == 2 and queue["in_flight"] == 0 and queue["queued"] == 0
        assert queue["priorities"]["turn"]["granted"] == len(replies)
        assert queue["priorities"]["background"]["granted"] > 0  # ratings, reflections, emotion
        stats = client.get("/v1/llm-calls/stats", params={"window_s": 600}).json()
        purposes = {p["purpose"]: p for p in stats["purposes"]}
        assert purposes["dialogue"]["calls"] == len(replies) and purposes["dialogue"]["errors"] == 0
        # A conversation's lines are rated by its reflection: no importance call of their own; person memory
        # rides on the same end-of-conversation call: no person call of its own.
        assert "reflection" in purposes and not {"importance", "person"} & set(purposes)
        assert purposes["reflection"]["calls"] == 2  # one per participant
        assert stats["turns"] == len(replies) and stats["fallback_turns"] == 0
        other = client.get("/v1/llm-calls/stats", headers={"X-Machi-World": "elsewhere"}).json()
        assert other["purposes"] == [] and other["turns"] == 0  # per world
        text = client.get("/metrics").text
        assert f'machi_llm_calls_total{{priority="turn"}} {float(len(replies))}' in text
        assert 'machi_llm_queue_depth{priority="background"} 0.0' in text
        assert 'machi_jobs{status="pending"} 0.0' in text and "machi_turn_fallbacks_total 0.0" in text


def test_two_apps_in_one_process_keep_separate_metrics(settings: Settings, scripted) -> None:  # type: ignore[no-untyped-def]
    llm = FaultyLLM()
    llm.faults["dialogue"] = "raise"
    with faulty_client(settings, llm, llm_max_retries=0) as first:
        add_agents(first)
        first.post("/v1/conversation/turn", json={"agent_id": "aoi", "target_id": "hikari", "session_id": "m1",
                                                  "history": [], "time_of_day": 10})  # fmt: skip
        first_text = first.get("/metrics").text
    other = settings.model_copy(update={"database_url": settings.database_url.replace("machi.db", "b.db")})
    with make_client(other, scripted) as second:
        second_text = second.get("/metrics").text
    assert "machi_turn_fallbacks_total 1.0" in first_text
    assert "machi_turn_fallbacks_total 0.0" in second_text
