"""`machi db vacuum`: prunes what the retention settings no longer keep, then gives the file its space back
(the refusal while a server holds the database is in test_lock.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, select

from backend.cli import main
from backend.config import Settings
from backend.gametime import utcnow
from backend.jobs.models import Job
from backend.llm.models import LLMCall
from backend.storage.db import create_db_engine, init_db


def _database_of(settings: Settings) -> Path:
    return Path(settings.database_url.removeprefix("sqlite:///"))


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())


def test_db_vacuum_prunes_then_shrinks_the_file(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    engine = create_db_engine(settings.database_url)
    init_db(engine)
    old = utcnow() - timedelta(days=30)
    with Session(engine) as session:
        for i in range(300):
            session.add(LLMCall(purpose="importance", raw_reply=f"{i}" + "記" * 10_000, created_at=old))
        session.add(Job(kind="memory.rate", status="done", updated_at=old))
        session.add(Job(kind="memory.rate", status="pending", updated_at=old))
        session.commit()
    engine.dispose()
    before = _size(_database_of(settings))
    assert main(["db", "vacuum"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pruned llm_calls: 299, jobs: 1; vacuumed: ")  # each table keeps its newest row
    assert _size(_database_of(settings)) < before / 10
    engine = create_db_engine(settings.database_url)
    with Session(engine) as session:
        assert list(session.exec(select(LLMCall.id))) == [300]
        assert [job.status for job in session.exec(select(Job).order_by(col(Job.id)))] == ["pending"]
    engine.dispose()
