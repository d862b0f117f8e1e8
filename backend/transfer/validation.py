"""A world document's rows, checked by the models the write API uses: an import stores nothing a client could
not have written through the API (one definition of a valid agent, place, memory and plan).

A row is first read as its table model (types, defaults), then its fields go through the write API's models:
an agent's persona through `AgentUpsert` and its last state field by field through `StateReport`'s fields; a
place through `PoiUpsert`; a memory through `MemoryCreate` (its last access through `MemoryCreate`'s day and
hour fields); a plan's day and reason through `PlanRequest`'s and its items through `PlanPublic`'s; a state
history row through `StateReport`. Agent and place ids follow the id rule (backend/ids.py). In every section,
numbers fit the database (64-bit integers, finite floats); a memory's embedding is finite float32 values.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Mapping
from functools import cache
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, TypeAdapter, ValidationError

from backend.errors import InvalidInput
from backend.ids import id_problem
from backend.memory.models import Memory, MemoryCreate
from backend.planning.models import Plan
from backend.planning.schemas import PlanPublic, PlanRequest
from backend.transfer.models import SECTIONS, TableRow
from backend.world.models import Agent, AgentStateEvent, PointOfInterest
from backend.world.schemas import AgentUpsert, PoiUpsert, StateReport

#: The database keeps integers in 64 bits: a larger one was a 500 on insert.
MAX_INT = 2**63 - 1


class RowProblem(ValueError):
    """What is wrong with one field of a row (`field` is the row's own name for it)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


def parse_row(section: str, index: int, raw: Any, *, checked: bool = False) -> TableRow:
    """The table row for one row of a document (world_id unset); `checked=True` skips the write API's checks
    (the row passed them already, in an earlier read of the same file).

    Raises:
        InvalidInput: naming the row and field, e.g. `memories[3].importance` (a 422).
    """
    row_id = raw.get("id") if isinstance(raw, Mapping) else None
    try:
        if not isinstance(raw, Mapping):
            raise RowProblem("", "must be an object")
        # A memory's revision counts writes in the database it came from: here it starts over (memory/cache.py).
        data = {key: value for key, value in raw.items() if key not in ("world_id", "rev")}
        _check_numbers(data, "")
        table = SECTIONS[section]
        if table is Memory and data.get("embedding") is not None:
            data["embedding"] = _decode_embedding(data["embedding"])
        row = _validated(table, data)
        if not checked and section in RULES:
            RULES[section](row)
        return row
    except RowProblem as problem:
        raise _refusal(section, index, row_id, problem) from None


def _refusal(section: str, index: int, row_id: Any, problem: RowProblem) -> InvalidInput:
    where = f"{section}[{index}]"
    field = f"{where}{'.' if problem.field and not problem.field.startswith('[') else ''}{problem.field}"
    named = f" (id {row_id!r})" if isinstance(row_id, str | int) and not isinstance(row_id, bool) else ""
    return InvalidInput(
        f"{field}{named}: {problem.message}",
        details={"field": field, "section": section, "index": index, "id": row_id if named else None},
    )


def _check_numbers(value: Any, path: str, depth: int = 0) -> None:
    """Every number inside a row is one the database stores: integers in 64 bits, floats finite (1e400
    reads as infinity). The document reader bounds the nesting; a document given as a dict stops at 64."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not -MAX_INT - 1 <= value <= MAX_INT:
            raise RowProblem(path, "is past the 64-bit integers the database stores")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise RowProblem(path, "is not a finite number")
    elif isinstance(value, Mapping) and depth < 64:
        for key, inner in value.items():
            _check_numbers(inner, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(value, list) and depth < 64:
        for position, inner in enumerate(value):
            _check_numbers(inner, f"{path}[{position}]", depth + 1)


def _decode_embedding(value: Any) -> bytes:
    try:
        raw = base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise RowProblem("embedding", "is not base64") from exc
    if len(raw) % 4:
        raise RowProblem("embedding", f"is not a float32 vector ({len(raw)} bytes)")
    if not np.isfinite(np.frombuffer(raw, dtype=np.float32)).all():
        raise RowProblem("embedding", "holds values that are not finite numbers (NaN or infinity)")
    return raw


def _validated(model: type[Any], data: Any, rename: Mapping[str, str] | None = None) -> Any:
    """`model.model_validate(data)`, its first error as a RowProblem on the row's field (`rename`: the
    model's field name -> the row's)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _problem(exc, rename) from exc


def _problem(exc: ValidationError, rename: Mapping[str, str] | None = None) -> RowProblem:
    error = exc.errors()[0]
    path = ""
    for part in error["loc"]:
        path += f"[{part}]" if isinstance(part, int) else f"{'.' if path else ''}{part}"
    for source, target in (rename or {}).items():
        if path == source or path.startswith((f"{source}.", f"{source}[")):
            path = target + path[len(source) :]
            break
    return RowProblem(path, error["msg"])


@cache
def _field_adapter(model: type[BaseModel], name: str) -> TypeAdapter[Any]:
    field = model.model_fields[name]
    annotation: Any = field.annotation
    form: Any = Annotated[annotation, *field.metadata] if field.metadata else annotation
    return TypeAdapter(form)


def _check_fields(model: type[BaseModel], values: Mapping[str, tuple[str, Any]]) -> None:
    """Each value (row field -> (the model's field, value)) by the model's own field; None is left alone."""
    for row_field, (name, value) in values.items():
        if value is None:
            continue
        try:
            _field_adapter(model, name).validate_python(value)
        except ValidationError as exc:
            problem = _problem(exc)
            inner = (
                problem.field if problem.field.startswith("[") or not problem.field else f".{problem.field}"
            )
            raise RowProblem(row_field + inner, problem.message) from exc


def _require_id(value: str) -> None:
    problem = id_problem(value)
    if problem is not None:
        raise RowProblem("id", problem)


def _agent(row: TableRow) -> None:
    assert isinstance(row, Agent)
    _require_id(row.id)
    _validated(AgentUpsert, {name: getattr(row, name) for name in AgentUpsert.model_fields})
    # The last state Unity reported: each part as a state report takes it (a row from before a part was kept
    # has it null).
    _check_fields(
        StateReport,
        {
            "state": ("state", row.state),
            "location_name": ("location_name", row.location_name),
            "position": ("position", row.position),
            "state_day": ("day", row.state_day),
            "state_time_of_day": ("time_of_day", row.state_time_of_day),
        },
    )


def _poi(row: TableRow) -> None:
    assert isinstance(row, PointOfInterest)
    _require_id(row.id)
    body = {
        "name": row.name,
        "kind": row.kind,
        "description": row.description,
        "position": {"x": row.x, "y": row.y, "z": row.z},
    }
    _validated(PoiUpsert, body, rename={"position.x": "x", "position.y": "y", "position.z": "z"})


def _memory(row: TableRow) -> None:
    assert isinstance(row, Memory)
    body = {
        "type": row.type,
        "content": row.content,
        "importance": row.importance,
        "location_name": row.location_name,
        "tags": row.tags,
        "day": row.created_day,
        "time_of_day": row.created_time_of_day,
        "evidence_ids": row.evidence_ids,
    }
    _validated(MemoryCreate, body, rename={"day": "created_day", "time_of_day": "created_time_of_day"})
    _check_fields(
        MemoryCreate,
        {
            "last_accessed_day": ("day", row.last_accessed_day),
            "last_accessed_time_of_day": ("time_of_day", row.last_accessed_time_of_day),
        },
    )


def _plan(row: TableRow) -> None:
    assert isinstance(row, Plan)
    _check_fields(PlanRequest, {"day": ("day", row.day), "reason": ("reason", row.reason)})
    _check_fields(PlanPublic, {"items": ("items", row.items)})


def _state_event(row: TableRow) -> None:
    assert isinstance(row, AgentStateEvent)
    fields = ("state", "location_name", "position", "day", "time_of_day")
    _validated(StateReport, {name: getattr(row, name) for name in fields})


#: Section -> the write API's check of its rows (sections not named here are checked by their table model).
RULES = {
    "agents": _agent,
    "pois": _poi,
    "memories": _memory,
    "plans": _plan,
    "agent_state_events": _state_event,
}
