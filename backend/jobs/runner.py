"""The job runner: runs persisted jobs, retries failures with backoff, takes over the jobs of a process that died.

How a job runs:
- The code that creates a job adds its row in the same transaction as what the job is about (the turn, the
  memories, the conversation's `reflected` flag) and, after the commit, calls `submit(ids)`: the job starts at
  once as a tracked background task (so `TaskRunner.drain` waits for it).
- A poll loop claims due jobs in batches, as many as this runner has room for: jobs waiting out a retry
  backoff, jobs added by another process, and jobs whose runner stopped (see leases below).
- At most `job_workers` jobs execute at once; the rest wait their turn in this process.
- Each run first claims the row (one transaction, `repo.claim_due`), so no job runs twice at once. A handler
  that raises is retried after `job_backoff_s * 2**(attempts-1)` (capped), up to `job_max_attempts`; then
  the job is `failed` with its error. `NotReady` defers a job without counting an attempt.
- Handlers are idempotent: a job interrupted by a crash after its work but before `done` runs again, and
  finds its work done (a memory already rated, an observation already stored, a reflection already written).

API processes (PROCESS_ROLE=api) only commit jobs; worker processes (and a single "all" process) run them.
Several processes, one database (API processes and `machi worker`s on one PostgreSQL, or on one SQLite file):
every runner has an id (`host:pid:hex`, its `owner`). A claim makes the job the runner's for `job_lease_s`
seconds; the runner renews the leases of its jobs every `job_lease_s / 3` (one UPDATE). A job whose lease
runs out (its process was killed, or froze) is due again, and another runner takes it over; the outcome the
late runner then records is refused (`repo.finish` and `repo.retry_later` apply only for the owner), and
counted as `lost`. A job taken over more than `job_max_attempts` times fails without running again.
Model calls made by handlers queue in the LLM scheduler at PRIORITY_BACKGROUND, so live turns go first.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
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
#: How many more jobs than `job_workers` the poll claims ahead (they wait for a slot, their leases renewed):
#: the next job is at hand when one ends, and other processes still get a share of a backlog.
POLL_AHEAD = 2


def runner_id() -> str:
    """`host:pid:hex`: which process runs a job (in the row's `owner`), unique even when a pid is reused."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"[-128:]


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
        self.owner = runner_id()
        self.handlers: dict[str, Handler] = {}
        # Kinds whose jobs are added with `repo.add(merge=...)`: they give their dedupe key up when claimed.
        self._merging: list[str] = []
        self.outcomes: Counter[str] = Counter()  # done / retried / failed / deferred / lost, since start
        self._active: dict[int, asyncio.Task[Any]] = {}
        self._held: set[int] = set()  # jobs chained after others (submit_after): not started by the poll
        self._owned: set[int] = set()  # claimed here and not yet recorded: the heartbeat renews their leases
        self._claimed: dict[int, Job] = {}  # claimed by the poll, waiting for a slot
        self._wake = asyncio.Event()
        self._backlog = False  # the last poll claimed all it had room for: poll again as soon as one ends
        self._loop: asyncio.Task[None] | None = None
        self._beat: asyncio.Task[None] | None = None
        self._stopping = False
        self._idle = asyncio.Event()  # stopping, and no job left here: the heartbeat ends
        # Jobs executing at once. Each does several database steps in worker threads: unbounded, a backlog
        # (a busy minute, a restart) would flood the thread pool that live requests use too.
        self._slots = asyncio.Semaphore(settings.job_workers)

    def register(self, kind: str, handler: Handler, *, merging: bool = False) -> None:
        """Run `handler` for jobs of `kind`. `merging`: the kind's jobs are added with `repo.add(merge=...)`."""
        self.handlers[kind] = handler
        if merging and kind not in self._merging:
            self._merging.append(kind)

    async def start(self) -> None:
        """Start polling for due jobs (those a dead process left running among them) and renewing leases."""
        orphaned = await asyncio.to_thread(repo.orphaned, self.engine)
        if orphaned:
            log.warning("%d job(s) left running by a stopped process will be taken over", orphaned)
        self._stopping = False
        self._idle.clear()
        self._loop = asyncio.create_task(self._poll(), name="jobs-poll")
        self._beat = asyncio.create_task(self._heartbeat(), name="jobs-heartbeat")

    async def stop(self) -> None:
        """Stop claiming jobs. Leases of jobs still running here are renewed until they end (or are
        cancelled): drained at shutdown, they are not handed to another process meanwhile."""
        self._stopping = True
        if not self._owned:
            self._idle.set()
        if self._loop is not None:
            self._loop.cancel()
            await asyncio.gather(self._loop, return_exceptions=True)
            self._loop = None
        if self._beat is not None and self._idle.is_set():
            await asyncio.gather(self._beat, return_exceptions=True)
            self._beat = None

    def submit(self, jobs: Sequence[Job]) -> None:
        """Start committed jobs now, or when their `run_after` comes (call after the transaction that added
        them has committed). A job due later waits in a tracked task, so `TaskRunner.drain` waits for it.
        Each still has to be claimed: one another process claimed first is left to it."""
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
                await self._claim_due()
            except Exception:  # noqa: BLE001 - a database hiccup must not stop the runner for good
                log.exception("job poll failed")
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self.settings.job_poll_s)
            except TimeoutError:
                pass
            self._wake.clear()

    async def _claim_due(self) -> None:
        """Claim as many due jobs as this runner has room for, and start them."""
        room = self.settings.job_workers + POLL_AHEAD - len(self._owned)
        self._backlog = room <= 0  # full: the next job to end wakes the poll
        if room <= 0:
            return
        claimed = await asyncio.to_thread(
            repo.claim_due, self.engine, room, self._merging, owner=self.owner,
            lease_s=self.settings.job_lease_s, exclude=[*self._active, *self._held],
        )  # fmt: skip
        self._backlog = len(claimed) == room
        for job in claimed:
            assert job.id is not None
            self._owned.add(job.id)
            self._claimed[job.id] = job  # a task of submit's already waiting to claim it takes it from here
            self._start(job.id)

    async def _heartbeat(self) -> None:
        """Renew the leases of the jobs claimed here, every lease / 3, until stopped with none left."""
        every = self.settings.job_lease_s / 3
        while True:
            try:
                await asyncio.wait_for(self._idle.wait(), timeout=every)
                return
            except TimeoutError:
                pass
            if self._owned:
                await self._renew()

    async def _renew(self) -> None:
        owned = list(self._owned)
        try:
            kept = await asyncio.to_thread(
                repo.renew, self.engine, owned, owner=self.owner, lease_s=self.settings.job_lease_s
            )
        except Exception:  # noqa: BLE001 - the next beat tries again; the lease has two more beats' time
            log.exception("renewing job leases failed")
            return
        lost = [job_id for job_id in owned if job_id not in kept and job_id in self._owned]
        if lost:  # finished meanwhile, or taken over after a stall: `finish` tells which
            log.debug("job lease(s) not renewed: %s", lost)

    async def _run(self, job_id: int) -> None:
        delay = None
        try:
            async with self._slots:
                job = await self._claim(job_id)
                if job is None:
                    return
                delay = await self._execute(job)
        finally:
            self._active.pop(job_id, None)
            self._claimed.pop(job_id, None)
            self._owned.discard(job_id)
            if self._backlog:
                self._wake.set()
            if self._stopping and not self._owned:
                self._idle.set()
        if delay is not None:  # deferred: try again soon in this process (drain waits for it)
            self.tasks.spawn(self._later(job_id, delay), name=f"job-later:{job_id}")

    async def _claim(self, job_id: int) -> Job | None:
        """The job, claimed: by the poll already, or now (None: another runner has it, or it is not due)."""
        if (job := self._claimed.pop(job_id, None)) is not None:
            return job
        job = await asyncio.to_thread(
            repo.claim,
            self.engine,
            job_id,
            self._merging,
            owner=self.owner,
            lease_s=self.settings.job_lease_s,
        )
        if job is None:  # the poll may have claimed it meanwhile
            return self._claimed.pop(job_id, None)
        self._owned.add(job_id)
        return job

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
            if job.attempts > self.settings.job_max_attempts:  # taken over again and again: it may be
                raise RuntimeError("its runner stopped during every attempt")  # what kills its runners
            await handler(job)
        except NotReady as exc:
            self.outcomes["deferred"] += 1
            kept = await self._record(
                job, repo.retry_later, str(exc), exc.delay_s, give_up=False, count=False
            )
            return exc.delay_s if kept else None
        except Exception as exc:  # noqa: BLE001 - every failure is recorded on the row and retried
            await self._failed(job, exc)
            return None
        if await self._record(job, repo.finish):
            self.outcomes["done"] += 1
        return None

    async def _record(self, job: Job, step: Callable[..., bool], *args: Any, **kwargs: Any) -> bool:
        """Record an outcome through `step` if this runner still owns the job; log it when it does not."""
        kept = await asyncio.to_thread(step, self.engine, job.id, *args, owner=self.owner, **kwargs)
        if not kept:
            self.outcomes["lost"] += 1
            log.warning(
                "job %s (%s): its lease ran out and another runner took it over; this run's outcome is dropped",
                job.id,
                job.kind,
            )
        return kept

    async def _failed(self, job: Job, exc: Exception) -> None:
        assert job.id is not None
        settings = self.settings
        give_up = job.attempts >= settings.job_max_attempts
        delay = min(settings.job_backoff_max_s, settings.job_backoff_s * 2 ** max(0, job.attempts - 1))
        error = f"{type(exc).__name__}: {exc}"
        if not await self._record(job, repo.retry_later, error, delay, give_up=give_up, count=True):
            return
        self.outcomes["failed" if give_up else "retried"] += 1
        log.warning(
            "job %d (%s) attempt %d failed%s: %s",
            job.id,
            job.kind,
            job.attempts,
            "; giving up" if give_up else f"; retry in {delay:.1f}s",
            error,
        )

    def snapshot(self) -> dict[str, Any]:
        lease = self.settings.job_lease_s
        return {
            "active": self.active,
            "outcomes": dict(self.outcomes),
            "owner": self.owner,
            "owned": len(self._owned),
            "lease_s": lease,
            "heartbeat_s": lease / 3,
        }
