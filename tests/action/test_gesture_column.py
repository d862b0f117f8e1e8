"""A database from before gestures existed gets the column, and its worlds read the default list."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlmodel import Session

from backend.storage.db import create_db_engine, init_db
from backend.world import service as world_service
from backend.world.facts import read_world_facts
from backend.world.schemas import DEFAULT_GESTURES


def test_an_older_world_meta_table_gains_gestures_and_keeps_its_rows(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TABLE worldmeta (world_id VARCHAR(64) NOT NULL PRIMARY KEY, demo_loaded_at DATETIME,"
        " imported_at DATETIME, created_at DATETIME NOT NULL)"
    )
    conn.execute("INSERT INTO worldmeta (world_id, created_at) VALUES ('default', '2026-01-01 00:00:00')")
    conn.commit()
    conn.close()
    engine = create_db_engine(f"sqlite:///{db}")

    changes = init_db(engine)

    assert any("ADD COLUMN" in c and "gestures" in c for c in changes)
    with Session(engine) as session:
        assert read_world_facts(session, "default").gestures == DEFAULT_GESTURES
        assert world_service.declare_gestures(session, "default", ["salute"]) == ["salute"]
    with Session(engine) as session:
        assert read_world_facts(session, "default").gestures == ("salute",)
        assert read_world_facts(session, "elsewhere").gestures == DEFAULT_GESTURES
