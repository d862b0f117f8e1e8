"""Job rows in the database: adding them inside a caller's transaction, claiming, finishing, retrying (all the job table's SQL).

Synchronous functions taking an engine or a session; the runner calls them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import String, and_, bindparam, case, cast, delete, func, or_, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from backend.gametime import utcnow
from backend.jobs.models import LIVE, Job
from backend.storage.rows import build, insert_all

_JOB = Job.__table__  # type: ignore[attr-defined]
_FIND = select(_JOB.c.id, _JOB.c.dedupe_key, _JOB.c.status, _JOB.c.payload).where(
    _JOB.c.dedupe_key.in_(bindparam("keys", expanding=True))
)
_FIND_LOCKED = _FIND.with_for_update()
_DROP = delete(_JOB).where(_JOB.c.dedupe_key.in_(bindparam("keys", expanding=True)))
_SET_PAYLOAD = (
    update(_JOB)
    .where(_JOB.c.id == bindparam("job_id"))
    .values(payload=bindparam("new_payload"), updated_at=bindparam("now"))
)

# A job is due when it is pending and its time has come, or running under a lease that has run out (its
# runner stopped: crashed, killed, frozen) or has none (a row from a version without leases).
_DUE = or_(
    and_(_JOB.c.status == "pending", _JOB.c.run_after <= bindparam("now")),
    and_(
        _JOB.c.status == "running",
        or_(_JOB.c.lease_until.is_(None), _JOB.c.lease_until < bindparam("now")),
    ),
)


def _pick(which: Any) -> Any:
    """The due jobs among `which`, oldest first. SKIP LOCKED (PostgreSQL; SQLite has no row locks and drops the
    clause, its one writer at a time does the same): a runner passes over the rows another runner is claiming
    in the same instant instead of waiting for them."""
    return (
        select(_JOB.c.id)
        .where(_DUE, which)
        .order_by(_JOB.c.id)
        .limit(bindparam("limit"))
        .with_for_update(skip_locked=True)
    )


# Claims run for every job: built once.
_PICK = _pick(_JOB.c.id.in_(bindparam("ids", expanding=True)))
_PICK_ANY = _pick(_JOB.c.id.not_in(bindparam("exclude", expanding=True)))
# The UPDATE checks _DUE again: on SQLite the pick above took no lock. A claimed job of a merging kind gives
# its key up: it becomes `key#id`, so a prefix still finds the job (see live_with_prefix) but new work takes
# the key (a job taken over from a stopped runner gave it up already).
_CLAIM = (
    update(_JOB)
    .where(_JOB.c.id.in_(bindparam("picked", expanding=True)), _DUE)
    .values(
        status="running",
        owner=bindparam("me"),
        lease_until=bindparam("until"),
        attempts=_JOB.c.attempts + 1,
        updated_at=bindparam("now"),
        dedupe_key=case(
            (
                and_(
                    _JOB.c.status == "pending",
                    _JOB.c.kind.in_(bindparam("merging_kinds", expanding=True)),
                ),
                _JOB.c.dedupe_key + "#" + cast(_JOB.c.id, String),
            ),
            else_=_JOB.c.dedupe_key,
        ),
    )
    .returning(*_JOB.c)
)
# The outcome of a run, and a lease's renewal, count only while the runner still owns the job: one whose
# lease ran out and was taken over must not overwrite what the new owner records.
_MINE = and_(_JOB.c.owner == bindparam("me"), _JOB.c.status == "running")
_FINISH = (
    update(_JOB)
    .where(_JOB.c.id == bindparam("job_id"), _MINE)
    .values(status="done", last_error=None, lease_until=None, updated_at=bindparam("now"))
)
_RENEW = (
    update(_JOB)
    .where(_JOB.c.id.in_(bindparam("ids", expanding=True)), _MINE)
    .values(lease_until=bindparam("until"))
    .returning(_JOB.c.id)
)

#: Folds a new job's payload into the payload of a pending job with the same dedupe key.
Merge = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]


def add(session: Session, jobs: Sequence[Job], merge: Merge | None = None) -> list[Job]:
    """Add jobs to the caller's transaction (flushed, so they have ids). Returns the jobs added.

    A job whose dedupe key names a live job is skipped; a finished job holding the key gives it up (a
    world reset can reuse a session id, and its new conversation must get its own reflection). With `merge`,
    a job whose key names a *pending* job is folded into it instead (`merge(pending, new)` is its new
    payload): one job then does the work of several. Such jobs give their key up when claimed (see `claim`),
    so work that arrives while one runs starts a new job rather than joining one that has read its payload.
    """
    keys = [job.dedupe_key for job in jobs if job.dedupe_key]
    live: set[str] = set()
    if keys:
        # Core on the session's connection (these run with every turn and every stored memory). FOR UPDATE
        # (PostgreSQL; SQLite's write lock already serialises this): a claim cannot take the pending job
        # between this read and the payload update below.
        conn = session.connection()
        found = conn.execute(_FIND_LOCKED if merge is not None else _FIND, {"keys": keys}).all()
        live = {key for _, key, status, _ in found if key and status in LIVE}
        finished = [key for _, key, status, _ in found if key and status not in LIVE]
        if finished:
            conn.execute(_DROP, {"keys": finished})
        if merge is not None:
            pending = {
                str(key): (int(job_id), dict(payload))
                for job_id, key, status, payload in found
                if key and status == "pending"
            }
            _merge_into_pending(session, jobs, pending, merge)
    added = [job for job in jobs if job.dedupe_key not in live]
    insert_all(session, added)
    return added


def _merge_into_pending(
    session: Session, jobs: Sequence[Job], pending: dict[str, tuple[int, dict[str, Any]]], merge: Merge
) -> None:
    for job in jobs:
        target = pending.get(job.dedupe_key or "")
        if target is None:
            continue
        job_id, payload = target
        payload = merge(payload, job.payload)
        pending[job.dedupe_key or ""] = (job_id, payload)
        session.connection().execute(
            _SET_PAYLOAD, {"job_id": job_id, "new_payload": payload, "now": utcnow()}
        )


def pending_of(
    session: Session, world_id: str, kinds: Sequence[str]
) -> list[tuple[int, str, dict[str, Any]]]:
    """(id, kind, payload) of the world's pending jobs of these kinds, read in the caller's transaction (which
    may then drop or rewrite some: see `drop_pending`, `rewrite_pending`)."""
    query = select(_JOB.c.id, _JOB.c.kind, _JOB.c.payload).where(
        _JOB.c.world_id == world_id, _JOB.c.status == "pending", _JOB.c.kind.in_(list(kinds))
    )
    return [(int(i), str(kind), dict(payload)) for i, kind, payload in session.connection().execute(query)]


def drop_pending(session: Session, job_ids: Sequence[int]) -> int:
    """Delete these jobs if still pending (one claimed meanwhile runs). Returns how many went."""
    if not job_ids:
        return 0
    statement = delete(_JOB).where(_JOB.c.id.in_(list(job_ids)), _JOB.c.status == "pending")
    return int(session.connection().execute(statement).rowcount or 0)


def cancel_world(session: Session, world_id: str) -> int:
    """Delete the world's pending jobs in the caller's transaction (an import or reset replaces the rows they
    are about). One already running finishes: its writes match the world and agent it names. Returns how many
    went."""
    statement = delete(_JOB).where(_JOB.c.world_id == world_id, _JOB.c.status == "pending")
    return int(session.connection().execute(statement).rowcount or 0)


def rewrite_pending(session: Session, job_id: int, payload: dict[str, Any]) -> None:
    """Give a job a new payload if it is still pending (a claimed one has read its payload already)."""
    statement = (
        update(_JOB)
        .where(_JOB.c.id == job_id, _JOB.c.status == "pending")
        .values(payload=payload, updated_at=utcnow())
    )
    session.connection().execute(statement)


def claim(
    engine: Engine, job_id: int, merging_kinds: Sequence[str] = (), *, owner: str, lease_s: float
) -> Job | None:
    """Claim one job if it is due (see `claim_due`); None when it is not (someone else has it, or not yet)."""
    claimed = claim_due(engine, 1, merging_kinds, owner=owner, lease_s=lease_s, ids=[job_id])
    return claimed[0] if claimed else None


def claim_due(
    engine: Engine,
    limit: int,
    merging_kinds: Sequence[str] = (),
    *,
    owner: str,
    lease_s: float,
    ids: Sequence[int] | None = None,
    exclude: Sequence[int] = (),
) -> list[Job]:
    """Claim up to `limit` due jobs (of `ids`, when given; else any but `exclude`), oldest first, for `owner`.
    Returns them, claimed.

    Due: pending with `run_after` come, or running with a lease run out (its runner stopped). A claim sets the
    job running, owned by `owner` until now + `lease_s` (the owner renews it: `renew`), one attempt more. One
    transaction: a `SELECT ... FOR UPDATE SKIP LOCKED` picks the rows (PostgreSQL: two runners never wait for
    each other nor take the same row), an `UPDATE ... RETURNING` claims them (and checks they are still due,
    which is what keeps SQLite, whose writers take turns, from claiming a job twice). A job of one of the
    `merging_kinds` (jobs added with `merge`) gives its dedupe key up as it is claimed: the key becomes
    `key#id` (still under the key's prefix, so `live_with_prefix` keeps counting the job).
    """
    if limit <= 0:
        return []
    now = utcnow()
    with engine.begin() as conn:
        if ids is None:
            params = {"now": now, "limit": limit, "exclude": list(exclude)}
            picked = conn.execute(_PICK_ANY, params).scalars().all()
        else:
            picked = conn.execute(_PICK, {"now": now, "limit": limit, "ids": list(ids)}).scalars().all()
        if not picked:
            return []
        params = {"picked": list(picked), "now": now, "me": owner, "merging_kinds": list(merging_kinds),
                  "until": now + timedelta(seconds=lease_s)}  # fmt: skip
        rows = conn.execute(_CLAIM, params).mappings().all()
    return sorted((build(Job, dict(row)) for row in rows), key=lambda job: job.id or 0)


def renew(engine: Engine, job_ids: Sequence[int], *, owner: str, lease_s: float) -> set[int]:
    """Extend `owner`'s lease on these running jobs to now + `lease_s`. Returns the ids it still owns."""
    if not job_ids:
        return set()
    params = {"ids": list(job_ids), "me": owner, "until": utcnow() + timedelta(seconds=lease_s)}
    with engine.begin() as conn:
        return {int(i) for i in conn.execute(_RENEW, params).scalars()}


def finish(engine: Engine, job_id: int, *, owner: str) -> bool:
    """Mark the job done if `owner` still owns it. Returns whether it did (False: the lease was lost)."""
    with engine.begin() as conn:
        result = conn.execute(_FINISH, {"job_id": job_id, "now": utcnow(), "me": owner})
    return bool(result.rowcount)


def retry_later(
    engine: Engine, job_id: int, error: str, delay_s: float, *, owner: str, give_up: bool, count: bool
) -> bool:
    """Back to pending after `delay_s` (or `failed` for good), if `owner` still owns the job. `count=False`
    gives the attempt back. Returns whether it did (False: the lease was lost to another runner)."""
    values: dict[str, object] = {
        "status": "failed" if give_up else "pending",
        "last_error": error[:1000],
        "run_after": utcnow() + timedelta(seconds=delay_s),
        "lease_until": None,
        "updated_at": utcnow(),
    }
    if not count:
        values["attempts"] = _JOB.c.attempts - 1
    statement = update(_JOB).where(_JOB.c.id == job_id, _MINE).values(**values)
    with engine.begin() as conn:
        result = conn.execute(statement, {"me": owner})
    return bool(result.rowcount)


def orphaned(engine: Engine) -> int:
    """How many running jobs have no live lease (their runner stopped): due, any runner takes them over."""
    query = select(func.count()).where(_JOB.c.status == "running", _DUE)
    with engine.connect() as conn:
        return int(conn.execute(query, {"now": utcnow()}).scalar_one())


def live_with_prefix(engine: Engine, prefix: str) -> int:
    """How many pending or running jobs have a dedupe key starting with `prefix`."""
    query = select(func.count()).where(
        col(Job.dedupe_key).startswith(prefix, autoescape=True), col(Job.status).in_(LIVE)
    )
    with Session(engine) as session:
        return int(session.exec(query).one())


def counts(engine: Engine, world_id: str | None = None) -> dict[str, int]:
    query = select(Job.status, func.count()).group_by(Job.status)
    if world_id is not None:
        query = query.where(Job.world_id == world_id)
    with Session(engine) as session:
        found = {status: int(n) for status, n in session.exec(query)}
    return {status: found.get(status, 0) for status in ("pending", "running", "done", "failed")}


def listing(engine: Engine, world_id: str, status: str | None, kind: str | None, limit: int) -> list[Job]:
    query = select(Job).where(Job.world_id == world_id)
    if status is not None:
        query = query.where(Job.status == status)
    if kind is not None:
        query = query.where(Job.kind == kind)
    with Session(engine) as session:
        return list(session.exec(query.order_by(col(Job.id).desc()).limit(limit)))
