"""A schema change must not lose an existing database's data."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import inspect
from sqlmodel import Session, select

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
