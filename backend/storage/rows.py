"""Inserting table-model objects with one Core `INSERT ... RETURNING` (the hot write paths: memories, jobs).

The ORM's unit of work (identity map, flush ordering, per-row bookkeeping) costs more than these rows need:
they are built in Python with every default filled, so a plain insert in the caller's transaction, with
RETURNING in parameter order (SQLite >= 3.35, PostgreSQL), gives each object its id.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from sqlalchemy import insert
from sqlalchemy.sql.dml import ReturningInsert
from sqlmodel import Session, SQLModel


@cache
def _plan(model: type[SQLModel]) -> tuple[list[str], ReturningInsert[Any]]:
    table = model.__table__  # type: ignore[attr-defined]
    columns = [column.name for column in table.columns if column.name != "id"]
    return columns, insert(table).returning(table.c.id, sort_by_parameter_order=True)


def insert_all(session: Session, objects: Sequence[SQLModel]) -> None:
    """Insert objects of one table model in the session's transaction and set their `id`s."""
    if not objects:
        return
    columns, statement = _plan(type(objects[0]))
    rows = [{name: getattr(obj, name) for name in columns} for obj in objects]
    for obj, new_id in zip(objects, session.connection().execute(statement, rows).scalars(), strict=True):
        obj.id = int(new_id)
