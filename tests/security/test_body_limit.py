"""Request bodies past MAX_BODY_BYTES get 413 (declared or streamed); world import has its own, larger limit."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from backend.config import Settings
from backend.errors import RequestTimeout
from backend.scripted import ScriptedLLM
from backend.security.middleware import BodyLimitMiddleware
from tests.conftest import drain, make_client

LIMIT = 4096


@pytest.fixture
def small(settings: Settings, scripted: ScriptedLLM) -> Any:
    with make_client(settings, scripted, max_body_bytes=LIMIT, max_import_bytes=200_000) as client:
        assert client.put("/v1/agents/hana", json={"name": "ハナ"}).status_code == 201
        yield client


def _memories(client: TestClient) -> int:
    return int(client.get("/v1/agents/hana/memories").json()["total"])


def _assert_413(response: Any, limit: int) -> None:
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "payload_too_large" and error["details"]["limit_bytes"] == limit


def test_a_declared_large_body_is_refused_and_nothing_is_stored(small: TestClient) -> None:
    content = "カフェ" * 2000  # 18 KB of UTF-8, well inside the field's 10 000 characters
    response = small.post("/v1/agents/hana/memories", json={"type": "observation", "content": content})
    _assert_413(response, LIMIT)
    assert response.json()["error"]["details"]["content_length"] > LIMIT
    assert _memories(small) == 0


def test_a_chunked_body_without_length_is_counted_on_the_stream(small: TestClient) -> None:
    payload = json.dumps({"type": "observation", "content": "x" * 8000}).encode()
    chunks = (payload[i : i + 1000] for i in range(0, len(payload), 1000))  # no Content-Length: chunked
    response = small.post(
        "/v1/agents/hana/memories", content=chunks, headers={"Content-Type": "application/json"}
    )
    _assert_413(response, LIMIT)
    assert response.json()["error"]["details"]["content_length"] is None
    assert _memories(small) == 0


def test_a_body_under_the_limit_reaches_the_route_whole(small: TestClient) -> None:
    payload = json.dumps(
        {"type": "observation", "content": "カフェでレンと話した" * 100}, ensure_ascii=False
    ).encode()
    assert len(payload) < LIMIT
    chunks = (payload[i : i + 500] for i in range(0, len(payload), 500))
    response = small.post(
        "/v1/agents/hana/memories", content=chunks, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 201 and response.json()["content"] == "カフェでレンと話した" * 100


async def test_the_stream_stops_being_read_once_past_the_limit() -> None:
    """Straight at the middleware: a client streaming 100 chunks is cut off after the limit, app untouched."""
    settings = Settings(_env_file=None, max_body_bytes=LIMIT, load_demo_world=False)  # type: ignore[call-arg]
    reached: list[bool] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(True)

    read = 0

    async def receive() -> dict[str, Any]:
        nonlocal read
        read += 1
        return {"type": "http.request", "body": b"x" * 1000, "more_body": read < 100}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/judge", "headers": []}
    await BodyLimitMiddleware(app, settings)(scope, receive, send)
    assert reached == [] and read == 5  # 5 000 bytes > 4 096: refused on the fifth chunk
    assert sent[0]["status"] == 413
    assert json.loads(sent[1]["body"])["error"]["code"] == "payload_too_large"


async def test_a_world_import_that_stops_arriving_times_out_in_the_route_that_streams_it() -> None:
    """The import is read as a stream by its route: the middleware's receive keeps HTTP_IMPORT_TIMEOUT_S and
    raises RequestTimeout there (the app's error handler answers 408 in the envelope)."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, http_body_timeout_s=0.05, http_import_timeout_s=0.1, load_demo_world=False
    )
    raised: list[BaseException] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        try:
            while (await receive()).get("more_body"):
                pass
        except RequestTimeout as exc:
            raised.append(exc)

    chunks = iter([{"type": "http.request", "body": b'{"content": "', "more_body": True}])

    async def receive() -> dict[str, Any]:
        for message in chunks:
            return message
        await asyncio.Event().wait()  # the rest of the body never comes
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        raise AssertionError("the route answers, not the middleware")

    scope = {"type": "http", "method": "POST", "path": "/v1/world/import", "headers": []}
    await BodyLimitMiddleware(app, settings)(scope, receive, send)
    assert len(raised) == 1 and raised[0].status_code == 408 and raised[0].details == {"timeout_s": 0.1}


@pytest.mark.parametrize(("path", "timeout"), [("/v1/judge", 0.05)])
async def test_a_body_that_stops_arriving_is_answered_408_and_the_connection_closed(
    path: str, timeout: float
) -> None:
    """Straight at the middleware: a client that sends a first chunk and then nothing gets 408 once the
    route's deadline passes (the import's own, HTTP_IMPORT_TIMEOUT_S), and the app never runs."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, http_body_timeout_s=0.05, http_import_timeout_s=0.1, load_demo_world=False
    )
    reached: list[bool] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(True)

    chunks = iter([{"type": "http.request", "body": b'{"content": "', "more_body": True}])

    async def receive() -> dict[str, Any]:
        for message in chunks:
            return message
        await asyncio.Event().wait()  # the rest of the body never comes
        raise AssertionError("unreachable")

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "headers": []}
    await BodyLimitMiddleware(app, settings)(scope, receive, send)
    assert reached == []
    assert sent[0]["status"] == 408 and (b"connection", b"close") in sent[0]["headers"]
    error = json.loads(sent[1]["body"])["error"]
    assert error["code"] == "request_timeout" and error["details"] == {"timeout_s": timeout}


def _big_export(client: TestClient, memories: int, chars: int) -> dict[str, Any]:
    """A real export of this world, grown with `memories` rows of `chars` characters each."""
    assert (
        client.post("/v1/agents/hana/memories", json={"type": "observation", "content": "種"}).status_code
        == 201
    )
    drain(client)
    doc = client.get("/v1/world/export").json()
    template = doc["memories"][0]
    doc["memories"] = [
        {**template, "id": 1000 + i, "content": f"{i}:" + "記" * chars} for i in range(memories)
    ]
    return doc


def test_world_import_takes_documents_past_the_general_limit(small: TestClient) -> None:
    doc = _big_export(small, memories=20, chars=1000)  # ~60 KB: fifteen times MAX_BODY_BYTES
    body = json.dumps(doc, ensure_ascii=False).encode()
    assert LIMIT < len(body) < 200_000
    response = small.post("/v1/world/import", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text
    assert response.json()["imported"]["memories"] == 20
    assert _memories(small) == 20


def test_world_import_has_its_own_limit(small: TestClient) -> None:
    doc = _big_export(small, memories=80, chars=1000)  # ~240 KB > MAX_IMPORT_BYTES (200 000)
    before = small.get("/v1/world/export").json()
    response = small.post("/v1/world/import", json=doc)
    _assert_413(response, 200_000)
    assert small.get("/v1/world/export").json()["memories"] == before["memories"]


def test_a_chunked_import_is_cut_off_on_the_stream_once_past_its_limit(small: TestClient) -> None:
    # The import's body is not buffered by the limit (the route reads it as a stream): it is counted as it
    # reaches the route, and refused there.
    payload = json.dumps(_big_export(small, memories=80, chars=1000)).encode()  # ~240 KB
    before = small.get("/v1/world/export").json()
    chunks = (payload[i : i + 10_000] for i in range(0, len(payload), 10_000))  # no Content-Length
    response = small.post("/v1/world/import", content=chunks, headers={"Content-Type": "application/json"})
    _assert_413(response, 200_000)
    assert response.json()["error"]["details"]["content_length"] is None
    assert small.get("/v1/world/export").json()["memories"] == before["memories"]


def test_the_import_limit_is_only_for_the_import_route(small: TestClient) -> None:
    response = small.post("/v1/judge", json={"content": "x" * 9000})
    _assert_413(response, LIMIT)


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"machi_viewer_key": "viewer-only"}, "MACHI_VIEWER_KEY needs MACHI_API_KEY"),
        ({"machi_api_key": "same", "machi_viewer_key": "same"}, "must differ"),
    ],
)
def test_viewer_key_settings_that_cannot_work_are_refused(keys: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(_env_file=None, **keys)  # type: ignore[call-arg, arg-type]


def test_empty_keys_mean_an_open_server(settings: Settings, scripted: ScriptedLLM) -> None:
    # `MACHI_API_KEY=` (empty, as in .env.example) must not lock everyone out with an empty key.
    with make_client(settings, scripted, machi_api_key="", machi_viewer_key="") as client:
        assert client.get("/v1/agents").status_code == 200
