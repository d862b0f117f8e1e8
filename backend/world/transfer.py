"""Save and resume a whole world as one JSON document (`machi world export/import`, `/v1/world/*`).

The document's shape is in document.py: one section per table. Memory embeddings travel as base64 float32
bytes, so a restored world retrieves exactly as the saved one did. Import reads the document twice, as a
stream: first every row is checked by the write API's models (check.py, validation.py) and nothing is
written; then, in one transaction, the world's rows and pending jobs are deleted and the rows inserted in
batches. A bad document changes nothing, and memory use does not grow with the file.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable
from typing import IO, Any

from sqlalchemy import delete, func, insert, text
from sqlmodel import Session, SQLModel, col, select

from backend.council.models import CouncilRecord
from backend.errors import InvalidInput
from backend.gametime import utcnow
from backend.jobs import repo as job_store
from backend.memory.models import Memory
from backend.world import document
from backend.world.check import Checked, check_document
from backend.world.document import FORMAT, SECTIONS, VERSION, Item, Row
from backend.world.models import DEFAULT_WORLD, Agent, PointOfInterest, WorldMeta
from backend.world.validation import MAX_INT, parse_row

#: Rows per insert statement on import (bounded memory; a few hundred rows per round trip).
IMPORT_BATCH = 500


def export_world(session: Session, world_id: str) -> dict[str, Any]:
    """Every row of `world_id` as one JSON-ready document."""
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "world_id": world_id,
        "exported_at": utcnow().isoformat(),
    }
    for name, table in SECTIONS.items():
        query = select(table).where(col(table.world_id) == world_id)  # type: ignore[attr-defined]
        rows = session.exec(query.order_by(*_order(table))).all()
        doc[name] = [_dump(row) for row in rows]
    return doc


def _order(table: type[SQLModel]) -> list[Any]:
    return [col(c) for c in table.__table__.primary_key.columns]  # type: ignore[attr-defined]


def _dump(row: SQLModel) -> dict[str, Any]:
    data = row.model_dump(mode="json", exclude={"world_id", "embedding"})
    if isinstance(row, Memory):
        data["embedding"] = base64.b64encode(row.embedding).decode("ascii") if row.embedding else None
    return data


def parse_document(doc: Any) -> dict[str, list[SQLModel]]:
    """Check a world document held in memory and build its rows (world_id still unset).

    Raises:
        InvalidInput: naming the first problem, e.g. `version` or `memories[3].content`.
    """
    parsed: dict[str, list[SQLModel]] = {name: [] for name in SECTIONS}
    check_document(document.walk(doc), keep=lambda section, row: parsed[section].append(row))
    return parsed


def wipe_world(session: Session, world_id: str) -> dict[str, int]:
    """Delete every row of `world_id` and its pending jobs (not committed: the caller owns the transaction).

    The jobs are about rows that go: a rating job run after an import rated whatever memory then had its id.
    """
    removed = {"jobs": job_store.cancel_world(session, world_id)}
    for name, table in reversed(SECTIONS.items()):
        statement = delete(table).where(col(table.world_id) == world_id)  # type: ignore[attr-defined]
        removed[name] = session.execute(statement).rowcount  # type: ignore[attr-defined]
    return removed


def import_world(session: Session, world_id: str, doc: Any) -> dict[str, int]:
    """Replace `world_id` with the rows of a document held in memory (see `import_stream`)."""
    checked = check_document(document.walk(doc))
    return _replace(session, world_id, document.walk(doc), checked)


def import_stream(
    session: Session, world_id: str | None, source: IO[bytes], checked: Checked | None = None
) -> dict[str, int]:
    """Replace a world with the rows of a document file, read as a stream: checked whole first, then
    inserted in batches in one transaction, so a bad document changes nothing. Memory use is one row and
    one batch, whatever the file's size.

    Args:
        world_id: the target world; None takes the document's own `world_id` (else `default`).
        source: the document, seekable (it is read twice).
        checked: the first read's result when the caller made it already (`check_stream`).

    Returns:
        The number of rows imported per section.

    Raises:
        InvalidInput: the document is malformed or of another version (nothing is changed).
        MachiError: `invalid_json` (400), the file is not JSON.
    """
    checked = checked or check_stream(source)
    source.seek(0)
    return _replace(session, world_id or checked.world_id or DEFAULT_WORLD, document.read(source), checked)


def check_stream(source: IO[bytes]) -> Checked:
    """The first read of `import_stream` (a CLI looks at the document's world id before importing)."""
    source.seek(0)
    return check_document(document.read(source))


def _replace(session: Session, world_id: str, items: Iterable[Item], checked: Checked) -> dict[str, int]:
    try:
        wipe_world(session, world_id)
        batches = Batches(session, world_id, checked.id_ranges)
        for item in items:
            if isinstance(item, Row):
                batches.add(item.section, parse_row(item.section, item.index, item.data, checked=True))
        batches.flush()
        meta = session.get(WorldMeta, world_id) or WorldMeta(world_id=world_id)
        meta.imported_at = utcnow()
        session.add(meta)
        session.commit()
    except BaseException:
        session.rollback()
        raise
    _advance_sequences(session)
    return dict(checked.counts)


class Batches:
    """Rows on their way into the database, IMPORT_BATCH at a time (Core inserts, no ORM bookkeeping).

    Integer ids are kept unless another world of the database uses some in the section's range: then the
    section's ids all move past the table's largest (memories' evidence links moved with them).
    """

    def __init__(self, session: Session, world_id: str, id_ranges: dict[str, tuple[int, int]]) -> None:
        self.session, self.world_id, self.id_ranges = session, world_id, id_ranges
        self.offsets: dict[str, int] = {}
        self.pending: list[SQLModel] = []
        self.section = ""

    def add(self, section: str, row: SQLModel) -> None:
        if section != self.section:
            self.flush()
            self.section = section
            if section not in self.offsets:
                self.offsets[section] = self._offset(section)
        row.world_id = self.world_id
        offset = self.offsets[section]
        if offset:
            row.id += offset  # type: ignore[attr-defined]
            if isinstance(row, Memory):
                low, high = self.id_ranges[section]
                row.evidence_ids = [e + offset if low <= e <= high else e for e in row.evidence_ids]
        self.pending.append(row)
        if len(self.pending) >= IMPORT_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            insert_rows(self.session, SECTIONS[self.section], self.pending)
            self.pending = []

    def _offset(self, section: str) -> int:
        table = SECTIONS[section]
        if section not in self.id_ranges or table in (Agent, PointOfInterest, CouncilRecord):
            return 0
        low, high = self.id_ranges[section]
        id_col = table.__table__.c.id  # type: ignore[attr-defined]
        conn = self.session.connection()
        if conn.execute(select(id_col).where(id_col.between(low, high)).limit(1)).first() is None:
            return 0
        offset = int(conn.execute(select(func.max(id_col))).scalar() or 0) + 1 - low
        if high + offset > MAX_INT:
            raise InvalidInput(
                f"{section}: ids up to {high} cannot move past the ones another world uses",
                details={"field": f"{section}[].id"},
            )
        return offset


def insert_rows(session: Session, table: type[SQLModel], rows: list[SQLModel]) -> None:
    """One batch of a section's rows (world_id set) in the session's transaction."""
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


def _advance_sequences(session: Session) -> None:
    """PostgreSQL: explicit ids do not move the id sequences, so move them past the imported rows."""
    bind = session.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for table in SECTIONS.values():
        name = table.__tablename__
        if "id" in table.model_fields and table not in (Agent, PointOfInterest, CouncilRecord):
            session.execute(
                text(
                    f"SELECT setval(pg_get_serial_sequence('\"{name}\"', 'id'), "
                    f'COALESCE((SELECT MAX(id) FROM "{name}"), 1))'
                )
            )
    session.commit()


def reset_world(session: Session, world_id: str, town: str = "demo") -> dict[str, int]:
    """Wipe `world_id` and load a bundled town into it (`machi world reset`, `machi world load NAME`).

    Raises:
        NotFound: no bundled town of that name (checked before anything is wiped).
    """
    from backend.world.demo import bundled_town, load_town

    found = bundled_town(town)
    try:
        wipe_world(session, world_id)
        counts = load_town(session, world_id, found)
        session.commit()
    except BaseException:
        session.rollback()
        raise
    return counts
