"""The world document's shape, and reading one as a stream of header values and rows.

A document is `{"format": "machi-world", "version": 1, "world_id", "exported_at", "embedder", <section>: [rows]}` with one
section per table in SECTIONS. `read` parses a file incrementally (ijson): one row is built at a time and
dropped once handed over, so reading a 100 MB export holds one row, not the document. `walk` gives the same
items from a document already in memory (a bundled town, a test), so both go through the same checks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any

import ijson
from ijson.common import ObjectBuilder

from backend.errors import InvalidInput, MachiError
from backend.transfer.models import SECTIONS

FORMAT = "machi-world"
VERSION = 1
REQUIRED_SECTIONS = ("agents", "pois")
#: The top-level values besides the sections; anything else at the top is skipped unread.
HEADERS = ("format", "version", "world_id", "exported_at", "embedder")
#: Levels of nesting a document may have (a row is two levels in; its deepest field a few more). Deeper is
#: refused while parsing: stored JSON that deep could not be written back out.
MAX_DEPTH = 32
_OPEN = {"start_map", "start_array"}
_CLOSE = {"end_map", "end_array"}


@dataclass(frozen=True)
class Row:
    """One row of a section, as parsed (not yet checked)."""

    section: str
    index: int
    data: Any


@dataclass(frozen=True)
class Header:
    """A top-level value outside the sections (`format`, `version`, `world_id`, ...)."""

    name: str
    value: Any


@dataclass(frozen=True)
class Section:
    """A section starts (its rows follow): an empty section is there too."""

    name: str


Item = Row | Header | Section


def unreadable(reason: str) -> MachiError:
    """The 400 for a document that is not JSON the server can read (the API's `invalid_json` answer)."""
    problem = {"field": "body", "message": reason, "type": "json_invalid"}
    return MachiError(
        f"the world document is not valid JSON: {reason}", details=[problem], code="invalid_json"
    )


def read(source: IO[bytes]) -> Iterator[Item]:
    """The document's header values and rows, in file order, parsed as they are read.

    Raises:
        MachiError: `invalid_json` (400) when the bytes are not JSON (bad UTF-8, cut short, nested too deep).
        InvalidInput: the JSON is not a world document's shape (not an object, a section that is no list), or
            a row holds a number past what the database stores (naming the row and field, as validation does).
    """
    events = _Events(source)
    try:
        yield from _document(events)
    except ijson.JSONError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else "it could not be parsed"
        if "overflow" in reason and events.row is not None:
            raise _number_too_large(events) from exc
        raise unreadable(reason) from exc


class _Events:
    """ijson's parse events (C backend, floats as floats), remembering where the parse is.

    With `use_float` the C backend refuses an integer past 64 bits or a float past 1e308 ("overflow") rather
    than building it; without it, a 5,000-digit integer crashed the process (ijson 3.6, yajl2_c). Such a
    number is no value the database stores either: inside a row it is a 422 naming the row and field.
    """

    def __init__(self, source: IO[bytes]) -> None:
        self._events = ijson.parse(source, use_float=True)
        self.last: tuple[str, str, Any] = ("", "", None)
        self.row: tuple[str, int] | None = None  # the row being built

    def __iter__(self) -> _Events:
        return self

    def __next__(self) -> tuple[str, str, Any]:
        self.last = next(self._events)
        return self.last


def _number_too_large(events: _Events) -> InvalidInput:
    assert events.row is not None
    section, index = events.row
    prefix, event, value = events.last
    path = f"{prefix}.{value}" if event == "map_key" else prefix
    # ijson's prefix: "memories.item.evidence_ids.item" -> the row's field "evidence_ids".
    field = ".".join(part for part in path.split(".")[2:] if part != "item")
    where = f"{section}[{index}]" + (f".{field}" if field else "")
    return InvalidInput(
        f"{where}: a number past what the database stores (64-bit integers, floats up to 1e308)",
        details={"field": where, "section": section, "index": index, "id": None},
    )


def _document(events: _Events) -> Iterator[Item]:
    _, event, _ = next(events)
    if event != "start_map":
        raise _not_an_object()
    seen: set[str] = set()
    for _, event, name in events:
        if event == "end_map":
            for _ in events:  # ijson reports anything after the object (trailing garbage) here
                pass
            return
        _, event, value = next(events)
        if name not in SECTIONS:
            built = _build(events, event, value, depth=1, keep=name in HEADERS)
            if name in HEADERS:
                yield Header(name, built)
            continue
        _first_time(name, seen)
        if event != "start_array":
            raise _not_a_list(name)
        yield Section(name)
        yield from _rows(events, name)


def _rows(events: _Events, section: str) -> Iterator[Row]:
    index = 0
    events.row = (section, index)
    for _, event, value in events:
        if event == "end_array":
            break
        yield Row(section, index, _build(events, event, value, depth=2))
        index += 1
        events.row = (section, index)
    events.row = None


def _build(events: _Events, event: str, value: Any, depth: int, *, keep: bool = True) -> Any:
    """The value that starts with this event (a scalar, or a whole object or list up to its end); with
    `keep=False` its events are only consumed."""
    if event not in _OPEN:
        return value
    builder = ObjectBuilder()
    builder.event(event, value)
    level = 1
    while level:
        _, event, value = next(events)
        if keep:
            builder.event(event, value)
        level += (event in _OPEN) - (event in _CLOSE)
        if depth + level > MAX_DEPTH:
            raise unreadable(f"it nests more than {MAX_DEPTH} levels deep")
    return builder.value if keep else None


def walk(doc: Any) -> Iterator[Item]:
    """The same items as `read`, from a document already parsed (a dict)."""
    if not isinstance(doc, Mapping):
        raise _not_an_object()
    for name, value in doc.items():
        if name not in SECTIONS:
            yield Header(name, value)
            continue
        if not isinstance(value, list):
            raise _not_a_list(name)
        yield Section(name)
        for index, row in enumerate(value):
            yield Row(name, index, row)


def _first_time(name: str, seen: set[str]) -> None:
    if name in seen:  # json.loads kept the last; a stream would have imported both
        raise InvalidInput(f"section {name!r} appears twice in the document", details={"field": name})
    seen.add(name)


def _not_an_object() -> InvalidInput:
    return InvalidInput("a world document is a JSON object", details={"field": "(root)"})


def _not_a_list(name: str) -> InvalidInput:
    return InvalidInput(f"section {name!r} must be a list of rows", details={"field": name})
