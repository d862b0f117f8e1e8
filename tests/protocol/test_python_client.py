"""The reference Python client's rules: headers, retries only on network errors/timeouts/5xx, one wait on a
short 429, SSE parsing; and its protocol-2 calls (visitors, groups, actions) against the real app."""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi.testclient import TestClient

from backend.config import Settings
from backend.scripted import ScriptedLLM
from backend.simulate import load_client_package
from tests.conftest import drain, make_client

machi_client = load_client_package()
from machi_client import (  # noqa: E402
    MachiApiError,
    MachiClient,
    MachiRateLimitError,
    MachiTransportError,
    SseParser,
    parse_retry_after,
)


def _client(handler: httpx.MockTransport, **kwargs: object) -> MachiClient:
    return MachiClient("http://machi.test", transport=handler, sleep=lambda _s: None, seed=0, **kwargs)  # type: ignore[arg-type]


def test_headers_world_and_api_key_are_sent() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"status": "ok"})

    _client(httpx.MockTransport(answer), api_key="k", world_id="town2").health()
    assert seen[0].headers["X-Machi-Protocol"] == "2"
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


LIMITED = {
    "error": {
        "code": "too_many_requests",
        "message": "PLAYER_LINES_PER_MINUTE=12: ...",
        "details": {"limit": "PLAYER_LINES_PER_MINUTE", "value": 12, "retry_after_s": 0.6, "field": "text"},
    }
}


def test_a_short_429_is_waited_out_once_without_using_a_retry() -> None:
    answers = iter([httpx.Response(429, json=LIMITED, headers={"Retry-After": "1"})])
    waits: list[float] = []

    def answer(request: httpx.Request) -> httpx.Response:
        return next(answers, None) or httpx.Response(200, json={"dialogue": "どうぞ"})

    client = MachiClient(
        "http://machi.test", transport=httpx.MockTransport(answer), sleep=waits.append, seed=0
    )
    assert client.player_turn({"text": "やあ"})["dialogue"] == "どうぞ"
    assert waits == [1.0] and client.log.retries == 0 and client.log.statuses[429] == 1


@pytest.mark.parametrize(
    ("first_wait", "calls"),
    [("30", 1), ("1", 2)],  # too long to wait out; or a second 429 after the one wait
)
def test_a_429_not_waited_out_raises_naming_the_limit(first_wait: str, calls: int) -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(429, json=LIMITED, headers={"Retry-After": first_wait})

    with pytest.raises(MachiRateLimitError) as err:
        _client(httpx.MockTransport(answer)).player_turn({"text": "やあ"})
    assert len(seen) == calls and isinstance(err.value, MachiApiError)
    assert err.value.limit == "PLAYER_LINES_PER_MINUTE" and err.value.retry_after_s == float(first_wait)
    assert err.value.status == 429 and err.value.code == "too_many_requests"


def test_retry_after_is_read_as_seconds_or_a_date() -> None:
    from datetime import UTC, datetime

    now = datetime(2026, 12, 4, 3, 0, 0, tzinfo=UTC)
    assert parse_retry_after("12", now) == 12.0
    assert parse_retry_after("Fri, 04 Dec 2026 03:00:30 GMT", now) == 30.0
    assert parse_retry_after("Fri, 04 Dec 2026 02:00:00 GMT", now) == 0.0
    assert (
        parse_retry_after(None) is None
        and parse_retry_after("soon") is None
        and parse_retry_after("-1") is None
    )


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


def test_visitors_groups_and_actions_against_the_server(client: TestClient) -> None:
    """Every protocol-2 call of the client on the real app: the replies are the server's, retries are safe."""
    client.put("/v1/pois/cafe", json={"name": "カフェ", "position": {"x": 0, "z": 0}})
    for agent in ("aoi", "hikari", "ren"):
        client.put(f"/v1/agents/{agent}", json={"name": agent})
    py = _client(httpx.MockTransport(lambda r: _forward(client, r)))

    assert py.put_gestures(["wave", "bow"])["gestures_declared"] is True
    assert py.world_actions()["gestures"] == ["wave", "bow"]
    player = py.put_player("yuki", {"display_name": "ユキ", "language": "ja"})  # the prefix is added
    assert (player["id"], player["registered"]) == ("player:yuki", True)
    assert py.player("player:yuki")["display_name"] == "ユキ"

    line = {"session_id": "py-visit-1", "player_id": "player:yuki", "agent_id": "aoi", "text": "こんにちは！",
            "history": [], "time_of_day": 10.0}  # fmt: skip
    reply = py.player_turn(line)
    assert reply["player_line"] == "ユキ: こんにちは！" and reply["speaker_id"] == "aoi"
    assert reply["next_speaker"] == "player:yuki" and reply["player_turn_index"] == 0
    assert py.player_turn(line) == reply  # a retry (same history) is the stored line and reply
    shown: list[str] = []
    history = [reply["player_line"], f"aoi: {reply['dialogue']}"]
    second = py.player_turn_stream(
        {**line, "text": "またね", "history": history}, on_delta=shown.append, on_reset=shown.clear
    )
    assert "".join(shown) == second["dialogue"] and second["player_turn_index"] == 2
    assert [p["id"] for p in py.players()["players"]] == ["player:yuki"]

    group = {"agent_id": "hikari", "target_id": "ren", "session_id": "py-group-1",
             "participants": ["hikari", "ren", "aoi"], "history": [], "time_of_day": 10.5}  # fmt: skip
    turn = py.turn(group)
    assert turn["participants"] == ["hikari", "ren", "aoi"] and turn["next_speaker"] in ("ren", "aoi")

    result = {"action": {"type": "give", "target": "player:yuki", "item": "本"}, "outcome": "done",
              "session_id": "py-visit-1", "day": 1, "time_of_day": 10.6}  # fmt: skip
    assert py.action_result("aoi", result)["content"] == "ユキに本を渡した。"
    with pytest.raises(MachiApiError) as err:  # a gesture this world never declared
        py.action_result("aoi", {**result, "action": {"type": "gesture", "target": "dance"}})
    assert err.value.status == 422
    drain(client)


def test_interview_council_and_judge_against_the_server(client: TestClient) -> None:
    py = _client(httpx.MockTransport(lambda r: _forward(client, r)))
    for agent, name in (("aoi", "葵"), ("hikari", "ひかり")):
        py.put_agent(agent, {"name": name, "language": "ja"})
    py.add_memory("aoi", {"type": "observation", "content": "ひかりから焼きたてのパンを分けてもらった。"})
    answer = py.interview("aoi", "パンは誰にもらったの？", day=1, time_of_day=18.0)
    assert answer["fallback"] is False and "パン" in answer["answer"]
    assert [m["content"] for m in answer["memories_used"]][0] == "ひかりから焼きたてのパンを分けてもらった。"
    accepted = py.start_council(
        {"title": "公園に図書コーナーを作る", "members": ["aoi", "hikari"], "rounds": 1}
    )
    assert accepted["status"] == "pending" and accepted["number"] == 1
    drain(client)
    council = py.council(accepted["id"])
    assert council["status"] == "done" and council["outcome"] and council["members"] == ["aoi", "hikari"]
    verdict = py.judge({"content": "葵: こんにちは！", "criteria": ["coherence"]})
    assert set(verdict["scores"]) == {"coherence"} and 1 <= verdict["scores"]["coherence"] <= 10
    with pytest.raises(MachiApiError) as err:
        py.interview("nobody", "元気？")
    assert err.value.status == 404


def test_a_real_rate_limit_is_raised_with_its_name(settings: Settings, scripted: ScriptedLLM) -> None:
    with make_client(settings, scripted, player_lines_per_minute=1) as app:
        app.put("/v1/agents/aoi", json={"name": "葵"})
        py = _client(httpx.MockTransport(lambda r: _forward(app, r)))
        line = {"session_id": "py-limit-1", "player_id": "player:fast", "agent_id": "aoi", "text": "やあ",
                "history": [], "time_of_day": 10.0}  # fmt: skip
        py.player_turn(line)
        for call in (py.player_turn, py.player_turn_stream):
            with pytest.raises(MachiRateLimitError) as err:
                call({**line, "session_id": "py-limit-2"})
            assert err.value.limit == "PLAYER_LINES_PER_MINUTE" and (err.value.retry_after_s or 0) > 2
