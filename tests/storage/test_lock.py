"""Servers and workers share a database; a command that rewrites it (world import/load/reset, db vacuum) needs
it alone: it is refused while any server runs, and a server is refused while it runs, with one line naming the
database (and the holder, when it is one exclusive process); a crashed holder's lock is free again."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url

from backend.app import create_app
from backend.config import Settings
from backend.scripted import ScriptedLLM
from backend.storage.lock import DatabaseInUse, hold_database
from bench.serverproc import ROOT

HOLDER = """
import sys, time
from backend.storage.lock import hold_database
lease = hold_database(sys.argv[1], role=sys.argv[2], shared=sys.argv[3] == "shared")
print("held", flush=True)
time.sleep(120)
"""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("MACHI_", "LLM_", "DATABASE_"))}


def _hold_in_another_process(url: str, role: str, shared: bool) -> subprocess.Popen[str]:
    command = [sys.executable, "-c", HOLDER, url, role, "shared" if shared else "alone"]
    proc = subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Another process holding the lock of a SQLite database in tmp_path alone (a world import)."""
    url = f"sqlite:///{tmp_path / 'machi.db'}"
    proc = _hold_in_another_process(url, "world import", shared=False)
    try:
        yield proc, url
    finally:
        proc.kill()
        proc.wait(timeout=30)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Another process holding the lock of a SQLite database in tmp_path shared, as a server does."""
    url = f"sqlite:///{tmp_path / 'machi.db'}"
    proc = _hold_in_another_process(url, "server", shared=True)
    try:
        yield proc, url
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_a_second_process_is_refused_naming_the_database_and_the_holder(
    holder: tuple[subprocess.Popen[str], str], tmp_path: Path
) -> None:
    proc, url = holder
    with pytest.raises(DatabaseInUse) as refused:
        hold_database(url)
    message = str(refused.value)
    assert "\n" not in message
    assert str((tmp_path / "machi.db").resolve()) in message
    assert f"pid {proc.pid}" in message and "a Machi world import" in message
    with pytest.raises(DatabaseInUse):
        hold_database(url, shared=True)  # a server waits for the import too


def test_servers_and_workers_share_the_database_and_exclude_a_rewrite(
    server: tuple[subprocess.Popen[str], str], tmp_path: Path
) -> None:
    _proc, url = server
    with hold_database(url, role="worker", shared=True) as lease:
        assert lease.key is not None
    with pytest.raises(DatabaseInUse) as refused:
        hold_database(url, role="world reset")
    message = str(refused.value)
    assert "\n" not in message and str((tmp_path / "machi.db").resolve()) in message
    assert "running Machi servers or workers" in message


def test_a_killed_holder_frees_the_database(holder: tuple[subprocess.Popen[str], str]) -> None:
    proc, url = holder
    proc.kill()  # SIGKILL: no clean-up runs; the kernel drops the file lock with the process
    proc.wait(timeout=30)
    with hold_database(url) as lease:
        assert lease.key is not None


def test_holds_within_one_process_share_the_lock_and_release_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'machi.db'}"
    first, second = hold_database(url), hold_database(url)
    first.release()
    first.release()  # releasing twice gives back one hold only
    probe = [
        sys.executable,
        "-c",
        "import sys; from backend.storage.lock import hold_database; hold_database(sys.argv[1])",
        url,
    ]
    assert subprocess.run(probe, cwd=ROOT, env=_env(), capture_output=True).returncode != 0  # still held
    second.release()
    assert subprocess.run(probe, cwd=ROOT, env=_env(), capture_output=True).returncode == 0


def test_the_app_holds_the_lock_while_it_runs(settings: Settings, scripted: ScriptedLLM) -> None:
    probe = [
        sys.executable,
        "-c",
        "import sys; from backend.storage.lock import hold_database; hold_database(sys.argv[1])",
        settings.database_url,
    ]
    shared = [*probe[:2], probe[2].replace("(sys.argv[1])", "(sys.argv[1], shared=True)"), probe[3]]
    with TestClient(create_app(settings, llm=scripted)):
        refused = subprocess.run(probe, cwd=ROOT, env=_env(), capture_output=True, text=True)
        assert refused.returncode != 0 and "DatabaseInUse" in refused.stderr
        assert subprocess.run(shared, cwd=ROOT, env=_env(), capture_output=True).returncode == 0
    assert subprocess.run(probe, cwd=ROOT, env=_env(), capture_output=True).returncode == 0


def test_in_memory_sqlite_needs_no_lock() -> None:
    assert hold_database("sqlite://").key is None


@pytest.mark.slow
def test_machi_serve_is_refused_while_a_world_import_holds_the_database(
    holder: tuple[subprocess.Popen[str], str],
) -> None:
    proc, url = holder
    env = {**_env(), "DATABASE_URL": url}
    command = [sys.executable, "-m", "backend.cli", "serve", "--port", "1"]
    refused = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    line = refused.stderr.strip()
    assert line.count("\n") == 0, line
    assert line.startswith("config error: the database ") and f"pid {proc.pid}" in line


@pytest.mark.parametrize("action", [["import", "{doc}"], ["load", "town25"]])
def test_world_import_and_load_are_refused_while_a_server_runs(
    server: tuple[subprocess.Popen[str], str], tmp_path: Path, action: list[str]
) -> None:
    _proc, url = server
    doc = tmp_path / "w.json"
    doc.write_text('{"world_id": "default"}', encoding="utf-8")
    env = {**_env(), "DATABASE_URL": url}
    command = [sys.executable, "-m", "backend.cli", "world", *(part.format(doc=doc) for part in action)]
    refused = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert refused.stderr.startswith("config error: the database ") and "Machi servers" in refused.stderr


def test_db_vacuum_is_refused_while_a_server_runs(server: tuple[subprocess.Popen[str], str]) -> None:
    _proc, url = server
    env = {**_env(), "DATABASE_URL": url}
    command = [sys.executable, "-m", "backend.cli", "db", "vacuum"]
    refused = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith("config error: the database ") and "Machi servers" in refused.stderr


@pytest.fixture
def held_pg(pg_url: str, request: pytest.FixtureRequest) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A fresh PostgreSQL database held by a server in another process (its lock shared when the test's
    parameter is True); the process is killed afterwards."""
    proc = _hold_in_another_process(pg_url, "server", shared=request.param)
    try:
        yield pg_url, proc
    finally:
        proc.kill()
        proc.wait(timeout=30)


@pytest.mark.parametrize("held_pg", [False], indirect=True, ids=["alone"])
def test_postgres_second_process_is_refused_naming_the_holder(
    held_pg: tuple[str, subprocess.Popen[bytes]],
) -> None:
    url, proc = held_pg
    with pytest.raises(DatabaseInUse) as refused:
        hold_database(url)
    message = str(refused.value)
    assert str(make_url(url).database) in message and f"machi server pid {proc.pid}" in message
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30  # the server ends the dead client's session, and its lock
    while True:
        try:
            hold_database(url).release()
            break
        except DatabaseInUse:
            assert time.monotonic() < deadline
            time.sleep(0.2)


@pytest.mark.parametrize("held_pg", [True], indirect=True, ids=["shared"])
def test_postgres_servers_share_the_database_and_exclude_a_rewrite(
    held_pg: tuple[str, subprocess.Popen[bytes]],
) -> None:
    url, _ = held_pg
    hold_database(url, role="worker", shared=True).release()
    with pytest.raises(DatabaseInUse) as refused:
        hold_database(url, role="world import")
    assert str(make_url(url).database) in str(refused.value) and "machi server" in str(refused.value)
