"""The model-call trace holds at most LLM_CALL_RETENTION_ROWS rows at every moment, not only after the hourly
pruning: each insert keeps the table within the limit (the rows left are the newest), a process that starts
with the table past the limit brings it back before its first insert, and writers in two processes at once
(two engines, each with its own count) never pass it, on SQLite and PostgreSQL. The server is wired so."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from sqlalchemy import event, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import configure_mappers

from backend.config import Settings
from backend.llm import repo
from backend.llm.base import GenerateOptions
from backend.llm.models import LLMCall
from backend.llm.trace import DatabaseTraceSink
from backend.scripted import ScriptedLLM
from backend.storage.db import create_db_engine, init_db
from backend.storage.rows import build
from tests.conftest import make_client

LIMIT = 40


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    made = create_db_engine(database_url)
    init_db(made)
    configure_mappers()  # a bare trace write, before any ORM use
    yield made
    made.dispose()


def _call(n: int) -> LLMCall:
    return build(LLMCall, {"purpose": "dialogue", "raw_reply": f"返事{n}です" * 50, "messages": []})


def _count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(LLMCall)).scalar_one())


def _ids(engine: Engine) -> list[int]:
    with engine.connect() as conn:
        return [int(i) for i in conn.execute(select(LLMCall.id).order_by(LLMCall.id)).scalars()]  # type: ignore[arg-type]


async def test_each_insert_keeps_the_trace_within_its_limit(engine: Engine) -> None:
    sink = DatabaseTraceSink(engine, keep_rows=LIMIT)
    stored = []
    for n in range(LIMIT * 4):
        stored.append(await sink.record(_call(n)))
        assert _count(engine) <= LIMIT
    kept = _ids(engine)
    assert len(kept) >= LIMIT - sink.cap.margin and kept == stored[-len(kept) :]  # the newest


async def test_a_process_starting_past_the_limit_prunes_before_its_first_insert(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    await DatabaseTraceSink(engine).record(_call(0))
    with engine.begin() as conn:  # a trace kept under a higher limit, as a restart with a lower one finds it
        conn.execute(repo.insert(LLMCall), [_call(n).model_dump(exclude={"id"}) for n in range(1, LIMIT * 3)])
    monkeypatch.setattr(repo, "PRUNE_BATCH", 7)  # the catch-up goes in several batches
    sink = DatabaseTraceSink(engine, keep_rows=LIMIT)
    newest = await sink.record(_call(LIMIT * 3))
    assert _count(engine) <= LIMIT and max(_ids(engine)) == newest


def test_writers_in_two_processes_at_once_never_pass_the_limit(engine: Engine, database_url: str) -> None:
    second = create_db_engine(database_url)  # another process: its own engine and its own count
    sinks = [DatabaseTraceSink(engine, keep_rows=LIMIT), DatabaseTraceSink(second, keep_rows=LIMIT)]
    stop, seen = threading.Event(), [0]

    def watch() -> None:
        while not stop.is_set():
            seen[0] = max(seen[0], _count(second))

    def write(sink: DatabaseTraceSink, start: int) -> None:
        for n in range(start, start + LIMIT * 2):
            assert repo.insert_call(sink.engine, _call(n), sink.cap) is not None

    watcher = threading.Thread(target=watch)
    writers = [threading.Thread(target=write, args=(sinks[i % 2], i * 1000)) for i in range(6)]
    watcher.start()
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    watcher.join()
    second.dispose()
    assert 0 < seen[0] <= LIMIT and _count(engine) <= LIMIT


def test_an_insert_committing_late_does_not_pass_the_limit(engine: Engine, database_url: str) -> None:
    """An insert that took its id first but commits after another process's inserts and deletes (a slow
    commit): its row must not be left past the limit (PostgreSQL: the inserts take turns; SQLite: one writer)."""
    second = create_db_engine(database_url)
    slow, fast = DatabaseTraceSink(engine, keep_rows=LIMIT), DatabaseTraceSink(second, keep_rows=LIMIT)
    held, go = threading.Event(), threading.Event()

    def hold_first_commit(_conn: Any) -> None:
        if not held.is_set():
            held.set()
            go.wait(timeout=30)

    event.listen(engine, "commit", hold_first_commit)
    late = threading.Thread(target=repo.insert_call, args=(engine, _call(0), slow.cap))
    late.start()
    assert held.wait(timeout=30)  # its row is inserted, not yet committed

    def fill() -> None:  # up to the limit exactly, past at least one delete
        for n in range(1, LIMIT * 3):
            repo.insert_call(second, _call(n), fast.cap)
            if fast.cap.cut and _count(second) == LIMIT:
                return

    filler = threading.Thread(target=fill)
    filler.start()
    filler.join(timeout=3)  # done at once unless it waits for the held insert (then it goes on below)
    go.set()
    late.join()
    filler.join()
    second.dispose()
    assert _count(engine) <= LIMIT


def test_the_server_keeps_the_trace_within_its_limit_between_prunings(
    settings: Settings, scripted: ScriptedLLM
) -> None:
    limits = {"llm_call_retention_rows": 3, "prune_interval_s": 3600}
    with make_client(settings, scripted, **limits) as client:
        app: Any = client.app
        say = partial(app.state.llm.generate, [{"role": "user", "content": "こんにちは"}])
        for _ in range(8):
            client.portal.call(partial(say, options=GenerateOptions(purpose="dialogue")))  # type: ignore[union-attr]
            assert _count(app.state.engine) <= 3
        assert _count(app.state.engine) == 3


def test_no_limit_keeps_every_row(engine: Engine) -> None:
    sink = DatabaseTraceSink(engine, keep_rows=0)
    for n in range(LIMIT + 5):
        asyncio.run(sink.record(_call(n)))
    assert _count(engine) == LIMIT + 5
