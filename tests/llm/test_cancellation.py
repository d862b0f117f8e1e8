"""A cancelled call closes its HTTP request, so a remote model stops generating for a caller that left.

A silent server on 127.0.0.1 reads each request and never answers; the test cancels the adapter's call (as
TimeoutLLM's wait_for or a preempting turn does) and waits for the server to see the connection closed.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from backend.config import Settings
from backend.errors import LLMTimeout
from backend.llm.base import LLM, GenerateOptions
from backend.llm.ollama import OllamaLLM
from backend.llm.openai_compat import OpenAILLM
from backend.llm.retry import TimeoutLLM
from tests.llm.conftest import settings_for

MESSAGES = [{"role": "user", "content": "話して"}]


class SilentServer:
    """Accepts connections, reads the request, never replies; counts requests and closed connections."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.requests = threading.Semaphore(0)
        self.closed = threading.Semaphore(0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        conn.settimeout(0.1)
        seen = False
        with conn:
            while not self._stop.is_set():
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    self.closed.release()  # the client hung up
                    return
                if not seen:
                    seen = True
                    self.requests.release()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


def _ollama(settings: Settings, url: str) -> LLM:
    return OllamaLLM.from_settings(settings_for(settings, "ollama", url, llm_timeout_s=60.0))


def _openai(settings: Settings, url: str) -> LLM:
    return OpenAILLM.from_settings(settings_for(settings, "openai", url, llm_timeout_s=60.0))


async def _wait(semaphore: threading.Semaphore) -> bool:
    return await asyncio.to_thread(semaphore.acquire, True, 10)


@pytest.mark.parametrize("make", [_ollama, _openai], ids=["ollama", "openai"])
@pytest.mark.parametrize("streamed", [False, True], ids=["complete", "stream"])
async def test_a_cancelled_call_closes_its_connection(
    settings: Settings, silent: SilentServer, make: Callable[[Settings, str], LLM], streamed: bool
) -> None:
    llm = make(settings, silent.url)
    options = GenerateOptions(purpose="dialogue")

    async def call() -> Any:
        if streamed:
            return [piece async for piece in llm.stream(MESSAGES, options=options)]
        return await llm.complete(MESSAGES, options=options)

    task = asyncio.create_task(call())
    try:
        assert await _wait(silent.requests), "the request never reached the server"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await _wait(silent.closed), "the cancelled call left its connection open"
    finally:
        await llm.aclose()


async def test_a_timed_out_call_closes_its_connection(settings: Settings, silent: SilentServer) -> None:
    llm = TimeoutLLM(_ollama(settings, silent.url), timeout_s=0.5)
    try:
        with pytest.raises(LLMTimeout):
            await llm.complete(MESSAGES, options=GenerateOptions(purpose="emotion"))
        assert await _wait(silent.closed), "the timed-out call left its connection open"
    finally:
        await llm.aclose()


def test_ollama_is_preemptible_and_openai_is_not(settings: Settings) -> None:
    # Ollama serves one call at a time per model slot and stops a generation whose client left; a batched
    # OpenAI-style server gains nothing from a cancelled call but a bill for the tokens it made.
    assert _ollama(settings, "http://127.0.0.1:1").preemptible
    assert not _openai(settings, "http://127.0.0.1:1").preemptible
