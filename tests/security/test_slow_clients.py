"""Slow and idle clients against a real `machi serve` on a loopback port: a half-sent request head is closed,
a body that stops arriving gets 408 and a closed connection, other requests are served meanwhile, the
concurrency limit answers 503 in the error envelope, and the event WebSockets outlive both deadlines but are
capped (issue 21, point 7: 1,100 half-sent requests had made other requests fail with `Too many open files`).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from bench.serverproc import ROOT, ServerProcess

pytestmark = pytest.mark.slow

#: Long enough that a server which never closes a connection fails the test rather than hanging it.
GIVE_UP_S = 30.0
DEADLINES = {"HTTP_HEADER_TIMEOUT_S": "1", "HTTP_BODY_TIMEOUT_S": "1", "HTTP_KEEP_ALIVE_S": "1"}


def _serve(tmp: Path, env: dict[str, str]) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp / "machi.db", env=env)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server with one-second head and body deadlines and room for two event sockets."""
    env = {**DEADLINES, "HTTP_MAX_CONCURRENCY": "16", "MAX_EVENT_SOCKETS": "2"}
    yield from _serve(tmp_path_factory.mktemp("strict"), env)


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server whose concurrency limit two event sockets and one request reach."""
    yield from _serve(
        tmp_path_factory.mktemp("crowded"), {"HTTP_MAX_CONCURRENCY": "3", "MAX_EVENT_SOCKETS": "2"}
    )


def _raw(server: ServerProcess, first_bytes: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=GIVE_UP_S)
    sock.sendall(first_bytes)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a server that never does raises)."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def _served(server: ServerProcess) -> None:
    assert httpx.get(f"{server.url}/health", timeout=GIVE_UP_S).status_code == 200


def _events(server: ServerProcess) -> ClientConnection:
    return connect(f"ws://127.0.0.1:{server.port}/v1/events?types=agent.state", open_timeout=GIVE_UP_S)


def test_a_half_sent_request_head_is_closed_while_others_are_served(strict: ServerProcess) -> None:
    slow = _raw(strict, b"POST /v1/agents/aoi/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
    try:
        _served(strict)
        assert _read_all(slow) == b""  # closed without an answer: the head never came
        _served(strict)
    finally:
        slow.close()


def test_a_body_that_stops_arriving_gets_408_and_its_connection_closed(strict: ServerProcess) -> None:
    head = (
        b"POST /v1/agents/aoi/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000\r\n\r\n"
    )
    memories = f"{strict.url}/v1/agents/aoi/memories"
    before = httpx.get(memories).json()["total"]
    slow = _raw(strict, head + b'{"type": "observ')
    try:
        _served(strict)
        answer = _read_all(slow)  # returns only once the server has closed the connection
    finally:
        slow.close()
    status, _, rest = answer.partition(b"\r\n")
    assert status.startswith(b"HTTP/1.1 408"), answer
    error = json.loads(rest.partition(b"\r\n\r\n")[2])["error"]
    assert error["code"] == "request_timeout" and error["details"] == {"timeout_s": 1.0}
    assert httpx.get(memories).json()["total"] == before


def test_event_sockets_outlive_the_deadlines_and_one_past_the_cap_is_told_to_retry(
    strict: ServerProcess,
) -> None:
    with _events(strict) as first, _events(strict) as second:
        with _events(strict) as third:  # MAX_EVENT_SOCKETS=2
            refusal = json.loads(third.recv(timeout=GIVE_UP_S))
            with pytest.raises(ConnectionClosed) as closed:
                third.recv(timeout=GIVE_UP_S)
        assert refusal["error"]["code"] == "service_unavailable"
        assert "MAX_EVENT_SOCKETS" in refusal["error"]["message"]
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        time.sleep(2.5)  # past the one-second head and body deadlines: the sockets must not be cut
        report = {"state": "wandering_in_poi", "location_name": "中央カフェ", "day": 1, "time_of_day": 9.0}
        assert httpx.post(f"{strict.url}/v1/agents/aoi/state", json=report).status_code == 200
        for socket_ in (first, second):
            event = json.loads(socket_.recv(timeout=GIVE_UP_S))
            assert event["type"] == "agent.state" and event["payload"]["agent_id"] == "aoi"


def test_past_the_concurrency_limit_a_request_gets_503_in_the_envelope(crowded: ServerProcess) -> None:
    _served(crowded)
    with _events(crowded) as first, _events(crowded):  # two sockets and this request: HTTP_MAX_CONCURRENCY=3
        busy = httpx.get(f"{crowded.url}/health", timeout=GIVE_UP_S)
        assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
        assert busy.headers["connection"] == "close"
        error = busy.json()["error"]
        assert error["code"] == "service_unavailable" and error["details"] == {"limit": 3}
        first.close()
        for _ in range(100):  # the server notices the closed socket at its own pace
            if httpx.get(f"{crowded.url}/health", timeout=GIVE_UP_S).status_code == 200:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the server kept refusing after a connection closed")


def test_the_server_raises_its_open_files_limit_within_the_hard_one() -> None:
    """A soft limit of 1024 held the 1,100 half-sent requests of the report; `machi serve` raises it."""
    resource = pytest.importorskip("resource")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 4096:
        pytest.skip(f"the hard limit on open files here is {hard}")
    script = (
        "import resource; from backend.security.connection import raise_open_files; "
        "print(raise_open_files(4096), resource.getrlimit(resource.RLIMIT_NOFILE)[0])"
    )

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))

    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, preexec_fn=lower, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.split() == ["4096", "4096"], done.stderr
