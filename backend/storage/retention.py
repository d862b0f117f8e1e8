"""Retention: the rows that only pile up (the model-call trace, finished jobs) are pruned by age and count.

Each `Rule` keeps a table's rows younger than `keep_days` and its newest `keep_rows` (0: no limit of that
kind); the caller gives the rules (`app.retention_rules`: storage knows no concept's tables). Older rows go
in batches of PRUNE_BATCH, each its own short transaction, so SQLite's one write lock is never held for long and the server's other writers get it between batches. The newest row of a table is
always kept: SQLite gives a new row the largest id plus one, so emptying a table would hand out the ids of
pruned rows again (and a dashboard link to an old call would show a new one).

The server prunes every PRUNE_INTERVAL_S (`keep_pruning`, started by the app; the database work runs in
worker threads, never on the event loop); `machi db vacuum` prunes at once and then gives the space back
(a deleted row's pages are only reused by SQLite, the file does not shrink without VACUUM).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Table, and_, delete, func, or_, select, text
from sqlalchemy.engine import Engine

from backend.gametime import utcnow
from backend.tasks import TaskRunner

log = logging.getLogger(__name__)

#: Rows deleted per transaction.
PRUNE_BATCH = 500
#: Seconds between two batches in the server, so writers waiting on SQLite's lock get it first.
PRUNE_PAUSE_S = 0.05


@dataclass(frozen=True)
class Rule:
    """What to keep of one table: rows younger than `keep_days` and the newest `keep_rows` (0: no limit)."""

    name: str
    table: Table
    age_column: str
    keep_days: float
    keep_rows: int
    #: Only rows with this column at this value are pruned (finished jobs, not pending ones).
    only: tuple[str, str] | None = None

    @property
    def enabled(self) -> bool:
        return self.keep_days > 0 or self.keep_rows > 0


def condition(engine: Engine, rule: Rule, now: datetime) -> ColumnElement[bool] | None:
    """The rows `rule` prunes now (worked out once per run), or None when there are none to prune."""
    table = rule.table
    scope = [table.c[rule.only[0]] == rule.only[1]] if rule.only else []
    expired: list[ColumnElement[bool]] = []
    with engine.connect() as conn:
        newest = conn.execute(select(func.max(table.c.id))).scalar()
        if not rule.enabled or newest is None:
            return None
        if rule.keep_days > 0:
            expired.append(table.c[rule.age_column] < now - timedelta(days=rule.keep_days))
        if rule.keep_rows > 0:
            nth = select(table.c.id).where(*scope).order_by(table.c.id.desc())
            first_kept = conn.execute(nth.offset(rule.keep_rows - 1).limit(1)).scalar()
            if first_kept is not None:
                expired.append(table.c.id < first_kept)
    return and_(table.c.id < newest, *scope, or_(*expired)) if expired else None


def delete_batch(engine: Engine, rule: Rule, where: ColumnElement[bool], batch: int = PRUNE_BATCH) -> int:
    """Delete up to `batch` of the oldest rows matching `where`, in one transaction. Returns how many."""
    table = rule.table
    oldest = select(table.c.id).where(where).order_by(table.c.id).limit(batch)
    with engine.begin() as conn:
        return int(conn.execute(delete(table).where(table.c.id.in_(oldest))).rowcount or 0)


def prune_now(engine: Engine, found: Sequence[Rule], batch: int = PRUNE_BATCH) -> dict[str, int]:
    """Prune every rule's table to its limits, batch after batch (the CLI). Returns the rows gone per rule."""
    gone: dict[str, int] = {}
    now = utcnow()
    for rule in found:
        gone[rule.name] = 0
        where = condition(engine, rule, now)
        while where is not None:
            deleted = delete_batch(engine, rule, where, batch)
            gone[rule.name] += deleted
            if deleted < batch:
                break
    return gone


async def prune(
    engine: Engine, found: Sequence[Rule], batch: int = PRUNE_BATCH, pause_s: float = PRUNE_PAUSE_S
) -> dict[str, int]:
    """`prune_now` for the server: each step in a worker thread, a pause between batches."""
    gone: dict[str, int] = {}
    now = utcnow()
    for rule in found:
        gone[rule.name] = 0
        where = await asyncio.to_thread(condition, engine, rule, now)
        while where is not None:
            deleted = await asyncio.to_thread(delete_batch, engine, rule, where, batch)
            gone[rule.name] += deleted
            if deleted < batch:
                break
            await asyncio.sleep(pause_s)
    if any(gone.values()):
        log.info("pruned %s", ", ".join(f"{n} {name}" for name, n in gone.items()))
    return gone


async def keep_pruning(engine: Engine, found: Sequence[Rule], interval_s: float, tasks: TaskRunner) -> None:
    """Prune now and then every `interval_s`, each run a tracked background task (cancel to stop)."""
    if not any(rule.enabled for rule in found):
        return
    while True:
        try:
            await tasks.spawn(prune(engine, found), name="prune")
        except Exception:  # noqa: BLE001 - logged by the task runner; the next run tries again
            pass
        await asyncio.sleep(interval_s)


def vacuum(engine: Engine) -> None:
    """Give the space of deleted rows back: VACUUM (SQLite, then the WAL file truncated) or VACUUM (ANALYZE)
    (PostgreSQL). Runs outside a transaction, as both require."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        if engine.dialect.name == "sqlite":
            conn.execute(text("VACUUM"))
            conn.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
        else:
            conn.execute(text("VACUUM (ANALYZE)"))
