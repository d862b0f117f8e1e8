"""Fire-and-forget background work that is tracked, logged, and can be drained (shutdown, tests)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class TaskRunner:
    """Runs coroutines off the request path. Failures are logged, never raised into the caller."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self.failures = 0

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str = "background") -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.failures += 1
            log.error("background task %s failed", task.get_name(), exc_info=exc)

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def drain(self, timeout: float | None = 30.0) -> None:
        """Wait until no task is left, including tasks spawned by tasks."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._tasks:
            remaining = None if deadline is None else max(0.0, deadline - loop.time())
            if remaining == 0.0:
                raise TimeoutError(f"{len(self._tasks)} background tasks still running")
            await asyncio.wait(set(self._tasks), timeout=remaining)

    async def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
