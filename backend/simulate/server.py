"""Run the Machi app in-process on a free loopback port (uvicorn in a thread) for the simulation."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType
from typing import Any

import uvicorn

from backend.app import create_app
from backend.config import Settings


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerThread:
    """`with ServerThread(settings) as url:` serves the real app (lifespan included) until the block ends."""

    def __init__(self, settings: Settings, llm: Any = None, *, start_timeout_s: float = 60.0) -> None:
        self.port = free_port()
        config = uvicorn.Config(
            create_app(settings, llm=llm),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="on",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="machi-server", daemon=True)
        self.start_timeout_s = start_timeout_s

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + self.start_timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the Machi server did not start on {self.url}")
            time.sleep(0.02)
        return self.url

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=60)


def serving(settings: Settings, server: str | None) -> AbstractContextManager[str]:
    """`with serving(settings, args.server) as url:` the running server at `server`, else the configured app
    served in-process for the block (what every CLI command that talks HTTP does without `--server`)."""
    return nullcontext(server.rstrip("/")) if server else ServerThread(settings)


def api_key(settings: Settings, given: str | None) -> str | None:
    """The key a command sends: the one given (`--api-key`), else the configured MACHI_API_KEY."""
    return given or (settings.machi_api_key.get_secret_value() if settings.machi_api_key else None)
