"""Two runners (two processes, as far as the database can tell) on one database: SQLite in WAL mode and
PostgreSQL. Every job runs exactly once; a dead runner's job is taken over once its lease runs out; a runner
that lost its lease cannot record an outcome over the new owner's."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from backend.jobs import repo
from backend.jobs.models import Job
from backend.jobs.runner import JobRunner
from tests.jobs.conftest import KIND, add_jobs, row, wait_until


def _recorder(runs: list[tuple[str, int]], name: str) -> Callable[[Job], object]:
    async def handle(job: Job) -> None:
        runs.append((name, job.id or 0))
        await asyncio.sleep(0.005)  # a little work, so the other runner gets its turn

    return handle


def _blocker(started: asyncio.Event, release: asyncio.Event, fail: bool = False) -> Callable[[Job], object]:
    async def handle(job: Job) -> None:
        started.set()
        await release.wait()
        if fail:
            raise RuntimeError("late failure")

    return handle


def _done(engine: Engine) -> int:
    return repo.counts(engine)["done"]


async def test_two_runners_share_200_jobs_and_each_runs_once(runners: Callable[..., JobRunner]) -> None:
    a, b = runners(), runners()
    runs: list[tuple[str, int]] = []
    a.register(KIND, _recorder(runs, "a"))  # type: ignore[arg-type]
    b.register(KIND, _recorder(runs, "b"))  # type: ignore[arg-type]
    jobs = add_jobs(a.engine, 200)
    await a.start()
    await b.start()
    a.submit(jobs[:100])  # the fast path of the process that committed them, racing the other's poll
    await wait_until(lambda: a.outcomes["done"] + b.outcomes["done"] == 200, "all 200 jobs done")

    ran = Counter(job_id for _, job_id in runs)
    assert set(ran) == {job.id for job in jobs}
    assert max(ran.values()) == 1  # none ran twice
    shares = Counter(name for name, _ in runs)
    assert shares["a"] > 0 and shares["b"] > 0
    assert a.outcomes["lost"] == b.outcomes["lost"] == 0
    assert repo.counts(a.engine) == {"pending": 0, "running": 0, "done": 200, "failed": 0}


async def _a_runs_one_job(a: JobRunner, b: JobRunner, handler: Any) -> tuple[Job, list[tuple[str, int]]]:
    """One job, started by runner a with `handler`; b (not started) records what it runs, returned with it."""
    a.register(KIND, handler)
    runs: list[tuple[str, int]] = []
    b.register(KIND, _recorder(runs, "b"))  # type: ignore[arg-type]
    [job] = add_jobs(a.engine, 1)
    await a.start()
    return job, runs


async def test_a_dead_runners_job_is_taken_over_when_its_lease_runs_out(
    runners: Callable[..., JobRunner],
) -> None:
    a, b = runners(), runners()
    started, never = asyncio.Event(), asyncio.Event()
    job, runs = await _a_runs_one_job(a, b, _blocker(started, never))
    assert job.id is not None
    await wait_until(started.is_set, "runner a running the job")
    assert (row(a.engine, job.id).status, row(a.engine, job.id).owner) == ("running", a.owner)

    await a.stop()  # a dies mid-job: no heartbeat, no outcome (a cancelled task records nothing)
    await a.tasks.cancel_all()
    assert row(a.engine, job.id).status == "running"
    await b.start()
    await wait_until(lambda: _done(b.engine) == 1, "runner b finishing the job")

    done = row(b.engine, job.id)
    assert (done.owner, done.attempts, done.lease_until) == (b.owner, 2, None)
    assert runs == [("b", job.id)]


async def test_a_heartbeat_keeps_a_long_job_with_its_runner(runners: Callable[..., JobRunner]) -> None:
    a, b = runners(), runners()
    runs: list[tuple[str, int]] = []

    async def slow(job: Job) -> None:
        runs.append(("a", job.id or 0))
        await asyncio.sleep(1.0)  # more than three leases of 0.3 s

    a.register(KIND, slow)
    b.register(KIND, _recorder(runs, "b"))  # type: ignore[arg-type]
    [job] = add_jobs(a.engine, 1)
    await a.start()
    await wait_until(lambda: bool(runs), "runner a starting the job")
    await b.start()  # polling all along the slow run
    await wait_until(lambda: a.outcomes["done"] == 1, "the job done")

    assert runs == [("a", job.id)]
    assert (row(a.engine, job.id or 0).owner, a.outcomes["done"], b.outcomes["lost"]) == (a.owner, 1, 0)


@pytest.mark.parametrize("fail", [False, True], ids=["returns", "raises"])
async def test_a_runner_that_lost_its_lease_cannot_record_its_outcome(
    runners: Callable[..., JobRunner], monkeypatch: pytest.MonkeyPatch, fail: bool
) -> None:
    a, b = runners(), runners()
    real_renew = repo.renew

    def renew(engine: Engine, job_ids: list[int], *, owner: str, lease_s: float) -> set[int]:
        if owner == a.owner:  # a stalls (a long pause): its lease is not renewed
            return set()
        return real_renew(engine, job_ids, owner=owner, lease_s=lease_s)

    monkeypatch.setattr(repo, "renew", renew)
    started, release = asyncio.Event(), asyncio.Event()
    job, runs = await _a_runs_one_job(a, b, _blocker(started, release, fail))
    assert job.id is not None
    await wait_until(started.is_set, "runner a running the job")
    await b.start()
    await wait_until(lambda: _done(b.engine) == 1, "runner b taking the job over and finishing it")

    release.set()  # a wakes up and tries to record its outcome
    await wait_until(lambda: a.outcomes["lost"] == 1, "runner a's outcome refused")
    final = row(a.engine, job.id)
    assert (final.status, final.owner, final.last_error) == ("done", b.owner, None)
    assert runs == [("b", job.id)]
    assert a.outcomes["done"] == a.outcomes["retried"] == 0


async def test_a_job_taken_over_past_max_attempts_fails_without_running(
    runners: Callable[..., JobRunner],
) -> None:
    runner = runners(job_max_attempts=2)
    runs: list[tuple[str, int]] = []
    runner.register(KIND, _recorder(runs, "a"))  # type: ignore[arg-type]
    [job] = add_jobs(runner.engine, 1)
    for dead in ("host:1:dead", "host:2:dead"):  # two runners died running it (their leases ran out)
        assert repo.claim(runner.engine, job.id or 0, owner=dead, lease_s=-1) is not None
    await runner.start()
    await wait_until(lambda: repo.counts(runner.engine)["failed"] == 1, "the job given up")

    assert runs == []
    assert "stopped during every attempt" in (row(runner.engine, job.id or 0).last_error or "")


async def test_start_leaves_a_live_runners_job_alone(runners: Callable[..., JobRunner]) -> None:
    runner = runners()
    runs: list[tuple[str, int]] = []
    runner.register(KIND, _recorder(runs, "a"))  # type: ignore[arg-type]
    held, free = add_jobs(runner.engine, 2)
    assert repo.claim(runner.engine, held.id or 0, owner="elsewhere:1:live", lease_s=60) is not None
    await runner.start()  # before leases, start-up put every running job back to pending
    await wait_until(lambda: runner.outcomes["done"] == 1, "the pending job run")

    # One poll claims every due job, oldest first: the older, held job was not due.
    assert runs == [("a", free.id)]
    assert (row(runner.engine, held.id or 0).status, row(runner.engine, held.id or 0).owner) == (
        "running",
        "elsewhere:1:live",
    )
    assert runner.snapshot()["owner"] == runner.owner and runner.snapshot()["lease_s"] == 0.3
