"""Is the model answering? Told by the calls themselves, and by a cheap probe when there are none.

`HealthLLM` wraps the provider (inside the tracer, around the timeout) and records in a `ModelHealth` whether
each attempt got an answer: a reply, even one that fails its schema, is an answer; `LLMUnavailable` and
`LLMTimeout` are not. `watch()` runs the provider's `check()` at start-up and again whenever no call has
finished for LLM_HEALTH_PROBE_IDLE_S seconds. `/health` reads the latest of the two, never waiting on the
model: `llm_reachable` and `llm_detail`, and `llm_health` with the times, the last error and the share of the
last LLM_HEALTH_WINDOW_S seconds' calls that failed.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from backend.errors import LLMTimeout, LLMUnavailable
from backend.llm.base import LLM, Completion, GenerateOptions, LLMWrapper, Message, find_layer

log = logging.getLogger(__name__)

#: Seconds a probe (the provider's `check()`) may take before it counts as a failure.
PROBE_TIMEOUT_S = 10.0
#: Call outcomes kept for the failure share (the window's calls, at most this many of the latest).
MAX_OUTCOMES = 1000


def _now() -> datetime:
    return datetime.now(UTC)


class ModelHealth:
    """The latest evidence of the model's reachability: real calls' outcomes and probes'."""

    def __init__(self, window_s: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self.clock = clock
        self.reachable: bool | None = None
        self.detail: str = "not checked yet"
        self.checked_by: str | None = None  # "call" | "probe": what the latest evidence was
        self.last_success_at: datetime | None = None
        self.last_failure_at: datetime | None = None
        self.last_error: str | None = None
        self.last_probe_at: datetime | None = None
        self.last_probe_ok: bool | None = None
        self._probe_detail: str | None = None
        self._outcomes: deque[tuple[float, bool]] = deque(maxlen=MAX_OUTCOMES)
        self._last_activity: float | None = None

    def record_call(self, ok: bool, error: str | None = None) -> None:
        """One real call's attempt: answered (`ok`) or not, with the error that said why."""
        now = self.clock()
        self._outcomes.append((now, ok))
        self._last_activity = now
        if ok:
            self.last_success_at = _now()
        else:
            self.last_failure_at, self.last_error = _now(), error
        self._settle(ok, "call", error)

    def record_probe(self, ok: bool, detail: str) -> None:
        self._last_activity = self.clock()
        self.last_probe_at, self.last_probe_ok = _now(), ok
        if ok:
            self._probe_detail = detail
        else:
            self.last_error = detail
        self._settle(ok, "probe", detail)

    def _settle(self, ok: bool, source: str, said: str | None) -> None:
        if self.reachable is not False and not ok:
            log.warning("the model stopped answering (%s): %s", source, said)
        elif self.reachable is False and ok:
            log.info("the model answers again (%s)", source)
        self.reachable, self.checked_by = ok, source
        self.detail = (self._probe_detail or "answering") if ok else (said or "not answering")

    def idle_for(self) -> float:
        """Seconds since the last call or probe finished (infinite before the first)."""
        return math.inf if self._last_activity is None else self.clock() - self._last_activity

    def snapshot(self) -> dict[str, Any]:
        """`/health`'s `llm_health`."""
        since = self.clock() - self.window_s
        recent = [ok for at, ok in self._outcomes if at >= since]
        failures = recent.count(False)
        return {
            "checked_by": self.checked_by,
            "last_success_at": self.last_success_at,
            "last_failure_at": self.last_failure_at,
            "last_error": self.last_error,
            "window_s": self.window_s,
            "recent_calls": len(recent),
            "recent_failures": failures,
            "recent_failure_share": round(failures / len(recent), 3) if recent else None,
            "last_probe_at": self.last_probe_at,
            "last_probe_ok": self.last_probe_ok,
        }


def _failure(exc: LLMUnavailable | LLMTimeout) -> str:
    return f"{exc.code}: {exc.message}"[:300]


class HealthLLM(LLMWrapper):
    """Records whether each attempt got an answer; changes nothing about the call. A call cancelled (its
    caller's deadline, preemption, shutdown) says nothing about the model and is not recorded."""

    def __init__(self, inner: LLM, health: ModelHealth) -> None:
        super().__init__(inner)
        self.health = health

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
    ) -> Completion:
        try:
            completion = await self.inner.complete(messages, options=options, schema=schema)
        except (LLMUnavailable, LLMTimeout) as exc:
            self.health.record_call(False, _failure(exc))
            raise
        self.health.record_call(True)
        return completion

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
        usage: Completion | None = None,
    ) -> AsyncIterator[str]:
        answered, finished, error = False, False, None
        try:
            async for piece in self.inner.stream(messages, options=options, schema=schema, usage=usage):
                answered = True
                yield piece
            finished = True
        except (LLMUnavailable, LLMTimeout) as exc:
            error = _failure(exc)
            raise
        finally:  # one outcome per call; a stream its caller closed after some pieces got an answer
            if error is not None:
                self.health.record_call(False, error)
            elif answered or finished:
                self.health.record_call(True)


def find_health(llm: LLM) -> ModelHealth | None:
    layer = find_layer(llm, HealthLLM)
    return layer.health if layer is not None else None


async def probe(health: ModelHealth, provider: LLM, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Ask the provider's `check()` (it lists the served models: no generation); record what it says."""
    check = getattr(provider, "check", None)
    if check is None:
        health.record_probe(True, "in-process")
        return
    try:
        detail = await asyncio.wait_for(check(), timeout=timeout_s)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable", reported by /health
        health.record_probe(False, str(exc)[:300] or type(exc).__name__)
        return
    health.record_probe(True, str(detail))


async def watch(health: ModelHealth, provider: LLM, idle_s: float) -> None:
    """Probe at start-up, then whenever no call or probe has finished for `idle_s` seconds (0: start-up
    only). A provider without `check()` (in-process, nothing to reach) is probed once."""
    while True:
        await probe(health, provider)
        if idle_s <= 0 or getattr(provider, "check", None) is None:
            return
        while (wait := idle_s - health.idle_for()) > 0:
            await asyncio.sleep(wait)
