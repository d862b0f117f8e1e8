"""The provider's moderation endpoint through the real `openai` client, against a local fake (no network)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from backend.moderation import (
    ModerationSettings,
    Moderator,
    ProviderModeration,
    Verdict,
    build_moderator,
)

Handler = Callable[[httpx.Request], Awaitable[httpx.Response]]
CATEGORIES = ["harassment", "hate", "self-harm", "self-harm/intent", "sexual", "violence"]


def moderation_body(flagged: dict[str, float], scores: dict[str, float] | None = None) -> dict[str, Any]:
    """An OpenAI /moderations answer: `flagged` names the flagged categories and their scores."""
    scores = dict.fromkeys(CATEGORIES, 0.01) | (scores or {}) | flagged
    return {
        "id": "modr-test",
        "model": "omni-moderation-latest",
        "results": [
            {
                "flagged": bool(flagged),
                "categories": {name: name in flagged for name in CATEGORIES},
                "category_scores": scores,
                "category_applied_input_types": {name: ["text"] for name in CATEGORIES},
            }
        ],
    }


class FakeServer:
    """Records what the client sent and answers with `reply`."""

    def __init__(self, reply: Handler) -> None:
        self.reply = reply
        self.requests: list[httpx.Request] = []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return await self.reply(request)

    def provider(self, timeout_s: float = 2.0) -> ProviderModeration:
        return ProviderModeration.connect(
            api_key="sk-test",
            base_url="http://moderation.test/v1",
            timeout_s=timeout_s,
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(self)),
        )


def answer(body: dict[str, Any], status: int = 200) -> Handler:
    async def reply(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json=body)

    return reply


async def test_a_flagged_text_is_blocked_with_the_top_flagged_category() -> None:
    server = FakeServer(answer(moderation_body({"self-harm/intent": 0.93, "violence": 0.41})))
    moderator = Moderator(provider=server.provider())
    verdict = await moderator.check("I want to disappear forever")
    assert verdict == Verdict(
        allowed=False, source="provider", category="self_harm", matched="self-harm/intent 0.93"
    )
    [request] = server.requests
    assert request.url.path == "/v1/moderations"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert json.loads(request.content) == {
        "model": "omni-moderation-latest",
        "input": "I want to disappear forever",
    }


async def test_a_text_not_flagged_is_allowed_without_error() -> None:
    server = FakeServer(answer(moderation_body({}, {"harassment": 0.2})))
    verdict = await Moderator(provider=server.provider()).check("今日はいい天気ですね")
    assert verdict == Verdict(allowed=True)
    assert len(server.requests) == 1


async def test_a_server_error_fails_open_and_says_why() -> None:
    server = FakeServer(answer({"error": {"message": "upstream exploded", "type": "server_error"}}, 500))
    verdict = await Moderator(provider=server.provider()).check("hello there")
    assert verdict.allowed and verdict.source == "provider"
    assert verdict.error is not None and verdict.error.startswith("status 500")
    assert len(server.requests) == 1  # no retry: a turn is waiting on the answer


async def test_a_slow_server_fails_open_at_the_deadline() -> None:
    async def slow(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(30)
        return httpx.Response(200, json=moderation_body({"hate": 0.99}))

    server = FakeServer(slow)
    loop = asyncio.get_running_loop()
    started = loop.time()
    verdict = await Moderator(provider=server.provider(timeout_s=0.05)).check("hello there")
    assert loop.time() - started < 5
    assert verdict.allowed and verdict.error is not None and verdict.error.startswith("timeout")


async def test_a_transport_timeout_fails_open() -> None:
    async def timing_out(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("read timed out", request=request)

    verdict = await Moderator(provider=FakeServer(timing_out).provider()).check("hello there")
    assert verdict.allowed and verdict.error is not None and verdict.error.startswith("timeout")


async def test_an_unreachable_server_fails_open() -> None:
    async def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    verdict = await Moderator(provider=FakeServer(refused).provider()).check("hello there")
    assert verdict.allowed and verdict.error


async def test_an_answer_of_another_shape_fails_open() -> None:
    verdict = await Moderator(provider=FakeServer(answer({"results": []})).provider()).check("hi there")
    assert verdict.allowed and verdict.error


async def test_the_word_list_decides_first_and_still_applies_when_the_provider_fails() -> None:
    server = FakeServer(answer({"error": {"message": "down"}}, 503))
    settings = ModerationSettings(moderation_provider="openai", openai_api_key=SecretStr("sk-test"))
    moderator = build_moderator(
        settings, http_client=httpx.AsyncClient(transport=httpx.MockTransport(server))
    )
    blocked = await moderator.check("お前なんか死ねよ")
    assert blocked == Verdict(allowed=False, source="word_list", category="harassment", matched="死ね")
    assert server.requests == []  # the list's answer needs no call
    allowed = await moderator.check("こんにちは")
    assert allowed.allowed and allowed.error is not None and "503" in allowed.error
    await moderator.aclose()


@pytest.mark.parametrize("text", ["", "   "])
async def test_an_empty_text_costs_no_call(text: str) -> None:
    server = FakeServer(answer(moderation_body({"hate": 0.9})))
    assert await Moderator(provider=server.provider()).check(text) == Verdict(allowed=True)
    assert server.requests == []
