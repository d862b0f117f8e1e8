"""Save and resume a whole world as one JSON document (`machi world export/import`, `/v1/world/*`).

The document is `{"format": "machi-world", "version": 1, "world_id", "exported_at", <section>: [rows]}`
with one section per table below. Memory embeddings travel as base64 float32 bytes, so a restored world
retrieves exactly as the saved one did. Import checks the whole document first, then replaces the target
world's rows in one transaction: a bad document changes nothing.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from sqlalchemy import PrimaryKeyConstraint, UniqueConstraint, delete, func, text
from sqlmodel import Session, SQLModel, col, select

from backend.conversation.models import Conversation, Turn
from backend.council.models import CouncilRecord
from backend.emotion.models import EmotionRecord
from backend.errors import InvalidInput
from backend.gametime import utcnow
from backend.ids import require_id
from backend.intention.models import Intention, Told
from backend.memory.models import Memory, PersonMemory
from backend.planning.models import Plan
from backend.world.models import Agent, AgentStateEvent, PointOfInterest, WorldMeta

FORMAT = "machi-world"
VERSION = 1
#: Section name -> table. Order matters on import: agents before what refers to them.
SECTIONS: dict[str, type[SQLModel]] = {
    "agents": Agent,
    "pois": PointOfInterest,
    "memories": Memory,
    "plans": Plan,
    "conversations": Conversation,
    "turns": Turn,
    "emotions": EmotionRecord,
    "people": PersonMemory,
    "council_records": CouncilRecord,
    "agent_state_events": AgentStateEvent,
    "intentions": Intention,
    "told": Told,
}
REQUIRED_SECTIONS = ("agents", "pois")
#: Sections whose rows name an agent that must be in the document.
AGENT_ROWS = ("memories", "plans", "emotions", "people", "agent_state_events", "intentions")


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
    """Check a world document and build its rows (world_id still unset).

    Raises:
        InvalidInput: naming the first problem, e.g. `version` or `memories[3].content`.
    """
    if not isinstance(doc, Mapping):
        raise InvalidInput("a world document is a JSON object", details={"field": "(root)"})
    if doc.get("format") != FORMAT:
        raise InvalidInput(
            f"not a Machi world document: format is {doc.get('format')!r}, expected {FORMAT!r}",
            details={"field": "format"},
        )
    if doc.get("version") != VERSION:
        raise InvalidInput(
            f"unsupported world document version {doc.get('version')!r}; this server reads version {VERSION}",
            details={"field": "version"},
        )
    parsed: dict[str, list[SQLModel]] = {}
    for name, table in SECTIONS.items():
        raw = doc.get(name, None if name in REQUIRED_SECTIONS else [])
        if not isinstance(raw, list):
            raise InvalidInput(f"section {name!r} must be a list of rows", details={"field": name})
        parsed[name] = [_parse_row(name, index, table, row) for index, row in enumerate(raw)]
    _check_ids(parsed)
    _check_references(parsed)
    for name, rows in parsed.items():
        _check_unique(name, SECTIONS[name], rows)
    return parsed


def _parse_row(section: str, index: int, table: type[SQLModel], raw: Any) -> SQLModel:
    where = f"{section}[{index}]"
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"{where} must be an object", details={"field": where})
    data = {k: v for k, v in raw.items() if k != "world_id"}
    if table is Memory and data.get("embedding") is not None:
        data["embedding"] = _decode_embedding(data["embedding"], f"{where}.embedding")
    try:
        return table.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        raise InvalidInput(f"{where}.{field}: {error['msg']}", details={"field": f"{where}.{field}"}) from exc


def _decode_embedding(value: Any, where: str) -> bytes:
    try:
        raw = base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInput(f"{where} is not base64", details={"field": where}) from exc
    if len(raw) % 4:
        raise InvalidInput(f"{where} is not a float32 vector ({len(raw)} bytes)", details={"field": where})
    return raw


def _check_ids(parsed: dict[str, list[SQLModel]]) -> None:
    """Agents and places keep the ids the API lets a client choose (backend/ids.py): an id outside them could
    not be named in a URL. Session ids are left as stored: earlier versions took any, and a save must load."""
    for section in ("agents", "pois"):
        for index, row in enumerate(parsed[section]):
            require_id(row.id, f"{section}[{index}].id")  # type: ignore[attr-defined]


def _check_references(parsed: dict[str, list[SQLModel]]) -> None:
    agents = {row.id for row in parsed["agents"]}  # type: ignore[attr-defined]
    for section in AGENT_ROWS:
        for index, row in enumerate(parsed[section]):
            if row.agent_id not in agents:  # type: ignore[attr-defined]
                where = f"{section}[{index}].agent_id"
                raise InvalidInput(
                    f"{where}: agent {row.agent_id!r} is not in the document",  # type: ignore[attr-defined]
                    details={"field": where},
                )


def _check_unique(section: str, table: type[SQLModel], rows: list[SQLModel]) -> None:
    """Duplicate keys would fail half-way through the insert: name them up front instead."""
    keys = [
        [c.name for c in constraint.columns if c.name != "world_id"]
        for constraint in table.__table__.constraints  # type: ignore[attr-defined]
        if isinstance(constraint, PrimaryKeyConstraint | UniqueConstraint)
    ]
    for columns in keys:
        seen: dict[tuple[Any, ...], int] = {}
        for index, row in enumerate(rows):
            value = tuple(getattr(row, name) for name in columns)
            if any(part is None for part in value):
                continue
            if value in seen:
                where = f"{section}[{index}]"
                raise InvalidInput(
                    f"{where} repeats {'/'.join(columns)} {value!r} of {section}[{seen[value]}]",
                    details={"field": f"{where}.{columns[-1]}"},
                )
            seen[value] = index


def wipe_world(session: Session, world_id: str) -> dict[str, int]:
    """Delete every row of `world_id` (not committed: the caller owns the transaction)."""
    removed = {}
    for name, table in reversed(SECTIONS.items()):
        statement = delete(table).where(col(table.world_id) == world_id)  # type: ignore[attr-defined]
        removed[name] = session.execute(statement).rowcount  # type: ignore[attr-defined]
    return removed


def import_world(session: Session, world_id: str, doc: Any) -> dict[str, int]:
    """Replace `world_id` with the document's rows, in one transaction.

    Returns:
        The number of rows imported per section.

    Raises:
        InvalidInput: the document is malformed or of another version (nothing is changed).
    """
    parsed = parse_document(doc)
    try:
        wipe_world(session, world_id)
        for name, rows in parsed.items():
            _insert(session, world_id, SECTIONS[name], rows)
        meta = session.get(WorldMeta, world_id) or WorldMeta(world_id=world_id)
        meta.imported_at = utcnow()
        session.add(meta)
        session.commit()
    except BaseException:
        session.rollback()
        raise
    _advance_sequences(session)
    return {name: len(rows) for name, rows in parsed.items()}


def _insert(session: Session, world_id: str, table: type[SQLModel], rows: list[SQLModel]) -> None:
    for row in rows:
        row.world_id = world_id
    if table is CouncilRecord:
        _fresh_council_ids(session, rows)
    elif "id" in table.model_fields and table not in (Agent, PointOfInterest):
        if _ids_taken(session, table, [row.id for row in rows]):  # type: ignore[attr-defined]
            _renumber(session, table, rows)
            return
    session.add_all(rows)
    session.flush()


def _ids_taken(session: Session, table: type[SQLModel], ids: list[Any]) -> bool:
    """Whether another world already uses some of these integer ids (this world's rows are gone)."""
    if not ids:
        return False
    id_col = col(table.id)  # type: ignore[attr-defined]
    return session.exec(select(func.count()).select_from(table).where(id_col.in_(ids))).one() > 0


def _renumber(session: Session, table: type[SQLModel], rows: list[SQLModel]) -> None:
    """Give rows new ids; memories keep their evidence links pointing at the renumbered rows."""
    old_ids = [row.id for row in rows]  # type: ignore[attr-defined]
    for row in rows:
        row.id = None
    session.add_all(rows)
    session.flush()
    if table is Memory:
        mapping = {old: row.id for old, row in zip(old_ids, rows, strict=True)}  # type: ignore[attr-defined]
        for row in rows:
            row.evidence_ids = [mapping.get(e, e) for e in row.evidence_ids]  # type: ignore[attr-defined]
        session.flush()


def _fresh_council_ids(session: Session, rows: list[SQLModel]) -> None:
    # Council ids are unique across worlds: a copy of another world's record needs its own id.
    for row in rows:
        if session.get(CouncilRecord, row.id) is not None:  # type: ignore[attr-defined]
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
