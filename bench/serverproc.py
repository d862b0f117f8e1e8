"""A Machi server as a real process on a free loopback port (the restart test and bench/load.py use it)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """`python -m backend.cli serve` (or `worker`) with a scripted engine and a file SQLite database or a URL."""

    def __init__(
        self,
        database: Path | str,
        *,
        port: int | None = None,
        env: dict[str, str] | None = None,
        root: Path = ROOT,
        args: Sequence[str] = (),
        command: str = "serve",
    ) -> None:
        """`database`: a SQLite file, or a DATABASE_URL. `root`: the source tree to serve (another checkout of
        Machi, e.g. an earlier commit's). `args`: more `machi serve` options (`--workers 2`, `--no-worker`).
        `command`: "worker" runs `machi worker` (no HTTP: `start` does not wait for it to answer)."""
        self.database = database
        self.root = root
        self.port = port or free_port()
        self.args, self.command = list(args), command
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("MACHI_", "LLM_", "DATABASE_"))},
            "DATABASE_URL": database if isinstance(database, str) else f"sqlite:///{database}",
            "LLM_PROVIDER": "scripted",
            "EMBEDDING_PROVIDER": "local",
            "LOAD_DEMO_WORLD": "true",
            "LOG_LEVEL": "warning",
            **(env or {}),
        }
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        command = [sys.executable, "-m", "backend.cli", self.command]
        if self.command == "serve":
            command += ["--port", str(self.port), *self.args]
        self.proc = subprocess.Popen(command, env=self.env, cwd=str(self.root))
        if self.command != "serve":
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError("the server did not come up")

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, exactly like a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def wait_for_jobs(self, timeout: float = 120.0) -> dict[str, int]:
        """Wait (bounded) until no job is pending or running; returns the final counts."""
        deadline = time.monotonic() + timeout
        counts: dict[str, int] = {}
        while time.monotonic() < deadline:
            counts = httpx.get(f"{self.url}/health", timeout=10).json()["jobs"]
            if counts["pending"] == 0 and counts["running"] == 0:
                return counts
            time.sleep(0.2)
        raise TimeoutError(f"jobs still pending after {timeout:g} s: {counts}")
