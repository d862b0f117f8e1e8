"""The job runner: runs persisted jobs in the app's process, retries failures with backoff, resumes after a crash.

How a job runs:
- The code that creates a job adds its row in the same transaction as what the job is about (the turn, the
  memories, the conversation's `reflected` flag) and, after the commit, calls `submit(ids)`: the job starts at
  once as a tracked background task (so `TaskRunner.drain` waits for it).
- A poll loop picks up pending jobs that are due and not already running here: jobs left by a crash (at
  start-up, `running` rows are stale and go back to `pending`) and jobs waiting out a retry backoff.
- At most `job_workers` jobs execute at once; the rest wait their turn in this process.
- Each run first claims the row (`pending` -> `running`, one UPDATE), so no job runs twice at once. A handler
  that raises is retried after `job_backoff_s * 2**(attempts-1)` (capped), up to `job_max_attempts`; then
  the job is `failed` with its error. `NotReady` defers a job without counting an attempt.
- Handlers are idempotent: a job interrupted by a crash after its work but before `done` runs again, and
  finds its work done (a memory already rated, an observation already stored, a reflection already written).

Several processes: API processes (PROCESS_ROLE=api) only commit jobs; worker processes (and a single "all"
process) run them. Claims are conditional UPDATEs, so two runners never run one job at once.
Model calls made by handlers queue in the LLM scheduler at PRIORITY_BACKGROUND, so live turns go first.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from backend.config import Settings
from backend.gametime import utcnow
from backend.jobs import repo
from backend.jobs.models import Job
from backend.tasks import TaskRunner

log = logging.getLogger(__name__)

Handler = Callable[[Job], Awaitable[None]]
#: Jobs the poll loop starts per tick (a backlog after a restart is taken in slices).
POLL_BATCH = 200


class NotReady(Exception):  # noqa: N818 - a signal, not an error
    """Raised by a handler whose inputs are not there yet: run again after `delay_s`, no attempt counted."""

    def __init__(self, reason: str, delay_s: float = 0.5) -> None:
        super().__init__(reason)
        self.delay_s = delay_s


class JobRunner:
    """Runs jobs by kind. Built in the app's lifespan and kept at `app.state.jobs`."""

    def __init__(self, *, engine: Any, settings: Settings, tasks: TaskRunner, local: bool = True) -> None:
        self.engine = engine
        # False in an API process (PROCESS_ROLE=api): jobs its requests commit are left to the worker processes
        # (`submit` does nothing, `start` is not called), so background work never takes its CPU.
        self.local = local
        self.settings = settings
        self.tasks = tasks
        self.handlers: dict[str, Handler] = {}
        # Kinds whose jobs are added with `repo.add(merge=...)`: they give their dedupe key up when claimed.
        self._merging: list[str] = []
        self.outcomes: Counter[str] = Counter()  # done / retried / failed / deferred, since start
        self._active: dict[int, asyncio.Task[Any]] = {}
        self._held: set[int] = set()  # jobs chained after others (submit_after): not started by the poll
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        # Jobs executing at once. Each does several database steps in worker threads: unbounded, a backlog
        # (a busy minute, a restart) would flood the thread pool that live requests use too.
        self._slots = asyncio.Semaphore(settings.job_workers)

    def register(self, kind: str, handler: Handler, *, merging: bool = False) -> None:
        """Run `handler` for jobs of `kind`. `merging`: the kind's jobs are added with `repo.add(merge=...)`."""
        self.handlers[kind] = handler
        if merging and kind not in self._merging:
            self._merging.append(kind)

    async def start(self) -> None:
        """Put jobs a dead process left `running` back to pending, then start polling for due jobs."""
        recovered = await asyncio.to_thread(repo.recover, self.engine)
        if recovered:
            log.warning("%d job(s) interrupted by a restart will run again", recovered)
        self._loop = asyncio.create_task(self._poll(), name="jobs-poll")

    async def stop(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            await asyncio.gather(self._loop, return_exceptions=True)
            self._loop = None

    def submit(self, jobs: Sequence[Job]) -> None:
        """Start committed jobs now, or when their `run_after` comes (call after the transaction that added
        them has committed). A job due later waits in a tracked task, so `TaskRunner.drain` waits for it."""
        if not self.local:
            return
        now = utcnow()
        for job in jobs:
            if job.id is None:
                continue
            wait = (job.run_after - now).total_seconds() if job.run_after is not None else 0.0
            if wait > 0:
                self.tasks.spawn(self._later(job.id, wait), name=f"job-later:{job.id}")
            else:
                self._start(job.id)

    def submit_after(self, first: Sequence[Job], then: Sequence[Job]) -> None:
        """Start `first` now and `then` once those have run (e.g. a conversation's reflections after its last
        line is remembered), so `then` does not start only to find its inputs pending and defer itself."""
        if not self.local:
            return
        self.submit(first)
        waiting = [self._active[job.id] for job in first if job.id in self._active]
        if not waiting:
            self.submit(then)
            return
        held = {job.id for job in then if job.id is not None}
        self._held |= held  # the poll loop leaves them alone meanwhile

        async def chain() -> None:
            try:
                await asyncio.gather(*waiting, return_exceptions=True)
            finally:
                self._held -= held
            self.submit(then)

        self.tasks.spawn(chain(), name="job-chain")

    def _start(self, job_id: int) -> None:
        if job_id in self._active:
            return
        self._active[job_id] = self.tasks.spawn(self._run(job_id), name=f"job:{job_id}")

    @property
    def active(self) -> int:
        return len(self._active)

    async def _poll(self) -> None:
        while True:
            try:
                for job_id in await asyncio.to_thread(repo.due, self.engine, POLL_BATCH):
                    if job_id not in self._held:
                        self._start(job_id)
            except Exception:  # noqa: BLE001 - a database hiccup must not stop the runner for good
                log.exception("job poll failed")
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self.settings.job_poll_s)
            except TimeoutError:
                pass
            self._wake.clear()

    async def _run(self, job_id: int) -> None:
        try:
            async with self._slots:
                job = await asyncio.to_thread(repo.claim, self.engine, job_id, self._merging)
                if job is None:
                    return
                delay = await self._execute(job)
        finally:
            self._active.pop(job_id, None)
        if delay is not None:  # deferred: try again soon in this process (drain waits for it)
            self.tasks.spawn(self._later(job_id, delay), name=f"job-later:{job_id}")

    async def _later(self, job_id: int, delay_s: float) -> None:
        await asyncio.sleep(delay_s)
        self._start(job_id)

    async def _execute(self, job: Job) -> float | None:
        """Run the handler and record the outcome. Returns the delay of a deferred job, else None."""
        assert job.id is not None
        handler = self.handlers.get(job.kind)
        try:
            if handler is None:
                raise LookupError(f"no handler for job kind {job.kind!r}")
            await handler(job)
        except NotReady as exc:
            self.outcomes["deferred"] += 1
            await asyncio.to_thread(
                repo.retry_later, self.engine, job.id, str(exc), exc.delay_s, give_up=False, count=False
            )
            return exc.delay_s
        except Exception as exc:  # noqa: BLE001 - every failure is recorded on the row and retried
            await self._failed(job, exc)
            return None
        await asyncio.to_thread(repo.finish, self.engine, job.id)
        self.outcomes["done"] += 1
        return None

    async def _failed(self, job: Job, exc: Exception) -> None:
        assert job.id is not None
        settings = self.settings
        give_up = job.attempts >= settings.job_max_attempts
        delay = min(settings.job_backoff_max_s, settings.job_backoff_s * 2 ** max(0, job.attempts - 1))
        error = f"{type(exc).__name__}: {exc}"
        self.outcomes["failed" if give_up else "retried"] += 1
        log.warning(
            "job %d (%s) attempt %d failed%s: %s",
            job.id,
            job.kind,
            job.attempts,
            "; giving up" if give_up else f"; retry in {delay:.1f}s",
            error,
        )
        await asyncio.to_thread(
            repo.retry_later, self.engine, job.id, error, delay, give_up=give_up, count=True
        )

    def snapshot(self) -> dict[str, Any]:
        return {"active": self.active, "outcomes": dict(self.outcomes)}
