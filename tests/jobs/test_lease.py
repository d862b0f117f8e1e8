"""The job table's claims, leases and outcomes (backend/jobs/repo.py) on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlmodel import Session, create_engine

from backend.jobs import repo
from backend.jobs.models import new_job
from backend.storage.db import create_db_engine, init_db
from tests.jobs.conftest import KIND, add_jobs, row


def test_a_running_job_is_due_again_only_once_its_lease_has_run_out(db_url: str) -> None:
    engine = create_db_engine(db_url)
    first, second, third = (job.id or 0 for job in add_jobs(engine, 3))
    assert [j.id for j in repo.claim_due(engine, 2, owner="x", lease_s=60)] == [first, second]
    assert repo.claim(engine, third, owner="dead", lease_s=-1) is not None  # its runner died: lapsed

    taken = repo.claim_due(engine, 10, owner="y", lease_s=60)

    assert [(j.id, j.owner, j.attempts) for j in taken] == [(third, "y", 2)]
    assert repo.claim_due(engine, 10, owner="z", lease_s=60) == []
    assert repo.orphaned(engine) == 0
    engine.dispose()


def test_renewals_and_outcomes_count_only_for_the_owner(db_url: str) -> None:
    engine = create_db_engine(db_url)
    [job] = add_jobs(engine, 1)
    job_id = job.id or 0
    claimed = repo.claim(engine, job_id, owner="x", lease_s=60)
    assert claimed is not None and claimed.lease_until is not None

    assert repo.renew(engine, [job_id], owner="y", lease_s=60) == set()
    assert not repo.finish(engine, job_id, owner="y")
    assert not repo.retry_later(engine, job_id, "boom", 1.0, owner="y", give_up=True, count=True)
    assert row(engine, job_id).status == "running"
    assert repo.renew(engine, [job_id], owner="x", lease_s=120) == {job_id}
    assert row(engine, job_id).lease_until > claimed.lease_until  # type: ignore[operator]

    assert repo.finish(engine, job_id, owner="x")
    done = row(engine, job_id)
    assert (done.status, done.owner, done.lease_until) == ("done", "x", None)
    assert repo.renew(engine, [job_id], owner="x", lease_s=60) == set()  # finished: nothing to renew
    engine.dispose()


def test_a_running_row_from_a_version_without_leases_is_taken_over(db_url: str) -> None:
    engine = create_db_engine(db_url)
    with engine.begin() as conn:  # the job table as it was before leases, with a job left running
        conn.execute(text("DROP INDEX ix_job_status_lease_until"))
        conn.execute(text("ALTER TABLE job DROP COLUMN lease_until"))
        conn.execute(text("ALTER TABLE job DROP COLUMN owner"))
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO job (world_id, kind, payload, status, attempts, run_after, created_at, updated_at)"
                " VALUES ('default', :kind, '{}', 'running', 1, :now, :now, :now)"
            ),
            {"kind": KIND, "now": "2026-01-01 00:00:00"},
        )

    changes = init_db(engine)

    assert any("lease_until" in c for c in changes) and any("ix_job_status_lease_until" in c for c in changes)
    assert repo.orphaned(engine) == 1
    [taken] = repo.claim_due(engine, 10, owner="new", lease_s=60)
    assert (taken.owner, taken.attempts, taken.status) == ("new", 2, "running")
    engine.dispose()


def test_a_merging_job_taken_over_keeps_the_key_it_gave_up(db_url: str) -> None:
    engine = create_db_engine(db_url)
    with Session(engine) as session:
        [job] = repo.add(session, [new_job("default", KIND, {}, dedupe_key="k")], merge=lambda a, b: a)
        session.commit()
    job_id = job.id or 0
    first = repo.claim(engine, job_id, [KIND], owner="dead", lease_s=-1)
    again = repo.claim(engine, job_id, [KIND], owner="y", lease_s=60)
    assert first is not None and again is not None
    assert first.dedupe_key == again.dedupe_key == f"k#{job_id}"
    engine.dispose()


def test_postgres_claims_pass_over_rows_another_runner_is_claiming(db_url: str) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("row locks: PostgreSQL only (SQLite's writers take turns)")
    engine = create_db_engine(db_url)
    first, second, third = (job.id or 0 for job in add_jobs(engine, 3))
    # A claim that waited for the lock would fail after 5 s instead of hanging the test.
    other = create_engine(db_url, connect_args={"options": "-c lock_timeout=5000"})
    with engine.connect() as locker, locker.begin():  # another runner, mid-claim of the oldest job
        locker.execute(text("SELECT id FROM job WHERE id = :id FOR UPDATE"), {"id": first})
        claimed = [job.id for job in repo.claim_due(other, 2, owner="y", lease_s=60)]
    assert claimed == [second, third]
    assert repo.claim_due(other, 2, owner="y", lease_s=60)[0].id == first  # free again
    other.dispose()
    engine.dispose()
