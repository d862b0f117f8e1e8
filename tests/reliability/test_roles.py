"""Process roles on one model server (issue 23): an API process commits its turns' background jobs and runs
none of them; a worker runs them with its own model-call budget (WORKER_LLM_CONCURRENCY). So a worker whose
backlog is stuck on the model never holds a turn up: the turn's call is the API process's own."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient

from backend.config import Settings
from backend.scripted import ScriptedLLM
from tests.conftest import make_client
from tests.conversation.helpers import add_agents, talk, turn
from tests.gated import GatedLLM

#: The purposes of background work (jobs): an API process must never make such a call.
BACKGROUND = {"importance", "reflection", "insight", "questions", "person", "plan"}
NAMES = {"aoi": "葵", "hikari": "ひかり"}


class RecordingLLM(ScriptedLLM):
    """Answers at once and records each call's purpose."""

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.purposes: list[str] = []

    async def complete(self, messages, *, options, schema=None):  # type: ignore[no-untyped-def]
        self.purposes.append(options.purpose)
        return await super().complete(messages, options=options, schema=schema)


def _until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _jobs(client: TestClient) -> dict[str, Any]:
    return client.get("/health").json()["jobs"]  # type: ignore[no-any-return]


def test_a_turn_is_not_held_up_by_a_worker_backlog_stuck_on_the_model(settings: Settings) -> None:
    shared = settings.model_copy(update={"job_poll_s": 0.05, "emotion_from_turn": True})
    api_llm, worker_llm = RecordingLLM(), GatedLLM(None)  # the worker's model server: stuck
    with (
        make_client(shared, api_llm, process_role="api", llm_concurrency=1) as api,
        make_client(shared, worker_llm, process_role="worker", worker_llm_concurrency=1) as worker,
    ):
        add_agents(api)
        talk(
            api, "aoi", "hikari", "backlog", NAMES
        )  # a whole conversation: observations, ratings, reflections
        _until(lambda: worker_llm.in_flight >= 1, "the worker to take a job to the model")
        backlog = _jobs(api)
        assert backlog["pending"] + backlog["running"] > 1  # the worker's queue is full and stuck

        reply = api.post("/v1/conversation/turn", json=turn("hikari", "aoi", "while-busy", []))
        assert reply.status_code == 200, reply.text
        assert reply.json()["fallback"] is False  # answered by the model, not by the deadline's fallback
        still = _jobs(api)
        assert still["pending"] + still["running"] >= backlog["pending"] + backlog["running"] - 1

        # The API process made only its turns' calls; the worker kept to its one call at a time.
        assert "dialogue" in api_llm.purposes and not BACKGROUND & set(api_llm.purposes)
        assert worker_llm.in_flight_max == 1

        worker_llm.open_gate(worker)
        _until(lambda: _jobs(api)["pending"] + _jobs(api)["running"] == 0, "the backlog to drain")
        assert _jobs(api)["failed"] == 0
        assert BACKGROUND & set(worker_llm.purposes)  # the background calls were the worker's


def test_each_process_kind_has_its_own_model_call_budget(settings: Settings) -> None:
    budget = settings.model_copy(
        update={"llm_provider": "ollama", "llm_concurrency": 2, "worker_llm_concurrency": 1}
    )
    assert budget.model_copy(update={"process_role": "api"}).resolved_llm_concurrency() == 2
    assert budget.model_copy(update={"process_role": "all"}).resolved_llm_concurrency() == 2
    assert budget.model_copy(update={"process_role": "worker"}).resolved_llm_concurrency() == 1
    unset = settings.model_copy(update={"llm_provider": "ollama", "process_role": "worker"})
    assert unset.resolved_llm_concurrency() == 1  # the provider's default when neither is set
