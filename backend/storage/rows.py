"""Table-model objects on the hot paths: building them cheaply, inserting them with one Core statement.

`build` makes a table-model object the way the ORM makes a loaded one, through SQLAlchemy's public inspection
API: the mapper's class manager makes the instance and its state (`Mapper.class_manager.new_instance`, what a
query does for each row it loads), and the field values (given, or the field's default) go into the state's
attribute dict (`InstanceState.dict`), where a load puts them. The model's own constructor sets each field
through SQLAlchemy's instrumentation (an attribute event per field), which measured about 150 µs for a
`Memory` (1.6 ms on a busy machine) against about 20 µs here, and `set_committed_value` per field about
100 µs; a turn builds several such objects (its memories, jobs and traces). Table models are not validated
by their constructor either, so nothing is lost.

`insert_all`: the ORM's unit of work (identity map, flush ordering, per-row bookkeeping) costs more than
these rows need: they are built in Python with every default filled, so a plain insert in the caller's
transaction, with RETURNING in parameter order (SQLite >= 3.35, PostgreSQL), gives each object its id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, TypeVar

from pydantic_core import PydanticUndefined
from sqlalchemy import insert, inspect
from sqlalchemy.engine import Engine
from sqlalchemy.orm import ClassManager
from sqlalchemy.sql import Executable
from sqlalchemy.sql.dml import ReturningInsert
from sqlmodel import Session, SQLModel

M = TypeVar("M", bound=SQLModel)


@cache
def _defaults(model: type[SQLModel]) -> list[tuple[str, Any, Callable[[], Any] | None]]:
    """Each field's name, default and default factory (PydanticUndefined when it has neither)."""
    return [
        (name, field.default, field.default_factory)  # type: ignore[misc]
        for name, field in model.model_fields.items()
    ]


def build(model: type[M], values: dict[str, Any]) -> M:
    """A new (transient) `model` object holding `values`, every other field at its default.

    Behaves as one made with `model(**values)`: it can be inserted (`insert_all`, or `session.add`), and later
    changes to it are tracked by the ORM as usual. Unknown names in `values` are ignored, as the constructor
    ignores them.
    """
    obj: M = _manager(model).new_instance()
    state = inspect(obj).dict
    given = obj.model_fields_set  # pydantic's set of the fields given, empty on a new instance
    for name, default, factory in _defaults(model):
        if name in values:
            state[name] = values[name]
            given.add(name)
        elif factory is not None:
            state[name] = factory()
        elif default is not PydanticUndefined:
            state[name] = default
    return obj


@cache
def _manager(model: type[SQLModel]) -> ClassManager[Any]:
    return inspect(model).class_manager


@cache
def _columns(model: type[SQLModel]) -> list[str]:
    """The table's columns an insert names (all but a generated `id`)."""
    return [column.name for column in model.__table__.columns if column.name != "id"]  # type: ignore[attr-defined]


@cache
def _insert_returning_id(model: type[SQLModel]) -> ReturningInsert[Any]:
    table = model.__table__  # type: ignore[attr-defined]
    return insert(table).returning(table.c.id, sort_by_parameter_order=True)


def values_of(obj: SQLModel) -> dict[str, Any]:
    """An object's column values for a Core insert or update (every column but a generated `id`)."""
    return {name: getattr(obj, name) for name in _columns(type(obj))}


def first(bind: Session | Engine, statement: Executable, params: dict[str, Any], model: type[M]) -> M | None:
    """The first row of a Core select of `model`'s table, as a `build` object (no ORM load: a detached
    object like one a closed session leaves). For the reads every turn makes: in the caller's session when
    given one (a turn reads all it needs in one), else on a connection of its own."""
    if isinstance(bind, Session):
        row = bind.connection().execute(statement, params).mappings().first()
    else:
        with bind.connect() as conn:
            row = conn.execute(statement, params).mappings().first()
    return build(model, dict(row)) if row is not None else None


def insert_all(session: Session, objects: Sequence[SQLModel]) -> None:
    """Insert objects of one table model in the session's transaction and set their `id`s."""
    if not objects:
        return
    statement = _insert_returning_id(type(objects[0]))
    rows = [values_of(obj) for obj in objects]
    for obj, new_id in zip(objects, session.connection().execute(statement, rows).scalars(), strict=True):
        obj.id = int(new_id)
