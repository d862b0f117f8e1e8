"""The SQL that moves whole worlds: every section's rows out, a world's rows wiped, batches of rows in.

Transfer owns no table: it reads and replaces all of a world's tables as a unit, written against each
model's own table object (`SECTIONS`), so no column list is repeated here. The caller owns the transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import delete, func, insert, text
from sqlmodel import Session, SQLModel, col, select

from backend.council.models import CouncilRecord
from backend.gametime import utcnow
from backend.memory.models import PersonMemory
from backend.transfer.models import NAMED_IDS, SECTIONS
from backend.world import repo as world_repo
from backend.world.models import WorldMeta


def section_rows(session: Session, table: type[SQLModel], world_id: str) -> Sequence[SQLModel]:
    """A section's rows of `world_id`, in primary key order."""
    order = [col(c) for c in table.__table__.primary_key.columns]  # type: ignore[attr-defined]
    query = select(table).where(col(table.world_id) == world_id)  # type: ignore[attr-defined]
    return session.exec(query.order_by(*order)).all()


def wipe(session: Session, world_id: str) -> dict[str, int]:
    """Delete every section's rows of `world_id`, dependants first (not committed). Rows per section."""
    removed = {}
    for name, table in reversed(SECTIONS.items()):
        statement = delete(table).where(col(table.world_id) == world_id)  # type: ignore[attr-defined]
        removed[name] = session.execute(statement).rowcount  # type: ignore[attr-defined]
    return removed


def id_offset(session: Session, table: type[SQLModel], low: int, high: int) -> int | None:
    """How far ids `low`..`high` must move past the table's largest: None when no row uses one of them."""
    id_col = table.__table__.c.id  # type: ignore[attr-defined]
    conn = session.connection()
    if conn.execute(select(id_col).where(id_col.between(low, high)).limit(1)).first() is None:
        return None
    return int(conn.execute(select(func.max(id_col))).scalar() or 0) + 1 - low


def insert_rows(session: Session, table: type[SQLModel], rows: list[SQLModel]) -> None:
    """One batch of a section's rows (world_id set) in the session's transaction (Core, no ORM bookkeeping)."""
    if table is CouncilRecord:
        _fresh_council_ids(session, rows)
    values = [row.model_dump() for row in rows]
    given = [value for value in values if value.get("id", 0) is not None]
    generated = [
        {k: v for k, v in value.items() if k != "id"} for value in values if value.get("id", 0) is None
    ]
    statement = insert(table.__table__)  # type: ignore[attr-defined]
    for group in (given, generated):
        if group:
            session.connection().execute(statement, group)


def _fresh_council_ids(session: Session, rows: list[SQLModel]) -> None:
    # Council ids are unique across worlds: a copy of another world's record needs its own id.
    id_col = CouncilRecord.__table__.c.id  # type: ignore[attr-defined]
    ids = [row.id for row in rows]  # type: ignore[attr-defined]
    taken = set(session.connection().execute(select(id_col).where(id_col.in_(ids))).scalars())
    for row in rows:
        if row.id in taken:  # type: ignore[attr-defined]
            row.id = uuid.uuid4().hex


def mark(session: Session, world_id: str, *, imported: bool = False, demo: bool = False) -> None:
    """Note on the world's facts that it was imported or had a town loaded now (not committed)."""
    meta = session.get(WorldMeta, world_id) or WorldMeta(world_id=world_id)
    if imported:
        meta.imported_at = utcnow()
    if demo:
        meta.demo_loaded_at = utcnow()
    session.add(meta)
    world_repo.touch_facts(session, world_id)  # every process's cache of its places and names reloads


def advance_sequences(session: Session) -> None:
    """PostgreSQL: explicit ids do not move the id sequences, so move them past the imported rows."""
    if session.get_bind().dialect.name != "postgresql":
        return
    for table in SECTIONS.values():
        name = table.__tablename__
        if "id" in table.model_fields and table not in NAMED_IDS:
            session.execute(
                text(
                    f"SELECT setval(pg_get_serial_sequence('\"{name}\"', 'id'), "
                    f'COALESCE((SELECT MAX(id) FROM "{name}"), 1))'
                )
            )
    session.commit()


def merge_rows(session: Session, world_id: str, rows: Sequence[SQLModel]) -> None:
    """Add the rows to `world_id`, replacing rows with the same keys (not committed)."""
    for row in rows:
        row.world_id = world_id
        session.merge(row)


def replace_people(session: Session, world_id: str, people: Sequence[PersonMemory]) -> None:
    """Put these person memories in `world_id`, each replacing the one its agent had of that person."""
    for person in people:
        person.world_id = world_id
        # Not synchronized with the session: matching each delete against every object the session holds
        # made loading a 1,000-agent town (3,000 relationships) take 20 s, and the session holds no person
        # memory but the ones added here (a town names each pair once).
        session.execute(
            delete(PersonMemory)
            .where(
                col(PersonMemory.world_id) == world_id,
                col(PersonMemory.agent_id) == person.agent_id,
                col(PersonMemory.other_id) == person.other_id,
            )
            .execution_options(synchronize_session=False)
        )
        session.add(person)


def never_set_up(session: Session, world_id: str) -> bool:
    """True for a world with no facts of its own (no town loaded, nothing imported)."""
    return session.get(WorldMeta, world_id) is None
