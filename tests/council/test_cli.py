"""`machi council` runs a council in-process on the configured database and prints the record."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session, select

from backend.cli import main
from backend.config import Settings
from backend.council.models import CouncilRecord
from backend.storage.db import create_db_engine, init_db


@pytest.fixture
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("LLM_PROVIDER", "scripted")
    monkeypatch.setenv("LLM_RETRY_BACKOFF_S", "0")
    monkeypatch.setenv("LOAD_DEMO_WORLD", "true")
    return url


def test_cli_holds_the_demo_council_and_prints_the_record(
    env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["council", "商店街に休憩所を作る", "--rounds", "2", "--category", "町づくり"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("# 評議会 No.001: 商店街に休憩所を作る")
    for name in ("雪乃", "夏海", "春花"):  # the demo world's three sisters
        assert f"| {name} |" in out
    assert "opinion round 1" in err  # progress lines go to stderr
    engine = create_db_engine(env)
    init_db(engine)
    with Session(engine) as session:
        rows = session.exec(select(CouncilRecord)).all()
    assert [(r.number, r.status) for r in rows] == [(1, "done")]
    assert main(["council", "二つ目", "--members", "yukino,natsumi", "--rounds", "1", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("# 評議会 No.002: 二つ目") and "| 夏海 |" in out and "| 春花 |" not in out
    assert err == ""


def test_cli_refuses_bad_input(env: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["council", "x", "--rounds", "9"]) == 2
    assert "rounds" in capsys.readouterr().err
    assert main(["council", "x", "--members", "yukino,ghost"]) == 2
    assert "ghost" in capsys.readouterr().err


def test_cli_leaves_a_running_servers_councils_alone(env: str, capsys: pytest.CaptureFixture[str]) -> None:
    engine = create_db_engine(env)
    init_db(engine)
    with Session(engine) as session:
        session.add(CouncilRecord(id="live", number=1, title="served", status="running", members=["a", "b"]))
        session.commit()
    assert main(["council", "横で開く", "--rounds", "1", "--quiet"]) == 0
    with Session(engine) as session:
        assert session.get(CouncilRecord, "live").status == "running"  # type: ignore[union-attr]
    assert "No.002" in capsys.readouterr().out
