"""Fault injection: a provider that raises, hangs, or answers garbage. Live turns still answer (with a fallback
inside the deadline), background jobs retry later with backoff, and the server keeps serving."""

from __future__ import annotations

import threading
from datetime import UTC

import pytest
from fastapi.testclient import TestClient

from backend.config import Settings
from backend.llm.scheduler import find_scheduler
from tests.conftest import drain
from tests.conversation.helpers import add_agents, turn
from tests.reliability.faulty import FaultyLLM
from tests.reliability.helpers import faulty_client, jobs, wait_until

FAST = {"turn_deadline_s": 2.0, "llm_timeout_s": 0.5, "llm_max_retries": 1, "job_backoff_s": 30.0}


@pytest.mark.parametrize("fault", ["raise", "hang", "garbage"])
def test_every_live_turn_answers_with_a_fallback(settings: Settings, fault: str) -> None:
    llm = FaultyLLM()
    llm.faults["dialogue"] = fault
    with faulty_client(settings, llm, **FAST) as client:
        add_agents(client)
        for i in range(3):
            response = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", f"s-{fault}-{i}", []))
            assert response.status_code == 200, response.text
            reply = response.json()
            assert reply["fallback"] is True and reply["dialogue"]
        # The server keeps serving, and says how many turns fell back.
        health = client.get("/health").json()
        assert health["status"] == "ok" and health["llm_queue"]["fallbacks"] == 3
        stats = client.get("/v1/llm-calls/stats").json()
        assert stats["fallback_turns"] == 3 and stats["turns"] == 3
        dialogue = next(p for p in stats["purposes"] if p["purpose"] == "dialogue")
        assert dialogue["errors"] == dialogue["calls"] >= 3
        drain(client)
        # The fallback line is still remembered by both agents (the observe job does not need the model).
        observed = jobs(client, kind="conversation.observe")
        assert len(observed) == 3 and {job.status for job in observed} == {"done"}


def test_background_jobs_retry_later_with_backoff_then_succeed(settings: Settings) -> None:
    llm = FaultyLLM()
    llm.faults["importance"] = "raise"
    with faulty_client(settings, llm, **FAST) as client:
        add_agents(client)
        created = client.post(
            "/v1/agents/aoi/memories", json={"type": "observation", "content": "雨が降ってきた"}
        )
        assert created.status_code == 201
        drain(client)
        [job] = jobs(client, kind="memory.rate")
        assert job.status == "pending" and job.attempts == 1 and "rating failed" in (job.last_error or "")
        assert job.run_after.replace(tzinfo=UTC) > job.updated_at.replace(tzinfo=UTC)  # later, not now
        listed = client.get("/v1/jobs", params={"status": "pending"}).json()
        assert [j["id"] for j in listed["jobs"]] == [job.id] and listed["counts"]["pending"] == 1
        memory = client.get("/v1/agents/aoi/memories").json()["memories"][0]
        assert memory["importance_source"] == "provisional"  # kept, not lost
        # The provider recovers; the retry (made due now instead of waiting 30 s) rates the memory once.
        llm.faults.clear()
        _make_due(client, job.id or 0)
        wait_until(lambda: jobs(client, kind="memory.rate")[0].status == "done", what="the retried job")
        memory = client.get("/v1/agents/aoi/memories").json()["memories"][0]
        assert memory["importance_source"] == "model"
        assert jobs(client, kind="memory.rate")[0].attempts == 2


def test_a_job_that_keeps_failing_ends_failed_with_its_error(settings: Settings) -> None:
    llm = FaultyLLM()
    llm.faults["importance"] = "garbage"
    with faulty_client(settings, llm, **{**FAST, "job_backoff_s": 0.0, "job_max_attempts": 3}) as client:
        add_agents(client)
        client.post("/v1/agents/aoi/memories", json={"type": "observation", "content": "猫が屋根で寝ていた"})
        wait_until(lambda: jobs(client, kind="memory.rate")[0].status == "failed", what="the job to give up")
        [job] = jobs(client, kind="memory.rate")
        assert job.attempts == 3 and "rating failed" in (job.last_error or "")
        failed = client.get("/v1/jobs", params={"status": "failed"}).json()["jobs"]
        assert [j["id"] for j in failed] == [job.id]
        assert client.get("/health").json()["jobs"]["failed"] == 1


def test_a_live_turn_completes_while_ten_background_jobs_are_queued(settings: Settings) -> None:
    llm = FaultyLLM()
    with faulty_client(settings, llm, llm_concurrency=1, job_workers=16) as client:
        add_agents(client)
        app = client.app
        scheduler = find_scheduler(app.state.llm)  # type: ignore[attr-defined]
        assert scheduler is not None
        client.portal.call(_close_gate, llm)  # type: ignore[union-attr]
        # Eleven rating jobs: one holds the only slot (the provider is stuck), ten wait behind it.
        for i in range(11):
            body = {"type": "observation", "content": f"{i}番目の出来事があった", "tags": [f"t{i}"]}
            assert client.post("/v1/agents/aoi/memories", json=body).status_code == 201
        wait_until(
            lambda: scheduler.snapshot()["priorities"]["background"]["waiting"] == 10, what="the queue"
        )
        replies: list[dict] = []
        worker = threading.Thread(target=lambda: replies.append(_turn(client)))
        worker.start()
        wait_until(
            lambda: scheduler.snapshot()["priorities"]["turn"]["waiting"] == 1, what="the turn to queue"
        )
        client.portal.call(_open_gate, llm)  # type: ignore[union-attr]
        worker.join(timeout=30)
        assert replies and replies[0]["fallback"] is False
        drain(client)
        granted = [(r.purpose, r.priority) for r in scheduler.records]
        turn_at = granted.index(("dialogue", 0))
        # Only the call already holding the slot went before the turn; all ten queued ones after it.
        assert [p for p, _ in granted[:turn_at]] == ["importance"]
        assert [p for p, _ in granted[turn_at + 1 : turn_at + 11]] == ["importance"] * 10
        assert {job.status for job in jobs(client, kind="memory.rate")} == {"done"}


def _turn(client: TestClient) -> dict:
    response = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "queued-turn", []))
    assert response.status_code == 200, response.text
    return dict(response.json())


async def _close_gate(llm: FaultyLLM) -> None:
    import asyncio

    llm.gate = asyncio.Event()


async def _open_gate(llm: FaultyLLM) -> None:
    assert llm.gate is not None
    llm.gate.set()


def _make_due(client: TestClient, job_id: int) -> None:
    from sqlalchemy import update
    from sqlmodel import Session

    from backend.gametime import utcnow
    from backend.jobs.models import Job

    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        session.execute(update(Job).where(Job.id == job_id).values(run_after=utcnow()))  # type: ignore[arg-type]
        session.commit()
