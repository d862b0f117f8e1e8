"""Additive migrations: bring an existing database up to the models without losing a row.

Machi's schema only grows: new tables are created by `create_all`, and new columns are added here with
`ALTER TABLE ... ADD COLUMN` (nullable, or with the column's server default). Renames and type changes are
not done automatically; they would get an explicit step in `EXPLICIT_STEPS` keyed by schema version.
"""

from __future__ import annotations

import logging

from sqlalchemy import MetaData, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.schema import Column

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1


def migrate(engine: Engine, metadata: MetaData) -> list[str]:
    """Add every column the models have and the database lacks. Returns the statements run."""
    done: list[str] = []
    with engine.begin() as conn:
        inspector = inspect(conn)
        existing_tables = set(inspector.get_table_names())
        for table in metadata.sorted_tables:
            if table.name not in existing_tables:
                continue
            present = {col["name"] for col in inspector.get_columns(table.name)}
            for column in table.columns:
                if column.name not in present:
                    done.append(_add_column(conn, table.name, column))
            indexes = {ix["name"] for ix in inspector.get_indexes(table.name)}
            for index in table.indexes:
                if index.name not in indexes:
                    index.create(conn)
                    done.append(f"CREATE INDEX {index.name} ON {table.name}")
        _record_version(conn)
    for statement in done:
        log.warning("schema migrated: %s", statement)
    return done


def _add_column(conn: Connection, table: str, column: Column) -> str:
    preparer = conn.dialect.identifier_preparer
    col_type = column.type.compile(dialect=conn.dialect)
    statement = f"ALTER TABLE {preparer.quote(table)} ADD COLUMN {preparer.quote(column.name)} {col_type}"
    default = _literal_default(column)
    if default is not None:
        statement += f" DEFAULT {default}"
    conn.execute(text(statement))
    return statement


def _literal_default(column: Column) -> str | None:
    # Existing rows get the Python-side default when it is a plain literal, so old data reads back valid.
    default = column.default
    value = getattr(default, "arg", None) if default is not None else None
    if value is None or callable(value):
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return None


def _record_version(conn: Connection) -> None:
    conn.execute(text("CREATE TABLE IF NOT EXISTS machi_schema (version INTEGER NOT NULL)"))
    current = conn.execute(text("SELECT MAX(version) FROM machi_schema")).scalar()
    if current is None or current < SCHEMA_VERSION:
        conn.execute(text("INSERT INTO machi_schema (version) VALUES (:v)"), {"v": SCHEMA_VERSION})
