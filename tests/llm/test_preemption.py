"""Preemption through the scheduler: on a preemptible provider, a live turn that must wait stops the
background call that holds the slot; that call runs again from the start and its caller gets its reply."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import configure_mappers

from backend.config import Settings
from backend.llm.base import (
    LLM,
    PRIORITY_BACKGROUND,
    PRIORITY_COUNCIL,
    PRIORITY_PLAN,
    PRIORITY_TURN,
    Completion,
    GenerateOptions,
    Message,
)
from backend.llm.scheduler import PREEMPTED, Scheduler, SchedulingLLM
from backend.llm.trace import DatabaseTraceSink, TracingLLM
from backend.storage.db import create_db_engine, init_db
from tests.llm.test_stack import traces

MESSAGES = [{"role": "user", "content": "x"}]


class OneSlotEngine(LLM):
    """A provider that works on one call at a time until `release(purpose)`; records what happened."""

    name = "one-slot"

    def __init__(self, *, preemptible: bool = True) -> None:
        self.preemptible = preemptible
        self.log: list[str] = []
        self.busy = 0
        self.max_busy = 0
        self._gates: dict[str, asyncio.Event] = {}

    def gate(self, purpose: str) -> asyncio.Event:
        return self._gates.setdefault(purpose, asyncio.Event())

    async def complete(
        self, messages: Sequence[Message], *, options: GenerateOptions, schema: dict[str, Any] | None = None
    ) -> Completion:
        self.busy += 1
        self.max_busy = max(self.max_busy, self.busy)
        self.log.append(f"start {options.purpose}")
        try:
            await self.gate(options.purpose).wait()
        except asyncio.CancelledError:
            self.log.append(f"stopped {options.purpose}")
            raise
        finally:
            self.busy -= 1
        self.log.append(f"end {options.purpose}")
        return Completion(f"reply to {options.purpose}")


def _options(purpose: str, priority: int) -> GenerateOptions:
    return GenerateOptions(purpose=purpose, priority=priority)


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_turn_preempts_the_running_background_call_which_runs_again_later() -> None:
    engine = OneSlotEngine()
    scheduler = Scheduler(1)
    llm = SchedulingLLM(engine, scheduler)
    background = asyncio.create_task(
        llm.generate(MESSAGES, options=_options("reflection", PRIORITY_BACKGROUND))
    )
    await _settle()
    assert engine.log == ["start reflection"]
    turn = asyncio.create_task(llm.generate(MESSAGES, options=_options("dialogue", PRIORITY_TURN)))
    await _settle()
    assert engine.log == ["start reflection", "stopped reflection", "start dialogue"]
    assert not background.done()  # its caller just waits longer
    engine.gate("dialogue").set()
    assert await turn == "reply to dialogue"
    await _settle()
    assert engine.log[-1] == "start reflection"  # from the start, once the turn is done
    engine.gate("reflection").set()
    assert await background == "reply to reflection"
    assert engine.max_busy == 1
    snapshot = scheduler.snapshot()["priorities"]
    assert snapshot["background"]["preempted"] == 1
    assert snapshot["background"]["completed"] == 1 and snapshot["background"]["errors"] == 0
    assert [r.purpose for r in scheduler.records] == ["reflection", "dialogue", "reflection"]
    assert scheduler.in_flight == 1 - 1 and scheduler.snapshot()["queued"] == 0


async def test_a_preempted_call_goes_back_first_among_its_priority() -> None:
    engine = OneSlotEngine()
    scheduler = Scheduler(1)
    llm = SchedulingLLM(engine, scheduler)
    first = asyncio.create_task(llm.generate(MESSAGES, options=_options("reflection", PRIORITY_BACKGROUND)))
    await _settle()
    queued = asyncio.create_task(llm.generate(MESSAGES, options=_options("importance", PRIORITY_BACKGROUND)))
    turn = asyncio.create_task(llm.generate(MESSAGES, options=_options("dialogue", PRIORITY_TURN)))
    await _settle()
    for purpose in ("dialogue", "reflection", "importance"):
        engine.gate(purpose).set()
    await asyncio.gather(first, queued, turn)
    assert [r.purpose for r in scheduler.records] == ["reflection", "dialogue", "reflection", "importance"]


async def test_only_calls_someone_waits_for_preempt_and_only_on_a_preemptible_provider() -> None:
    for preemptible, waiter, expect_stop in [
        (True, ("plan", PRIORITY_PLAN), False),  # a plan waits its turn in the queue
        (False, ("dialogue", PRIORITY_TURN), False),  # a batched server: the turn only queues first
        # An interview (or a council call) does not wait out a reflection: on SmolLM2 one holds the model
        # 15-22 s, and interviews queued behind them ran out of their 30 s deadline.
        (True, ("interview", PRIORITY_COUNCIL), True),
    ]:
        engine = OneSlotEngine(preemptible=preemptible)
        llm = SchedulingLLM(engine, Scheduler(1))
        background = asyncio.create_task(
            llm.generate(MESSAGES, options=_options("reflection", PRIORITY_BACKGROUND))
        )
        await _settle()
        other = asyncio.create_task(llm.generate(MESSAGES, options=_options(*waiter)))
        await _settle()
        assert ("stopped reflection" in engine.log) is expect_stop
        engine.gate("reflection").set()
        engine.gate(waiter[0]).set()
        await asyncio.gather(background, other)
        assert engine.log.count("start reflection") == 1 + expect_stop  # a stopped call runs again


async def test_a_streamed_turn_is_never_preempted() -> None:
    engine = OneSlotEngine()
    scheduler = Scheduler(1)
    llm = SchedulingLLM(engine, scheduler)
    engine.gate("dialogue").set()

    async def streamed() -> str:
        return "".join(
            [piece async for piece in llm.stream(MESSAGES, options=_options("dialogue", PRIORITY_TURN))]
        )

    # A stream holds its slot until its last piece; a second turn waits for it (no preemption between turns).
    engine.gate("dialogue").clear()
    first = asyncio.create_task(streamed())
    await _settle()
    second = asyncio.create_task(llm.generate(MESSAGES, options=_options("dialogue", PRIORITY_TURN)))
    await _settle()
    assert "stopped dialogue" not in engine.log
    engine.gate("dialogue").set()
    assert await first == "reply to dialogue" and await second == "reply to dialogue"


async def test_each_waiting_turn_stops_at_most_one_call() -> None:
    engine = OneSlotEngine()
    scheduler = Scheduler(2)
    llm = SchedulingLLM(engine, scheduler)
    calls = [
        asyncio.create_task(llm.generate(MESSAGES, options=_options(purpose, PRIORITY_BACKGROUND)))
        for purpose in ("reflection", "person")
    ]
    await _settle()
    turn = asyncio.create_task(llm.generate(MESSAGES, options=_options("dialogue", PRIORITY_TURN)))
    await _settle()
    assert engine.log.count("stopped person") + engine.log.count("stopped reflection") == 1
    assert engine.log.count("stopped person") == 1  # the latest started of the least urgent
    for purpose in ("dialogue", "reflection", "person"):
        engine.gate(purpose).set()
    await asyncio.gather(turn, *calls)


async def test_a_cancelled_caller_is_not_run_again() -> None:
    engine = OneSlotEngine()
    llm = SchedulingLLM(engine, Scheduler(1))
    background = asyncio.create_task(
        llm.generate(MESSAGES, options=_options("reflection", PRIORITY_BACKGROUND))
    )
    await _settle()
    background.cancel()
    await asyncio.gather(background, return_exceptions=True)
    assert background.cancelled()
    await _settle()
    assert engine.log == ["start reflection", "stopped reflection"]


async def test_the_trace_says_the_call_was_preempted(settings: Settings) -> None:
    db = create_db_engine(settings.database_url)
    init_db(db)
    # The app has used the ORM before its first trace; a bare trace write needs the mappers configured.
    configure_mappers()
    engine = OneSlotEngine()
    llm = SchedulingLLM(TracingLLM(engine, DatabaseTraceSink(db)), Scheduler(1))
    background = asyncio.create_task(
        llm.generate(MESSAGES, options=_options("reflection", PRIORITY_BACKGROUND))
    )
    await _settle()
    turn = asyncio.create_task(llm.generate(MESSAGES, options=_options("dialogue", PRIORITY_TURN)))
    await _settle()
    for purpose in ("dialogue", "reflection"):
        engine.gate(purpose).set()
    await asyncio.gather(background, turn)
    rows = traces(db)
    db.dispose()
    assert (rows[0].purpose, rows[0].ok) == ("reflection", False)
    assert PREEMPTED in (rows[0].error or "")
    assert [(c.purpose, c.ok) for c in rows[1:]] == [("dialogue", True), ("reflection", True)]


class ReadingEngine(OneSlotEngine):
    """A one-slot engine that can read a prompt ahead: `prefill` runs until `gate("prefill")` is set."""

    can_prefill = True

    async def prefill(self, messages: Sequence[Message], *, options: GenerateOptions, upto: str) -> bool:
        self.log.append("start prefill")
        try:
            await self.gate("prefill").wait()
        except asyncio.CancelledError:
            self.log.append("stopped prefill")
            raise
        self.log.append("end prefill")
        return True


async def test_a_read_ahead_stops_a_background_call_on_its_first_run_only() -> None:
    engine = ReadingEngine()
    scheduler = Scheduler(1)
    llm = SchedulingLLM(engine, scheduler)
    background = asyncio.create_task(
        llm.generate(MESSAGES, options=_options("reflection", PRIORITY_BACKGROUND))
    )
    await _settle()
    first = asyncio.create_task(llm.prefill(MESSAGES, options=_options("dialogue", PRIORITY_TURN), upto="x"))
    await _settle()
    assert engine.log == ["start reflection", "stopped reflection", "start prefill"]
    engine.gate("prefill").set()
    assert await first is True
    await _settle()
    assert engine.log[-1] == "start reflection"  # run again from the start
    # Run again, the reflection is not stopped by a second read-ahead: that one waits for it.
    engine.gate("prefill").clear()
    second = asyncio.create_task(llm.prefill(MESSAGES, options=_options("dialogue", PRIORITY_TURN), upto="x"))
    await _settle()
    assert engine.log.count("stopped reflection") == 1 and engine.log[-1] == "start reflection"
    engine.gate("reflection").set()
    assert await background == "reply to reflection"
    engine.gate("prefill").set()
    assert await second is True
    assert engine.log[-2:] == ["start prefill", "end prefill"]
    assert scheduler.snapshot()["read_ahead"] == {"run": 2, "stopped": 0}


async def test_a_waiting_turn_stops_a_read_ahead_and_a_read_ahead_leaves_plans_alone() -> None:
    engine = ReadingEngine()
    scheduler = Scheduler(1)
    llm = SchedulingLLM(engine, scheduler)
    plan = asyncio.create_task(llm.generate(MESSAGES, options=_options("plan", PRIORITY_PLAN)))
    await _settle()
    reading = asyncio.create_task(
        llm.prefill(MESSAGES, options=_options("dialogue", PRIORITY_TURN), upto="x")
    )
    await _settle()
    assert engine.log == ["start plan"]  # a plan is not background work: the read-ahead queues behind it
    engine.gate("plan").set()
    await plan
    await _settle()
    assert engine.log[-1] == "start prefill"
    turn = asyncio.create_task(llm.generate(MESSAGES, options=_options("dialogue", PRIORITY_TURN)))
    await _settle()
    assert engine.log[-2:] == ["stopped prefill", "start dialogue"]
    assert await reading is False  # stopped: what it read stays with the model; it is not run again
    engine.gate("dialogue").set()
    assert await turn == "reply to dialogue"
    assert engine.log.count("start prefill") == 1
    assert scheduler.snapshot()["read_ahead"] == {"run": 1, "stopped": 1}


async def test_a_provider_that_cannot_read_ahead_takes_no_slot() -> None:
    engine = OneSlotEngine()
    scheduler = Scheduler(1)
    llm = SchedulingLLM(engine, scheduler)
    assert await llm.prefill(MESSAGES, options=_options("dialogue", PRIORITY_TURN), upto="x") is False
    assert scheduler.granted == 0 and engine.log == []
