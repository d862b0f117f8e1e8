"""A schema change must not lose an existing database's data."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import event, inspect
from sqlmodel import Session, select

from backend.memory.repo import MemoryRepo
from backend.storage.db import create_db_engine, init_db
from backend.world.models import Agent


def _old_database(path: Path) -> None:
    # An "older release": the agent table without several of today's columns, holding one row.
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE agent (world_id VARCHAR(64) NOT NULL, id VARCHAR(64) NOT NULL, name VARCHAR(100) NOT NULL,"
        " PRIMARY KEY (world_id, id))"
    )
    conn.execute("INSERT INTO agent (world_id, id, name) VALUES ('default', 'aoi', '葵')")
    conn.commit()
    conn.close()


def test_missing_columns_are_added_and_rows_kept(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    _old_database(db)
    engine = create_db_engine(f"sqlite:///{db}")

    changes = init_db(engine)

    assert any("ADD COLUMN" in c and "wake_hour" in c for c in changes)
    columns = {c["name"] for c in inspect(engine).get_columns("agent")}
    assert {"language", "wake_hour", "traits", "council_role"} <= columns
    with Session(engine) as session:
        agent = session.exec(select(Agent)).one()
    assert agent.name == "葵"
    assert agent.wake_hour == 7.0  # the literal default filled the old row
    assert agent.language == "ja"


def test_second_start_changes_nothing(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'new.db'}")
    init_db(engine)
    assert init_db(engine) == []


def test_sqlite_runs_in_wal_mode(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'sub' / 'wal.db'}")
    init_db(engine)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    assert (tmp_path / "sub").is_dir()


def test_an_older_database_gets_the_session_index_and_conversation_lookups_use_it(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'old-index.db'}")
    init_db(engine)
    with engine.begin() as conn:  # as a release before the index made it
        conn.exec_driver_sql("DROP INDEX ix_memory_world_agent_session")

    assert "CREATE INDEX ix_memory_world_agent_session ON memory" in init_db(engine)

    # The lookup a retried observation job makes: it must seek by session, not scan the agent's memories.
    statements: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        statements.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", capture)
    MemoryRepo(engine).has_observation(("default", "aoi"), "s1", "葵: こんにちは")
    event.remove(engine, "before_cursor_execute", capture)
    statement, parameters = statements[-1]
    with engine.connect() as conn:
        plan = " ".join(
            str(row[-1]) for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)
        )
    assert "ix_memory_world_agent_session" in plan
