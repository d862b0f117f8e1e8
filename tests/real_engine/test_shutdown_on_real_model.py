"""SIGTERM stops `machi serve` on a real in-process model within seconds, even while it generates: an open
request is cancelled after a short grace, background model work is cancelled rather than waited for, the
generation stops at its next token, and the unfinished jobs stay in the job table for the next start."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import httpx

from bench.serverproc import ServerProcess
from tests.real_engine.conftest import REAL_THREADS

#: Generous: the point is "seconds, not minutes" (before this, one exit took 8.5 minutes).
EXIT_WITHIN_S = 20


def _wait_generating(server: ServerProcess, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        health = httpx.get(f"{server.url}/health", timeout=30).json()
        if health["llm_queue"]["in_flight"] >= 1 and health["jobs"]["running"] >= 1:
            return
        time.sleep(0.1)
    raise AssertionError(f"no background generation started: {health}")


def test_sigterm_exits_promptly_while_the_model_generates(smollm2: Path, tmp_path: Path) -> None:
    database = tmp_path / "machi.db"
    env = {
        "LLM_PROVIDER": "llamacpp",
        "LLAMACPP_MODEL_PATH": "package:smollm2",
        "LLAMACPP_THREADS": str(REAL_THREADS),
        "LLAMACPP_N_GPU_LAYERS": "0",
        "LLAMACPP_N_CTX": "2048",
        "LLM_TIMEOUT_S": "600",  # a generation that would run on for minutes
        "TURN_DEADLINE_S": "120",
        "IMPORTANCE_BATCH_S": "0",
    }
    server = ServerProcess(database, env=env)
    server.start(timeout=120)
    try:
        turn = {
            "agent_id": "aoi",
            "target_id": "hikari",
            "session_id": "s1",
            "history": [],
            "time_of_day": 10,
        }
        assert httpx.post(f"{server.url}/v1/conversation/turn", json=turn, timeout=300).status_code == 200
        assert httpx.post(
            f"{server.url}/v1/conversation/end", json={"session_id": "s1"}, timeout=60
        ).is_success
        _wait_generating(server)  # reflections and ratings: background jobs on the model
        plan = threading.Thread(  # and a request that waits for the model when SIGTERM comes
            target=lambda: httpx.post(f"{server.url}/v1/agents/aoi/plan", json={"day": 1}, timeout=600),
            daemon=True,
        )
        plan.start()
        time.sleep(0.5)
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        try:
            server.proc.wait(timeout=EXIT_WITHIN_S)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"machi serve still running {EXIT_WITHIN_S} s after SIGTERM") from exc
    finally:
        server.kill()
    with sqlite3.connect(database) as db:
        unfinished = db.execute("SELECT COUNT(*) FROM job WHERE status IN ('pending', 'running')").fetchone()[
            0
        ]
    assert unfinished >= 1  # left for the next start, which runs them again
