"""`plan/now` answers within PLAN_DEADLINE_S whatever the model does: a day's first plan (intention revision,
then the plan: two model calls) that is not ready by then is answered from a stored fallback plan, and the
model's plan, made in the background, replaces it when it arrives (`plan.updated`). Nothing here measures time:
a reply that comes back while the model hangs for an hour is the deadline at work."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.config import Settings
from backend.events import Event
from backend.llm.models import LLMCall
from backend.memory.models import Memory
from tests.planning.test_plan_api import POIS, build_world
from tests.reliability.faulty import FaultyLLM
from tests.reliability.helpers import faulty_client, wait_until

#: The model layer's own timeout is far past the plan deadline, so only the deadline can answer in time.
SLOW = {"plan_deadline_s": 0.5, "llm_timeout_s": 120.0, "llm_max_retries": 0}
NOW = {"day": 1, "time_of_day": 9.0}


def _now(client: TestClient) -> dict[str, Any]:
    response = client.get("/v1/agents/aoi/plan/now", params=NOW)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _rows(client: TestClient, model: Any, **where: Any) -> list[Any]:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        query = select(model)
        for key, value in where.items():
            query = query.where(getattr(model, key) == value)
        return list(session.exec(query))


@pytest.mark.parametrize("hung", ["intention", "plan"])
def test_plan_now_answers_a_fallback_plan_while_the_model_hangs(settings: Settings, hung: str) -> None:
    # The first call hung, or the second one after the first answered: the deadline covers both.
    llm = FaultyLLM()
    llm.faults[hung] = "hang"
    with faulty_client(settings, llm, **SLOW) as client:
        build_world(client)
        first = _now(client)
        assert first["source"] == "fallback" and first["pending"] is True
        assert first["status"] == "active" and first["target_poi"]["id"] in POIS
        stored = client.get("/v1/agents/aoi/plan", params={"day": 1}).json()
        assert stored["source"] == "fallback" and stored["version"] == 1
        # Asked again while the model still hangs: the stored fallback at once, and no second model call.
        assert _now(client) == first
        assert llm.attempts.count(hung) == 1 and llm.attempts.count("intention") == 1
        assert client.get("/health").json()["status"] == "ok"  # the server keeps serving


def test_the_models_late_plan_replaces_the_fallback_and_is_announced(settings: Settings) -> None:
    llm = FaultyLLM()
    llm.gated = {"intention", "plan"}
    with faulty_client(settings, llm, **SLOW) as client:
        build_world(client)
        heard: list[Event[Any]] = []
        client.app.state.events.subscribe(heard.append, types=["plan.updated"])  # type: ignore[attr-defined]
        client.portal.call(_close_gate, llm)  # type: ignore[union-attr]
        first = _now(client)
        assert first["source"] == "fallback" and first["pending"] is True
        assert _now(client)["pending"] is True  # joined, not asked again
        client.portal.call(_open_gate, llm)  # type: ignore[union-attr]
        wait_until(lambda: len(heard) == 2, what="the model's plan.updated")
        assert [(e.payload.source, e.payload.version) for e in heard] == [("fallback", 1), ("model", 2)]
        # The event is published from inside the plan work, which then finishes: on a loaded machine a
        # plan/now right after it may still see the work pending for a moment.
        wait_until(lambda: _now(client)["pending"] is False, what="the plan work to finish")
        later = _now(client)
        assert later["source"] == "model" and later["pending"] is False
        stored = client.get("/v1/agents/aoi/plan", params={"day": 1}).json()
        assert stored["version"] == 2 and stored["items"] == heard[1].payload.items
        # The background work ran once and was traced; one plan memory, the model's (the fallback leaves none).
        assert llm.attempts.count("intention") == 1 and llm.attempts.count("plan") == 1
        assert {row.purpose for row in _rows(client, LLMCall, ok=True)} >= {"intention", "plan"}
        [memory] = _rows(client, Memory, agent_id="aoi", type="plan")
        assert memory.content.startswith("1日目の予定")


def test_a_replan_during_the_late_first_plan_runs_after_it(settings: Settings) -> None:
    # POST /plan waits for the first plan still on its way, so that plan cannot overwrite the replan.
    llm = FaultyLLM()
    llm.gated = {"intention"}  # the first plan is held; the replan itself would need no intention call
    with faulty_client(settings, llm, **SLOW) as client:
        build_world(client)
        tasks = client.app.state.tasks  # type: ignore[attr-defined]
        client.portal.call(_close_gate, llm)  # type: ignore[union-attr]
        assert _now(client)["pending"] is True and tasks.pending == 1
        body = {"day": 1, "time_of_day": 12.0, "reason": "雨が降ってきた"}
        with ThreadPoolExecutor(1) as pool:
            replan = pool.submit(client.post, "/v1/agents/aoi/plan", json=body)
            wait_until(lambda: tasks.pending == 2, what="the replan to queue behind the first plan")
            assert not replan.done() and llm.attempts.count("plan") == 0
            client.portal.call(_open_gate, llm)  # type: ignore[union-attr]
            answer = replan.result(30)
        assert answer.status_code == 200, answer.text
        assert answer.json()["version"] == 3 and answer.json()["reason"] == "雨が降ってきた"
        stored = client.get("/v1/agents/aoi/plan", params={"day": 1}).json()
        assert stored == answer.json()
        assert llm.attempts.count("intention") == 1 and llm.attempts.count("plan") == 2


async def _close_gate(llm: FaultyLLM) -> None:
    import asyncio

    llm.gate = asyncio.Event()


async def _open_gate(llm: FaultyLLM) -> None:
    assert llm.gate is not None
    llm.gate.set()
