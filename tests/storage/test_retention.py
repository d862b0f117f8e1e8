"""Retention (issue 21, point 15: 1,239 model calls had made a 42 MB database, and nothing was ever pruned):
the model-call trace and finished jobs are pruned by age and by count, in batches off the event loop, by the
server every PRUNE_INTERVAL_S; pending, running and failed jobs stay; the dashboard keeps working."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from backend.app import retention_rules
from backend.config import Settings
from backend.gametime import utcnow
from backend.jobs.models import Job
from backend.llm.base import GenerateOptions
from backend.llm.models import LLMCall
from backend.scripted import ScriptedLLM
from backend.storage import retention
from backend.storage.db import create_db_engine, init_db
from tests.conftest import drain, make_client

OLD = timedelta(days=10)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    made = create_db_engine(f"sqlite:///{tmp_path / 'machi.db'}")
    init_db(made)
    yield made
    made.dispose()


def _rules(settings: Settings, **limits: Any) -> list[retention.Rule]:
    return retention_rules(settings.model_copy(update=limits))


def _calls(engine: Engine, ages: list[timedelta]) -> None:
    """One trace row per age, oldest first (ids grow with time, as in a running server)."""
    now = utcnow()
    with Session(engine) as session:
        for age in ages:
            session.add(LLMCall(purpose="importance", raw_reply="x" * 2000, created_at=now - age))
        session.commit()


def _jobs(engine: Engine, rows: list[tuple[str, timedelta]]) -> None:
    now = utcnow()
    with Session(engine) as session:
        for status, age in rows:
            session.add(Job(kind="memory.rate", status=status, created_at=now - age, updated_at=now - age))
        session.commit()


def _ids(engine: Engine, model: Any, *where: Any) -> list[int]:
    with Session(engine) as session:
        return list(session.exec(select(model.id).where(*where).order_by(col(model.id))))


def test_calls_past_their_age_go_and_younger_ones_stay(engine: Engine, settings: Settings) -> None:
    _calls(engine, [OLD] * 4 + [timedelta(days=6)] * 3)
    gone = retention.prune_now(engine, _rules(settings, llm_call_retention_days=7, llm_call_retention_rows=0))
    assert gone == {"llm_calls": 4, "jobs": 0}
    assert _ids(engine, LLMCall) == [5, 6, 7]


def test_only_the_newest_calls_are_kept_past_the_count(engine: Engine, settings: Settings) -> None:
    _calls(engine, [timedelta(minutes=12 - i) for i in range(12)])
    gone = retention.prune_now(engine, _rules(settings, llm_call_retention_days=0, llm_call_retention_rows=5))
    assert gone["llm_calls"] == 7
    assert _ids(engine, LLMCall) == [8, 9, 10, 11, 12]


def test_zero_keeps_everything_and_the_newest_row_always_stays(engine: Engine, settings: Settings) -> None:
    _calls(engine, [OLD] * 3)
    forever = _rules(settings, llm_call_retention_days=0, llm_call_retention_rows=0)
    assert retention.prune_now(engine, forever)["llm_calls"] == 0 and len(_ids(engine, LLMCall)) == 3
    # Every row is past its age; the newest stays, so SQLite never hands a pruned call's id out again.
    assert retention.prune_now(engine, _rules(settings, llm_call_retention_days=1))["llm_calls"] == 2
    _calls(engine, [timedelta(0)])
    assert _ids(engine, LLMCall) == [3, 4]


def test_only_done_jobs_are_pruned(engine: Engine, settings: Settings) -> None:
    _jobs(engine, [("done", OLD), ("failed", OLD), ("pending", OLD), ("running", OLD)])
    _jobs(engine, [("done", timedelta(minutes=3 - i)) for i in range(3)] + [("pending", timedelta(0))])
    gone = retention.prune_now(engine, _rules(settings, job_retention_days=7, job_retention_rows=2))
    assert gone["jobs"] == 2  # the old done job by age, the oldest recent one by count
    with Session(engine) as session:
        left = [(job.id, job.status) for job in session.exec(select(Job).order_by(col(Job.id)))]
    assert left == [(2, "failed"), (3, "pending"), (4, "running"), (6, "done"), (7, "done"), (8, "pending")]


async def test_the_server_prunes_in_batches_off_the_event_loop(engine: Engine, settings: Settings) -> None:
    _calls(engine, [OLD] * 26)
    deletes: list[tuple[int, int]] = []  # (rows, thread) of each DELETE

    def seen(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith("DELETE"):
            deletes.append((cursor.rowcount, threading.get_ident()))

    event.listen(engine, "after_cursor_execute", seen)
    gone = await retention.prune(engine, _rules(settings), batch=10, pause_s=0)
    assert gone["llm_calls"] == 25
    assert [rows for rows, _ in deletes] == [10, 10, 5]  # three short transactions, not one long one
    assert threading.get_ident() not in {thread for _, thread in deletes}


def _wait_for(check: Any, what: str) -> None:
    for _ in range(400):
        if check():
            return
        time.sleep(0.05)
    pytest.fail(f"never happened: {what}")


def test_the_server_keeps_pruning_and_the_dashboard_keeps_working(
    settings: Settings, scripted: ScriptedLLM
) -> None:
    limits = {"llm_call_retention_rows": 3, "job_retention_rows": 2, "prune_interval_s": 0.05}
    with make_client(settings, scripted, **limits) as client:
        assert client.put("/v1/agents/hana", json={"name": "ハナ"}).status_code == 201
        app: Any = client.app
        engine = app.state.engine
        first = 0
        for text in ("朝のパン屋", "雨の図書館", "夜の公園", "駅の時計", "港の風"):
            body = {"type": "observation", "content": text}
            assert client.post("/v1/agents/hana/memories", json=body).status_code == 201
            drain(client)  # each memory rated by its own job and model call
            first = first or min(_ids(engine, LLMCall))  # read while there is nothing to prune yet
        say = partial(app.state.llm.generate, [{"role": "user", "content": "やあ"}])
        for _ in range(3):
            client.portal.call(partial(say, options=GenerateOptions(purpose="dialogue")))  # type: ignore[union-attr]
        _wait_for(lambda: len(_ids(engine, LLMCall)) == 3, "the trace pruned to LLM_CALL_RETENTION_ROWS")
        _wait_for(lambda: len(_ids(engine, Job, Job.status == "done")) == 2, "done jobs pruned")
        kept = [c["id"] for c in client.get("/v1/llm-calls").json()["calls"]]
        assert kept == sorted(_ids(engine, LLMCall), reverse=True) and first not in kept
        jobs = client.get("/v1/jobs", params={"status": "done"}).json()
        assert len(jobs["jobs"]) == 2 and jobs["counts"]["done"] == 2
        gone = client.get(f"/v1/llm-calls/{first}")
        assert gone.status_code == 404 and gone.json()["error"]["details"] == {"pruned": True}
        assert "LLM_CALL_RETENTION_ROWS" in gone.json()["error"]["message"]
        assert client.get(f"/v1/llm-calls/{kept[0]}").status_code == 200
        for page in ("/llm-calls", f"/llm-calls/{first}", f"/llm-calls/{kept[0]}", "/", "/agents/hana"):
            assert client.get(page).status_code == 200, page
        assert client.get("/v1/llm-calls/stats").status_code == 200
        assert client.get("/v1/agents/hana/memories").json()["total"] == 5  # the world itself is untouched
