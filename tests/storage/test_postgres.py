"""Machi is not SQLite-only: the schema, migrations and JSON columns work on PostgreSQL.

Runs when MACHI_TEST_POSTGRES_URL points at a server whose role may create databases (CI starts one with
.ci/postgres.sh); skipped otherwise.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import make_url
from sqlmodel import Session, SQLModel, create_engine, select

from backend.storage.db import create_db_engine, init_db
from backend.world.models import Agent

BASE_URL = os.environ.get("MACHI_TEST_POSTGRES_URL")
pytestmark = pytest.mark.skipif(
    not BASE_URL, reason="set MACHI_TEST_POSTGRES_URL (see .ci/postgres.sh) to run the PostgreSQL tests"
)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty database for one test, dropped afterwards."""
    assert BASE_URL
    name = f"machi_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(BASE_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(BASE_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_schema_creates_and_round_trips_json(pg_url: str) -> None:
    engine = create_db_engine(pg_url)
    init_db(engine)
    tables = set(inspect(engine).get_table_names())
    assert {t.name for t in SQLModel.metadata.sorted_tables} <= tables
    with Session(engine) as session:
        session.add(
            Agent(id="aoi", name="葵", traits=["好奇心旺盛", "curious"], position={"x": 1.5, "y": 0, "z": -2})
        )
        session.commit()
    with Session(engine) as session:
        agent = session.exec(select(Agent).where(Agent.id == "aoi")).one()
    assert agent.traits == ["好奇心旺盛", "curious"]
    assert agent.position == {"x": 1.5, "y": 0, "z": -2}
    engine.dispose()


def test_additive_migration_on_postgres(pg_url: str) -> None:
    engine = create_db_engine(pg_url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TABLE agent (world_id VARCHAR(64), id VARCHAR(64), name VARCHAR(100),"
                " PRIMARY KEY (world_id, id))"
            )
        )
        conn.execute(text("INSERT INTO agent VALUES ('default', 'hikari', 'ひかり')"))
    changes = init_db(engine)
    assert any("wake_hour" in c for c in changes)
    with Session(engine) as session:
        agent = session.exec(select(Agent)).one()
    assert (agent.name, agent.sleep_hour) == ("ひかり", 23.0)
    assert init_db(engine) == []
    engine.dispose()
