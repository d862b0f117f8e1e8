"""One priority queue in front of the provider: a concurrency cap, and live turns first.

`SchedulingLLM` is a wrapper like those in retry.py. A call takes a slot before it reaches the provider and
gives it back when the provider is done (a stream holds its slot until the last piece). When every slot is
busy, callers wait in one queue ordered by `GenerateOptions.priority` (PRIORITY_TURN < COUNCIL < PLAN <
BACKGROUND), first come first served within a priority. A freed slot always goes to the most urgent waiter, so
a live turn never waits behind queued background work; background work is deferred, never dropped.

Where it sits (registry.wrap): repair -> retry -> **schedule** -> trace -> timeout -> provider. Below retry, so
a call waiting out its backoff holds no slot; above trace and timeout, so the traced latency and the per-call
timeout measure the provider's work, not the time spent queued (a background call may queue for minutes under
load without timing out). A live turn's own deadline (conversation service) does include the queue wait:
cancelling a waiter removes it from the queue.

Preemption, on a one-slot engine (a provider that is `preemptible`: llama.cpp in process, Ollama): the queue
alone orders only calls that wait; a reflection already generating would hold the model until it ends. So
a call someone waits for (PREEMPTING_PRIORITY: a live turn, a council's member or clerk, an interview) that
must wait stops the least urgent running `complete` call below its priority: the call is cancelled (the
provider stops at the next token), its slot goes to the waiter, and the call is queued again, first of its
priority, to run from the start; its caller only waits longer. Each waiting call stops at most one call.
Streams (streamed turns) are never preempted. Plans and background work (ratings, reflections) never stop
another call: on SmolLM2 a reflection holds the model 15-22 s, and an interview queued behind one ran out of
INTERVIEW_DEADLINE_S.

Reading ahead (`SchedulingLLM.prefill`, llama.cpp in process): the prompt of a turn that is about to come
(the partner's next line, an opening line once Unity reports two agents `talking`) is read into the model's
prompt cache at plan priority, holding a slot like a call. A waiting live turn stops it like any call below
it (what it read stays in the context). It stops a running background generation on its first run only:
the turn it prepares would stop that call moments later anyway, and a call that was already stopped once is
left to finish, so background work is delayed by reading ahead, never starved by it.

Shutdown (`Scheduler.shutdown`, from the app's lifespan): every task waiting for or holding a slot is
cancelled, and so is any that asks for one later. Model work is not waited for: a job it interrupts stays in
the job table and runs after the restart, and the drain that follows only waits for the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from backend.llm.base import (
    LLM,
    PRIORITY_BACKGROUND,
    PRIORITY_COUNCIL,
    PRIORITY_PLAN,
    PRIORITY_TURN,
    Completion,
    GenerateOptions,
    LLMWrapper,
    Message,
    find_layer,
)

PRIORITY_NAMES = {
    PRIORITY_TURN: "turn",
    PRIORITY_COUNCIL: "council",
    PRIORITY_PLAN: "plan",
    PRIORITY_BACKGROUND: "background",
}
#: Waits kept per priority for the recent percentiles.
RECENT_WAITS = 512
#: Grant records kept for inspection (tests, the stats endpoint's `recent`).
RECORDS = 256
#: Waiters this urgent (or more) preempt a less urgent running call on a preemptible provider: those a person
#: waits for (turns; councils and interviews, PRIORITY_COUNCIL).
PREEMPTING_PRIORITY = PRIORITY_COUNCIL
#: The cancel message of a preempted call (the trace records it).
PREEMPTED = "preempted by a call someone waits for (a turn, a council, an interview); run again"

R = TypeVar("R")


def priority_name(priority: int) -> str:
    return PRIORITY_NAMES.get(priority, str(priority))


@dataclass
class Grant:
    """One call's passage through the queue; `enqueued_at`/`granted_at` count grants, not seconds."""

    purpose: str
    priority: int
    enqueued_at: int  # how many slots had been granted when the call arrived
    granted_at: int  # the call's own grant number
    wait_s: float


@dataclass
class PriorityStats:
    waiting: int = 0
    granted: int = 0
    completed: int = 0
    errors: int = 0
    preempted: int = 0  # running calls stopped for a more urgent one (and run again)
    wait_total_s: float = 0.0
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT_WAITS))

    def snapshot(self) -> dict[str, Any]:
        waits = sorted(self.recent)
        return {
            "waiting": self.waiting,
            "granted": self.granted,
            "completed": self.completed,
            "errors": self.errors,
            "preempted": self.preempted,
            "wait_total_s": round(self.wait_total_s, 4),
            "wait_p50_s": round(_quantile(waits, 0.5), 4),
            "wait_p95_s": round(_quantile(waits, 0.95), 4),
        }


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    return values[min(len(values) - 1, int(q * len(values)))]


@dataclass(eq=False)
class Running:
    """A call holding a slot; `stop` cancels it (False: it had already finished) to run it again later."""

    priority: int
    stop: Callable[[], bool]
    preempted: bool = False
    again: bool = False  # a call run again after it was preempted: a read-ahead does not stop it twice


class Scheduler:
    """The queue itself (no LLM knowledge): `acquire` a slot, `release` it; an urgent waiter stops a less
    urgent call registered with `running` and a `stop`."""

    def __init__(self, concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency = concurrency
        self._running: list[Running] = []
        self._callers: set[asyncio.Task[Any]] = set()  # tasks waiting for or holding a slot
        self.closed = False
        self.in_flight = 0
        self.granted = 0
        self.fallbacks = 0  # turns answered with a fallback line (the conversation service counts them)
        self.read_ahead = self.read_ahead_stopped = 0  # prefills run, and those a waiting turn stopped
        self._heap: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self.stats: dict[int, PriorityStats] = {p: PriorityStats() for p in PRIORITY_NAMES}
        self.records: deque[Grant] = deque(maxlen=RECORDS)

    def _stats(self, priority: int) -> PriorityStats:
        return self.stats.setdefault(priority, PriorityStats())

    async def acquire(
        self, priority: int, purpose: str = "generic", *, again: bool = False, read_ahead: bool = False
    ) -> None:
        """Wait for a slot. Cancelling the waiter leaves the queue cleanly (a granted slot is handed on).
        `again`: a preempted call, queued before the others of its priority. `read_ahead`: a prefill, which
        may stop a background generation on its first run (module docstring)."""
        arrived, start = self.granted, time.perf_counter()
        stats = self._stats(priority)
        if self.in_flight >= self.concurrency or self._heap:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            entry = (priority, -next(self._order) if again else next(self._order), future)
            heapq.heappush(self._heap, entry)
            stats.waiting += 1
            self._preempt_for(priority, read_ahead=read_ahead)
            try:
                await future
            except BaseException:
                stats.waiting -= 1
                if future.done() and not future.cancelled():
                    self.release()  # the slot was handed to us just as we were cancelled
                elif entry in self._heap:  # release() may have dropped it already (its future was cancelled)
                    self._heap.remove(entry)
                    heapq.heapify(self._heap)
                raise
            stats.waiting -= 1
        else:
            self.in_flight += 1
        self.granted += 1
        waited = time.perf_counter() - start
        stats.granted += 1
        stats.wait_total_s += waited
        stats.recent.append(waited)
        self.records.append(Grant(purpose, priority, arrived, self.granted, waited))

    @contextlib.contextmanager
    def caller(self) -> Iterator[None]:
        """Marks the current task as one that shutdown cancels while it waits for or holds a slot."""
        task = asyncio.current_task()
        if task is None:
            yield
            return
        if self.closed:
            task.cancel("the server is shutting down")
        self._callers.add(task)
        try:
            yield
        finally:
            self._callers.discard(task)

    def shutdown(self) -> None:
        """Cancel every task waiting for or holding a slot, now and from now on (the server is stopping)."""
        self.closed = True
        for task in list(self._callers):
            task.cancel("the server is shutting down")

    def running(self, priority: int, stop: Callable[[], bool], *, again: bool = False) -> Running:
        """Register a preemptible call that now holds a slot (`stop` cancels it)."""
        call = Running(priority, stop, again=again)
        self._running.append(call)
        return call

    def done(self, call: Running) -> None:
        self._running.remove(call)

    def _preempt_for(self, priority: int, *, read_ahead: bool = False) -> None:
        """Stop the least urgent, latest preemptible call below `priority`, if a waiter this urgent may; a
        read-ahead stops only a background call on its first run."""
        if read_ahead:
            victims = [c for c in self._running if not c.preempted and not c.again and c.priority > priority]
            victims = [c for c in victims if c.priority >= PRIORITY_BACKGROUND]
        elif priority <= PREEMPTING_PRIORITY:
            victims = [c for c in self._running if not c.preempted and c.priority > priority]
        else:
            return
        if victims:
            victim = max(reversed(victims), key=lambda c: c.priority)
            victim.preempted = victim.stop()
            self._stats(victim.priority).preempted += victim.preempted

    def release(self) -> None:
        """Give a slot back: straight to the most urgent waiter, else back to the pool."""
        while self._heap:
            _, _, future = heapq.heappop(self._heap)
            if not future.done():
                future.set_result(None)  # the slot passes on; in_flight is unchanged
                return
        self.in_flight -= 1

    def finished(self, priority: int, ok: bool) -> None:
        stats = self._stats(priority)
        stats.completed += 1
        stats.errors += 0 if ok else 1

    def snapshot(self) -> dict[str, Any]:
        """Queue depth, waits and counts per priority name (for /health, /v1/llm-calls/stats, /metrics)."""
        return {
            "concurrency": self.concurrency,
            "in_flight": self.in_flight,
            "queued": len(self._heap),
            "granted": self.granted,
            "fallbacks": self.fallbacks,
            "read_ahead": {"run": self.read_ahead, "stopped": self.read_ahead_stopped},
            "priorities": {priority_name(p): s.snapshot() for p, s in sorted(self.stats.items())},
        }


class SchedulingLLM(LLMWrapper):
    """Every call and stream holds one of the scheduler's slots while the provider works on it."""

    def __init__(self, inner: LLM, scheduler: Scheduler) -> None:
        super().__init__(inner)
        self.scheduler = scheduler

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
    ) -> Completion:
        with self.scheduler.caller():
            again = False
            while True:
                await self.scheduler.acquire(options.priority, options.purpose, again=again)
                rerun, ok, again = again, False, False
                try:
                    completion = await self._attempt(messages, options, schema, again=rerun)
                    if completion is None:  # preempted: queue again, run from the start
                        again = True
                        continue
                    ok = True
                    return completion
                finally:
                    self.scheduler.release()
                    if not again:
                        self.scheduler.finished(options.priority, ok)
        raise AssertionError("unreachable")

    async def _attempt(
        self,
        messages: Sequence[Message],
        options: GenerateOptions,
        schema: dict[str, Any] | None,
        *,
        again: bool = False,
    ) -> Completion | None:
        """The provider call, as a task a more urgent waiter may cancel (when the provider is preemptible).
        Returns None when it was preempted."""
        if not self.inner.preemptible:
            return await self.inner.complete(messages, options=options, schema=schema)
        work = self.inner.complete(messages, options=options, schema=schema)
        return await self._preemptible(work, options.priority, again=again)

    async def _preemptible(self, work: Awaitable[R], priority: int, *, again: bool = False) -> R | None:
        """Run `work` as a task a more urgent waiter may cancel; None when it was preempted."""
        call = asyncio.ensure_future(work)
        running = self.scheduler.running(priority, lambda: call.cancel(PREEMPTED), again=again)
        try:
            return await call
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if running.preempted and call.cancelled() and not (task and task.cancelling()):
                return None
            raise
        finally:
            self.scheduler.done(running)

    async def prefill(self, messages: Sequence[Message], *, options: GenerateOptions, upto: str) -> bool:
        """Read a prompt ahead at plan priority, holding a slot (module docstring: a waiting turn stops it,
        it may stop a background generation on its first run). Returns whether the state was kept."""
        if not self.inner.can_prefill:
            return False
        with self.scheduler.caller():
            await self.scheduler.acquire(PRIORITY_PLAN, "prefill", read_ahead=True)
            try:
                work = self.inner.prefill(messages, options=options, upto=upto)
                kept = await self._preemptible(work, PRIORITY_PLAN)
                self.scheduler.read_ahead += 1
                self.scheduler.read_ahead_stopped += kept is None
                return bool(kept)
            finally:
                self.scheduler.release()

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
        usage: Completion | None = None,
    ) -> AsyncIterator[str]:
        with self.scheduler.caller():
            await self.scheduler.acquire(options.priority, options.purpose)
            ok = False
            try:
                async for piece in self.inner.stream(messages, options=options, schema=schema, usage=usage):
                    yield piece
                ok = True
            finally:
                self.scheduler.release()
                self.scheduler.finished(options.priority, ok)


def find_scheduler(llm: Any) -> Scheduler | None:
    """The scheduler inside a wrapped stack, or None (a bare provider in a test)."""
    layer = find_layer(llm, SchedulingLLM)
    return layer.scheduler if layer is not None else None
