"""The first read of a world document: every row checked, nothing written.

Rows are checked one at a time as they stream past (validation.py); across rows, only what is needed is
kept: the agents' ids, the keys each table must hold once, and the range of the integer ids (an import
into a database where another world uses some of them moves them past its largest, see service.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from backend.errors import InvalidInput
from backend.transfer import document
from backend.transfer.document import FORMAT, REQUIRED_SECTIONS, SECTIONS, VERSION, Header, Item, Section
from backend.transfer.models import TableRow, unique_keys
from backend.transfer.validation import parse_row

#: Sections whose rows name an agent that must be in the document.
AGENT_ROWS = ("memories", "plans", "emotions", "people", "agent_state_events", "intentions")


@dataclass
class Checked:
    """What the first read learnt: the header, rows per section, and each section's integer id range."""

    header: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SECTIONS, 0))
    id_ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: Sections present in the document (a required one missing is refused).
    present: set[str] = field(default_factory=set)

    @property
    def world_id(self) -> str | None:
        value = self.header.get("world_id")
        return value if isinstance(value, str) else None


class DocumentCheck:
    """Feed it a document's items (`add`), then `finish()`; each raises InvalidInput at the first problem."""

    def __init__(self, keep: Callable[[str, TableRow], None] | None = None) -> None:
        self.result = Checked()
        self._keep = keep  # given every parsed row (parse_document keeps them)
        self._agents: set[str] = set()
        self._unknown_agents: dict[str, str] = {}  # agent id -> the first row field naming it
        self._seen: dict[tuple[str, int], dict[tuple[Any, ...], int]] = {}

    def add(self, item: Item) -> None:
        if isinstance(item, Header):
            self._header(item)
            return
        if isinstance(item, Section):
            self.result.present.add(item.name)
            return
        result, section = self.result, item.section
        row = parse_row(section, item.index, item.data)
        result.counts[section] += 1
        if section == "agents":
            agent_id = row.id  # type: ignore[attr-defined]
            self._agents.add(agent_id)
            self._unknown_agents.pop(agent_id, None)
        elif section in AGENT_ROWS:
            agent_id = row.agent_id  # type: ignore[attr-defined]
            if agent_id not in self._agents:
                self._unknown_agents.setdefault(agent_id, f"{section}[{item.index}].agent_id")
        self._check_unique(section, item.index, row)
        row_id = getattr(row, "id", None)
        if isinstance(row_id, int):
            low, high = result.id_ranges.get(section, (row_id, row_id))
            result.id_ranges[section] = (min(low, row_id), max(high, row_id))
        if self._keep is not None:
            self._keep(section, row)

    def _header(self, item: Header) -> None:
        self.result.header[item.name] = item.value
        if item.name == "format" and item.value != FORMAT:
            raise InvalidInput(
                f"not a Machi world document: format is {item.value!r}, expected {FORMAT!r}",
                details={"field": "format"},
            )
        if item.name == "version" and item.value != VERSION:
            raise InvalidInput(
                f"unsupported world document version {item.value!r}; this server reads version {VERSION}",
                details={"field": "version"},
            )

    def _check_unique(self, section: str, index: int, row: TableRow) -> None:
        """Duplicate keys would fail half-way through the insert: name them up front instead."""
        for number, columns in enumerate(unique_keys(SECTIONS[section])):
            value = tuple(getattr(row, name) for name in columns)
            if any(part is None for part in value):
                continue
            seen = self._seen.setdefault((section, number), {})
            first = seen.setdefault(value, index)
            if first != index:
                where = f"{section}[{index}]"
                raise InvalidInput(
                    f"{where} repeats {'/'.join(columns)} {value!r} of {section}[{first}]",
                    details={"field": f"{where}.{columns[-1]}", "section": section, "index": index},
                )

    def finish(self) -> Checked:
        """The result, once the references between rows and the header are known to hold."""
        header = self.result.header
        if "format" not in header:
            raise InvalidInput(
                f"not a Machi world document: no format {FORMAT!r}", details={"field": "format"}
            )
        if "version" not in header:
            raise InvalidInput("the world document has no version", details={"field": "version"})
        for name in REQUIRED_SECTIONS:
            if name not in self.result.present:
                raise InvalidInput(f"section {name!r} is missing", details={"field": name})
        if self._unknown_agents:
            agent_id, where = next(iter(self._unknown_agents.items()))
            raise InvalidInput(
                f"{where}: agent {agent_id!r} is not in the document", details={"field": where}
            )
        return self.result


def check_document(items: Iterable[Item], keep: Callable[[str, TableRow], None] | None = None) -> Checked:
    """Check a whole document's items (from `document.read` or `document.walk`).

    Raises:
        InvalidInput: naming the first problem, e.g. `version` or `memories[3].importance`.
    """
    check = DocumentCheck(keep)
    for item in items:
        check.add(item)
    return check.finish()


def parse_document(doc: Any) -> dict[str, list[TableRow]]:
    """Check a world document held in memory and build its rows (world_id still unset).

    Raises:
        InvalidInput: naming the first problem, e.g. `version` or `memories[3].content`.
    """
    parsed: dict[str, list[TableRow]] = {name: [] for name in SECTIONS}
    check_document(document.walk(doc), keep=lambda section, row: parsed[section].append(row))
    return parsed
