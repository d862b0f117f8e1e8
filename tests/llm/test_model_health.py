"""`/health` says whether the model answers now, from the real calls (a model server that died shows at the
next call, not only at start-up) and, when no call has run for LLM_HEALTH_PROBE_IDLE_S, from the provider's
cheap check; /health itself never waits on the model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.config import Settings
from backend.errors import LLMTimeout, LLMUnavailable
from backend.llm.base import GenerateOptions
from backend.llm.health import HealthLLM, ModelHealth, watch
from backend.scripted import ScriptedLLM
from tests.conftest import drain
from tests.conversation.helpers import add_agents, turn
from tests.reliability.faulty import FaultyLLM
from tests.reliability.helpers import faulty_client, wait_until


class CheckedLLM(ScriptedLLM):
    """The scripted engine with a provider check that can be made to fail or hang."""

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.check_says: str | BaseException = "fake server: scripted ready"
        self.hang = False
        self.checks = 0

    async def check(self) -> str:
        self.checks += 1
        if self.hang:
            await asyncio.sleep(3600)
        if isinstance(self.check_says, BaseException):
            raise self.check_says
        return self.check_says


def health(client: TestClient) -> dict[str, Any]:
    response = client.get("/health")
    assert response.status_code == 200
    return dict(response.json())


def talk(client: TestClient, session: str) -> dict[str, Any]:
    response = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", session, []))
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_health_follows_the_real_calls_when_the_model_dies_and_comes_back(settings: Settings) -> None:
    llm = FaultyLLM()
    with faulty_client(settings, llm, llm_max_retries=0, llm_health_probe_idle_s=0) as client:
        add_agents(client)
        assert talk(client, "h-1")["fallback"] is False
        alive = health(client)
        assert alive["llm_reachable"] is True and alive["llm_health"]["last_success_at"]
        drain(client)
        llm.faults.update(dialogue="raise", background="raise")  # the model server died
        assert talk(client, "h-2")["fallback"] is True
        dead = health(client)
        assert dead["llm_reachable"] is False and "injected: the provider is down" in dead["llm_detail"]
        report = dead["llm_health"]
        assert report["checked_by"] == "call" and "llm_unavailable" in report["last_error"]
        assert report["recent_failures"] >= 1 and 0 < report["recent_failure_share"] < 1
        assert report["last_failure_at"] >= report["last_success_at"]
        llm.faults.clear()  # back up
        assert talk(client, "h-3")["fallback"] is False
        again = health(client)
        assert again["llm_reachable"] is True and again["llm_health"]["last_error"]  # the last error is kept


def test_a_reply_that_fails_its_schema_still_counts_as_an_answer(settings: Settings) -> None:
    llm = FaultyLLM()
    llm.faults["dialogue"] = "garbage"
    with faulty_client(settings, llm, llm_health_probe_idle_s=0) as client:
        add_agents(client)
        assert talk(client, "h-4")["fallback"] is True
        body = health(client)
        assert body["llm_reachable"] is True and body["llm_health"]["recent_failures"] == 0


def test_an_idle_model_is_probed_again(settings: Settings) -> None:
    llm = CheckedLLM()
    with faulty_client(settings, llm, llm_health_probe_idle_s=0.05) as client:  # type: ignore[arg-type]
        wait_until(lambda: health(client)["llm_reachable"] is True, what="the start-up check")
        assert health(client)["llm_detail"] == "fake server: scripted ready"
        llm.check_says = LLMUnavailable("cannot reach the fake server")  # no call runs meanwhile
        wait_until(lambda: health(client)["llm_reachable"] is False, what="an idle probe to fail")
        body = health(client)
        assert body["llm_health"]["checked_by"] == "probe" and body["llm_health"]["last_probe_ok"] is False
        assert "cannot reach the fake server" in body["llm_detail"]
        llm.check_says = "fake server: back"
        wait_until(lambda: health(client)["llm_reachable"] is True, what="an idle probe to succeed")
        assert health(client)["llm_detail"] == "fake server: back"


def test_health_answers_while_the_check_hangs(settings: Settings) -> None:
    llm = CheckedLLM()
    llm.hang = True
    with faulty_client(settings, llm) as client:  # type: ignore[arg-type]
        wait_until(lambda: llm.checks == 1, what="the start-up check to begin")
        body = health(client)  # answered from what is known: the check is still running
        assert body["llm_reachable"] is None and body["llm_detail"] == "not checked yet"


def test_with_idle_probing_off_the_check_runs_once() -> None:
    llm, model_health = CheckedLLM(), ModelHealth(300)
    asyncio.run(watch(model_health, llm, 0))  # returns: nothing left to do
    assert llm.checks == 1 and model_health.reachable is True and model_health.checked_by == "probe"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_failure_share_covers_the_window_only() -> None:
    clock = Clock()
    model_health = ModelHealth(60, clock=clock)
    for ok in (False, False, True):
        model_health.record_call(ok, None if ok else "llm_timeout: slow")
    assert model_health.snapshot()["recent_failure_share"] == pytest.approx(0.667)
    clock.now += 61
    model_health.record_call(True)
    snap = model_health.snapshot()
    assert (snap["recent_calls"], snap["recent_failures"], snap["recent_failure_share"]) == (1, 0, 0.0)
    assert snap["last_error"] == "llm_timeout: slow" and model_health.idle_for() == 0


def test_streams_are_recorded_once_per_call() -> None:
    async def run() -> ModelHealth:
        scripted, model_health = ScriptedLLM(seed=0), ModelHealth(300)
        llm = HealthLLM(scripted, model_health)
        options = GenerateOptions(purpose="dialogue")
        scripted.enqueue("a long enough reply to come in several pieces")
        pieces = llm.stream([{"role": "user", "content": "hi"}], options=options)
        await pieces.__anext__()
        await pieces.aclose()  # the caller stopped reading: the model had answered
        scripted.enqueue(LLMTimeout("the model did not finish within 1 s"))
        with pytest.raises(LLMTimeout):
            async for _ in llm.stream([{"role": "user", "content": "hi"}], options=options):
                pass
        return model_health

    snap = asyncio.run(run()).snapshot()
    assert (snap["recent_calls"], snap["recent_failures"]) == (2, 1)
    assert snap["last_error"].startswith("llm_timeout")
