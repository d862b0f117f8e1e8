"""The reference Python client's rules: headers, retries only on network errors/timeouts/5xx, SSE parsing."""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi.testclient import TestClient

from backend.simulate import load_client_package

machi_client = load_client_package()
from machi_client import MachiApiError, MachiClient, MachiTransportError, SseParser  # noqa: E402


def _client(handler: httpx.MockTransport, **kwargs: object) -> MachiClient:
    return MachiClient("http://machi.test", transport=handler, sleep=lambda _s: None, seed=0, **kwargs)  # type: ignore[arg-type]


def test_headers_world_and_api_key_are_sent() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"status": "ok"})

    _client(httpx.MockTransport(answer), api_key="k", world_id="town2").health()
    assert seen[0].headers["X-Machi-Protocol"] == "1"
    assert seen[0].headers["X-Machi-World"] == "town2" and seen[0].headers["X-Api-Key"] == "k"
    _client(httpx.MockTransport(answer), api_key="k", use_bearer=True).health()
    assert seen[1].headers["Authorization"] == "Bearer k"


def test_4xx_is_never_retried_and_surfaces_the_error_code() -> None:
    calls = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        body = {
            "error": {"code": "validation_error", "message": "time_of_day: bad", "details": [{"field": "t"}]}
        }
        return httpx.Response(422, json=body)

    with pytest.raises(MachiApiError) as err:
        _client(httpx.MockTransport(answer)).turn({"agent_id": "a"})
    assert len(calls) == 1
    assert (
        err.value.status == 422
        and err.value.code == "validation_error"
        and err.value.details == [{"field": "t"}]
    )


def test_5xx_and_network_errors_are_retried_then_succeed() -> None:
    outcomes = iter(
        [httpx.ConnectError("refused"), httpx.Response(503, text="busy"), httpx.ReadTimeout("slow")]
    )

    def answer(request: httpx.Request) -> httpx.Response:
        outcome = next(outcomes, None)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome or httpx.Response(200, json={"dialogue": "やあ"})

    client = _client(httpx.MockTransport(answer))
    assert client.turn({})["dialogue"] == "やあ"
    assert client.log.retries == 3 and client.log.statuses[503] == 1


def test_retries_are_bounded() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    client = _client(httpx.MockTransport(answer))
    with pytest.raises(MachiTransportError) as err:
        client.health()
    assert err.value.attempts == client.retry.max_retries + 1


def test_backoff_doubles_is_capped_and_jittered() -> None:
    policy = machi_client.RetryPolicy(initial_backoff_s=0.5, max_backoff_s=8.0)
    assert policy.backoff(0, 1.0) == 0.5 and policy.backoff(10, 1.0) == 8.0 and policy.backoff(1, 0.0) == 0.5


def test_sse_parser_handles_split_chunks_crlf_and_comments() -> None:
    parser = SseParser()
    text = 'event: delta\r\ndata: {"text": "こんに"}\r\n\r\n: ping\n\nevent: reply\ndata: {"a":\ndata: 1}\n\n'
    events = [e for i in range(0, len(text), 3) for e in parser.feed(text[i : i + 3])]
    assert [e.name for e in events] == ["delta", "reply"]
    assert json.loads(events[0].data) == {"text": "こんに"} and events[1].data == '{"a":\n1}'


def test_streamed_turn_against_the_server_matches_the_plain_reply(client: TestClient) -> None:
    client.put("/v1/pois/cafe", json={"name": "カフェ", "position": {"x": 0, "z": 0}})
    for agent in ("aoi", "hikari"):
        client.put(f"/v1/agents/{agent}", json={"name": agent})
    transport = httpx.MockTransport(lambda r: _forward(client, r))
    shown: list[str] = []
    py = _client(transport)
    request = {
        "agent_id": "aoi",
        "target_id": "hikari",
        "session_id": "py-1",
        "history": [],
        "time_of_day": 10.0,
    }
    reply = py.turn_stream(request, on_delta=shown.append, on_reset=shown.clear)
    assert "".join(shown) == reply["dialogue"]
    assert py.turn(request) == reply  # the retried turn (same session, same history) is the stored reply


def _forward(client: TestClient, request: httpx.Request) -> httpx.Response:
    reply = client.request(request.method, str(request.url.copy_with(scheme=None, host=None)),
                           content=request.content, headers=dict(request.headers))  # fmt: skip
    return httpx.Response(reply.status_code, content=reply.content, headers=reply.headers)
