"""The LLM scheduler: priorities, the concurrency cap, cancellation, streams, and where it reports."""

from __future__ import annotations

import asyncio

import pytest

from backend.llm.base import PRIORITY_BACKGROUND, PRIORITY_PLAN, PRIORITY_TURN, GenerateOptions
from backend.llm.scheduler import Scheduler, SchedulingLLM
from tests.reliability.faulty import FaultyLLM

MESSAGES = [{"role": "user", "content": "x"}]


def _options(purpose: str, priority: int) -> GenerateOptions:
    return GenerateOptions(purpose=purpose, priority=priority, facts={"language": "ja"})


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def test_a_turn_takes_the_next_slot_before_ten_queued_background_calls() -> None:
    async def run() -> list[str]:
        llm = FaultyLLM()
        llm.gate = asyncio.Event()
        scheduler = Scheduler(1)
        wrapped = SchedulingLLM(llm, scheduler)
        background = [
            asyncio.create_task(
                wrapped.generate(MESSAGES, options=_options("importance", PRIORITY_BACKGROUND))
            )
            for _ in range(11)
        ]
        await _settle()
        assert scheduler.in_flight == 1 and scheduler.snapshot()["priorities"]["background"]["waiting"] == 10
        turn = asyncio.create_task(wrapped.generate(MESSAGES, options=_options("dialogue", PRIORITY_TURN)))
        await _settle()
        llm.gate.set()
        await asyncio.gather(turn, *background)
        return [record.purpose for record in scheduler.records]

    order = asyncio.run(run())
    # One background call held the slot when the turn came; the turn got the very next one.
    assert order[0] == "importance" and order[1] == "dialogue"
    assert order[2:] == ["importance"] * 10  # deferred, not dropped


def test_priorities_are_served_in_order_and_fifo_within_one() -> None:
    async def run() -> list[int]:
        scheduler = Scheduler(1)
        await scheduler.acquire(PRIORITY_BACKGROUND)
        waiters = [
            asyncio.create_task(scheduler.acquire(priority, f"p{priority}-{i}"))
            for i, priority in enumerate([PRIORITY_BACKGROUND, PRIORITY_PLAN, PRIORITY_TURN, PRIORITY_PLAN])
        ]
        await _settle()
        for _ in waiters:
            scheduler.release()
            await _settle()
        await asyncio.gather(*waiters)
        scheduler.release()
        assert scheduler.in_flight == 0
        return [int(r.purpose.split("-")[1]) for r in list(scheduler.records)[1:]]

    assert asyncio.run(run()) == [2, 1, 3, 0]


def test_a_cancelled_waiter_leaves_the_queue_and_no_slot_leaks() -> None:
    async def run() -> Scheduler:
        scheduler = Scheduler(1)
        await scheduler.acquire(PRIORITY_BACKGROUND)
        waiter = asyncio.create_task(scheduler.acquire(PRIORITY_TURN))
        await _settle()
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        assert scheduler.snapshot()["queued"] == 0
        scheduler.release()
        await asyncio.wait_for(scheduler.acquire(PRIORITY_BACKGROUND), timeout=5)  # the slot is free again
        scheduler.release()
        return scheduler

    scheduler = asyncio.run(run())
    assert scheduler.in_flight == 0 and scheduler.snapshot()["priorities"]["turn"]["waiting"] == 0


def test_a_stream_holds_its_slot_until_the_last_piece() -> None:
    async def run() -> tuple[int, int]:
        scheduler = Scheduler(1)
        wrapped = SchedulingLLM(FaultyLLM(), scheduler)
        pieces = wrapped.stream(MESSAGES, options=_options("dialogue", PRIORITY_TURN))
        await pieces.__anext__()
        during = scheduler.in_flight
        async for _ in pieces:
            pass
        return during, scheduler.in_flight

    assert asyncio.run(run()) == (1, 0)


def test_a_failing_call_gives_its_slot_back_and_counts_an_error() -> None:
    async def run() -> Scheduler:
        llm = FaultyLLM()
        llm.faults["importance"] = "raise"
        scheduler = Scheduler(1)
        wrapped = SchedulingLLM(llm, scheduler)
        for _ in range(3):
            with pytest.raises(Exception, match="injected"):
                await wrapped.generate(MESSAGES, options=_options("importance", PRIORITY_BACKGROUND))
        return scheduler

    scheduler = asyncio.run(run())
    background = scheduler.snapshot()["priorities"]["background"]
    assert scheduler.in_flight == 0 and background["completed"] == 3 and background["errors"] == 3


def test_concurrency_defaults_per_provider(settings) -> None:  # type: ignore[no-untyped-def]
    assert settings.resolved_llm_concurrency() == 8  # scripted
    assert settings.model_copy(update={"llm_provider": "ollama"}).resolved_llm_concurrency() == 1
    assert settings.model_copy(update={"llm_provider": "vllm"}).resolved_llm_concurrency() == 4
    assert settings.model_copy(update={"llm_concurrency": 3}).resolved_llm_concurrency() == 3


async def test_a_waiter_cancelled_as_the_slot_is_released_leaves_the_queue_cleanly() -> None:
    """A waiter's task is cancelled (its future with it), then release() runs before the task sees the
    cancellation: release skips the cancelled entry, and the waiter's own clean-up must not fail on it
    (the real engine hit `list.remove(x): x not in list` this way when a turn's deadline passed)."""
    scheduler = Scheduler(1)
    await scheduler.acquire(1)
    waiter = asyncio.create_task(scheduler.acquire(3))
    await asyncio.sleep(0)  # queued
    waiter.cancel()
    scheduler.release()  # runs before the waiter wakes: skips its cancelled future, frees the slot
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert scheduler.in_flight == 0 and scheduler.snapshot()["queued"] == 0
    await scheduler.acquire(2)  # the slot is free for the next caller
    assert scheduler.in_flight == 1
