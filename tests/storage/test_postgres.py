"""Machi is not SQLite-only: the schema, migrations and JSON columns work on PostgreSQL.

Runs when MACHI_TEST_POSTGRES_URL points at a server whose role may create databases (CI starts one with
.ci/postgres.sh); skipped otherwise.
"""

from __future__ import annotations

import os

import pytest
from sqlalchemy import inspect, text
from sqlmodel import Session, SQLModel, select

from backend.config import Settings
from backend.storage.db import create_db_engine, init_db
from backend.world.models import Agent

BASE_URL = os.environ.get("MACHI_TEST_POSTGRES_URL")
pytestmark = pytest.mark.skipif(
    not BASE_URL, reason="set MACHI_TEST_POSTGRES_URL (see .ci/postgres.sh) to run the PostgreSQL tests"
)


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


def test_memories_ratings_and_a_conversation_on_postgres(pg_url: str, settings: Settings) -> None:
    """The hot write paths (Core inserts with RETURNING, the rating merge under FOR UPDATE, the job claim)
    through the real app on PostgreSQL."""
    from fastapi.testclient import TestClient

    from backend.app import create_app
    from backend.jobs.models import Job
    from backend.scripted import ScriptedLLM
    from tests.conftest import drain
    from tests.conversation.helpers import add_agents, turn

    llm = ScriptedLLM(seed=0)
    llm.enqueue({"ratings": [9, 2]}, purpose="importance")
    app = create_app(settings.model_copy(update={"database_url": pg_url, "importance_batch_s": 3.0}), llm=llm)
    with TestClient(app) as client:
        add_agents(client)
        for line in ("ヒカリに告白された", "カフェでコーヒーを飲んだ"):
            created = client.post("/v1/agents/aoi/memories", json={"type": "observation", "content": line})
            assert created.status_code == 201 and created.json()["id"] > 0
        drain(client)  # the second memory merged into the first one's pending job: one call rates both
        history: list[str] = []
        while True:
            reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "pg-1", history)).json()
            history.append(f"x: {reply['dialogue']}")
            if reply["is_conversation_end"]:
                break
        drain(client)
        memories = client.get("/v1/agents/aoi/memories", params={"limit": 100}).json()["memories"]
        with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
            job_rows = list(session.exec(select(Job)))
    rated = {m["content"]: (m["importance"], m["importance_source"]) for m in memories}
    assert rated["ヒカリに告白された"] == (9, "model") and rated["カフェでコーヒーを飲んだ"] == (2, "model")
    assert {m["importance_source"] for m in memories} == {"model"}  # the conversation's lines too
    assert sum(m["type"] == "observation" for m in memories) > 2  # the lines (near-duplicates merge)
    assert any(m["type"] == "reflection" for m in memories)
    assert {job.status for job in job_rows} == {"done"}
    assert llm.calls("importance")[0].options.facts["memories"] == [
        "ヒカリに告白された",
        "カフェでコーヒーを飲んだ",
    ]


def test_retention_prunes_in_batches_and_vacuums_on_postgres(pg_url: str, settings: Settings) -> None:
    """The batched DELETE ... WHERE id IN (SELECT ... LIMIT n) and VACUUM (ANALYZE), outside a transaction."""
    from datetime import timedelta

    from backend.app import retention_rules
    from backend.gametime import utcnow
    from backend.jobs.models import Job
    from backend.llm.models import LLMCall
    from backend.storage import retention

    engine = create_db_engine(pg_url)
    init_db(engine)
    old = utcnow() - timedelta(days=30)
    with Session(engine) as session:
        for _ in range(25):
            session.add(LLMCall(purpose="importance", raw_reply="記" * 1000, created_at=old))
        for status in ("done", "done", "failed", "pending"):
            session.add(Job(kind="memory.rate", status=status, updated_at=old))
        session.commit()
    gone = retention.prune_now(engine, retention_rules(settings), batch=10)
    retention.vacuum(engine)
    with Session(engine) as session:
        calls = list(session.exec(select(LLMCall.id)))
        jobs = sorted(job.status for job in session.exec(select(Job)))
    assert gone == {"llm_calls": 24, "jobs": 2} and len(calls) == 1 and jobs == ["failed", "pending"]
    engine.dispose()
