"""Save and resume a whole world as one JSON document (`machi world export/import`, `/v1/world/*`).

The document's shape is in document.py: one section per table. Memory embeddings travel as base64 float32
bytes with the identity of the embedder that made them, so a world restored under the same embedder
retrieves exactly as the saved one did, and one restored under another is re-embedded (memory/embedding.py). Import reads the document twice, as a
stream: first every row is checked by the write API's models (check.py, validation.py) and nothing is
written; then, in one transaction, the world's rows and pending jobs are deleted and the rows inserted in
batches. A bad document changes nothing, and memory use does not grow with the file.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Any

from backend.errors import InvalidInput
from backend.gametime import utcnow
from backend.jobs import repo as job_store
from backend.memory import embedding as memory_embedding
from backend.memory import repo as memory_repo
from backend.memory.models import Memory
from backend.transfer import document, repo
from backend.transfer.check import Checked, check_document
from backend.transfer.check import parse_document as parse_document  # a document in memory, as rows
from backend.transfer.demo import Town, bundled_town, load_town
from backend.transfer.document import FORMAT, SECTIONS, VERSION, Item, Row
from backend.transfer.models import NAMED_IDS, TableRow
from backend.transfer.validation import MAX_INT, parse_row
from backend.world import repo as world_repo
from backend.world.models import DEFAULT_WORLD

if TYPE_CHECKING:
    from backend.storage.db import Session

#: Rows per insert statement on import (bounded memory; a few hundred rows per round trip).
IMPORT_BATCH = 500


def export_world(session: Session, world_id: str, embedder: str | None = None) -> dict[str, Any]:
    """Every row of `world_id` as one JSON-ready document; `embedder` names the embedder of this server
    (each memory names the one that made its vector: an import under another embedder re-embeds it)."""
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "world_id": world_id,
        "exported_at": utcnow().isoformat(),
    }
    if embedder is not None:
        doc["embedder"] = embedder
    for name, table in SECTIONS.items():
        doc[name] = [_dump(row) for row in repo.section_rows(session, table, world_id)]
    return doc


def _dump(row: TableRow) -> dict[str, Any]:
    data = row.model_dump(mode="json", exclude={"world_id", "embedding", "rev"})
    if isinstance(row, Memory):
        data["embedding"] = base64.b64encode(row.embedding).decode("ascii") if row.embedding else None
    return data


def wipe_world(session: Session, world_id: str) -> dict[str, int]:
    """Delete every row of `world_id` and its pending jobs (not committed: the caller owns the transaction).

    The jobs are about rows that go: a rating job run after an import rated whatever memory then had its id.
    """
    memory_repo.replace_world(session, world_id)  # every process's memory index of the world reloads
    world_repo.touch_facts(session, world_id)  # and every process's cache of its places and names
    return {"jobs": job_store.cancel_world(session, world_id), **repo.wipe(session, world_id)}


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
        repo.mark(session, world_id, imported=True)
        # Memories whose vectors are another embedder's (or none) are embedded again by the worker; until
        # then retrieval finds them by their words.
        if checked.counts.get("memories"):
            memory_embedding.add_job(session, world_id)
        session.commit()
    except BaseException:
        session.rollback()
        raise
    repo.advance_sequences(session)
    return dict(checked.counts)


class Batches:
    """Rows on their way into the database, IMPORT_BATCH at a time (Core inserts, no ORM bookkeeping).

    Integer ids are kept unless another world of the database uses some in the section's range: then the
    section's ids all move past the table's largest (memories' evidence links moved with them).
    """

    def __init__(self, session: Session, world_id: str, id_ranges: dict[str, tuple[int, int]]) -> None:
        self.session, self.world_id, self.id_ranges = session, world_id, id_ranges
        self.offsets: dict[str, int] = {}
        self.pending: list[TableRow] = []
        self.section = ""

    def add(self, section: str, row: TableRow) -> None:
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
            repo.insert_rows(self.session, SECTIONS[self.section], self.pending)
            self.pending = []

    def _offset(self, section: str) -> int:
        table = SECTIONS[section]
        if section not in self.id_ranges or table in NAMED_IDS:
            return 0
        low, high = self.id_ranges[section]
        offset = repo.id_offset(self.session, table, low, high)
        if offset is None:
            return 0
        if high + offset > MAX_INT:
            raise InvalidInput(
                f"{section}: ids up to {high} cannot move past the ones another world uses",
                details={"field": f"{section}[].id"},
            )
        return offset


def reset_world(session: Session, world_id: str, town: str | Town = "demo") -> dict[str, int]:
    """Wipe `world_id` and load a town into it: a bundled one by name (`machi world reset`, `machi world load
    NAME`) or one already parsed (`machi world generate --load`).

    Raises:
        NotFound: no bundled town of that name (checked before anything is wiped).
    """
    found = bundled_town(town) if isinstance(town, str) else town
    try:
        wipe_world(session, world_id)
        counts = load_town(session, world_id, found)
        session.commit()
    except BaseException:
        session.rollback()
        raise
    return counts
