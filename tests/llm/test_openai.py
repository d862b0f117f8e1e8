"""The OpenAI and vLLM adapters against a fake OpenAI-compatible server."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from backend.config import Settings
from backend.errors import LLMTimeout, LLMUnavailable
from backend.llm.base import Completion, GenerateOptions, json_schema_for
from backend.llm.openai_compat import VLLMLLM, OpenAILLM, openai_hosted, schema_name, strict_schema
from backend.llm.retry import RetryingLLM
from tests.llm.conftest import settings_for
from tests.llm.fakes import FakeModelServer, Reply, Said, closed_port_url

MESSAGES = [{"role": "system", "content": "You are Hikari."}, {"role": "user", "content": "Hello!"}]
CHAT = "/v1/chat/completions"


class Plan(BaseModel):
    steps: list[str] = Field(min_length=1, max_length=4)
    mood: Literal["busy", "relaxed"]


def openai_llm(settings: Settings, fake: FakeModelServer, **overrides: object) -> OpenAILLM:
    return OpenAILLM.from_settings(settings_for(settings, "openai", fake.url, **overrides))


def vllm_llm(settings: Settings, fake: FakeModelServer, **overrides: object) -> VLLMLLM:
    return VLLMLLM.from_settings(settings_for(settings, "vllm", fake.url, **overrides))


async def test_openai_request_uses_strict_json_schema(settings: Settings, fake: FakeModelServer) -> None:
    llm = openai_llm(settings, fake, llm_temperature=0.2)
    fake.say('{"steps": ["open the bakery"], "mood": "busy"}', prompt_tokens=50, completion_tokens=14)
    plan = await llm.generate_json(
        MESSAGES, Plan, options=GenerateOptions(purpose="plan", max_tokens=200, seed=3)
    )
    assert plan == Plan(steps=["open the bakery"], mood="busy")
    [request] = [r for r in fake.requests if r.path == CHAT]
    assert request.headers["authorization"] == "Bearer sk-test"
    sent = request.body
    assert sent["model"] == "gpt-test"
    assert sent["messages"] == MESSAGES
    assert (sent["temperature"], sent["max_completion_tokens"], sent["seed"]) == (0.2, 200, 3)
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Plan", "schema": json_schema_for(Plan), "strict": True},
    }
    assert "structured_outputs" not in sent
    assert sent.get("stream") in (None, False)
    await llm.aclose()


async def test_openai_reply_parsed_with_token_counts(settings: Settings, fake: FakeModelServer) -> None:
    llm = openai_llm(settings, fake, model_dialogue="gpt-dialogue")
    fake.say("Nice to meet you!", prompt_tokens=17, completion_tokens=5)
    completion = await llm.complete(MESSAGES, options=GenerateOptions(purpose="turn"))
    assert completion.text == "Nice to meet you!"
    assert (completion.model, completion.prompt_tokens, completion.completion_tokens) == (
        "gpt-dialogue",
        17,
        5,
    )
    assert "response_format" not in fake.posts(CHAT)[0]
    await llm.aclose()


async def test_vllm_passes_schema_as_structured_outputs_too(
    settings: Settings, fake: FakeModelServer
) -> None:
    llm = vllm_llm(settings, fake)
    fake.say('{"steps": ["a", "b"], "mood": "relaxed"}')
    await llm.generate_json(MESSAGES, Plan, options=GenerateOptions(purpose="plan"))
    [request] = [r for r in fake.requests if r.path == CHAT]
    assert request.headers["authorization"] == "Bearer vk-test"
    assert request.body["model"] == "qwen-test"
    assert request.body["structured_outputs"] == {"json": json_schema_for(Plan)}
    assert request.body["response_format"]["json_schema"]["schema"] == json_schema_for(Plan)
    assert "guided_json" not in request.body
    await llm.aclose()


class Line(BaseModel):
    text: str = Field(max_length=300)
    mood: Literal["busy", "relaxed"]
    tags: list[str] = Field(min_length=1, max_length=2)
    maxLength: int = Field(ge=1, le=10)  # a property that happens to bear a keyword's name


def test_openai_itself_gets_no_string_lengths_but_keeps_enums_counts_and_ranges(settings: Settings) -> None:
    # The strict subset OpenAI documents has enum, minItems/maxItems and minimum/maximum, not string lengths.
    for url in ("https://api.openai.com/v1", "https://machi.openai.azure.com/openai/v1"):
        llm = OpenAILLM.from_settings(settings_for(settings, "openai", url))
        sent = llm.request(MESSAGES, GenerateOptions(), json_schema_for(Line))["response_format"][
            "json_schema"
        ]
        strict = sent["schema"]
        assert "maxLength" not in strict["properties"]["text"] and "maxLength" in strict["properties"], url
        assert strict["properties"]["mood"]["enum"] == ["busy", "relaxed"]
        assert (strict["properties"]["tags"]["minItems"], strict["properties"]["tags"]["maxItems"]) == (1, 2)
        assert (
            strict["properties"]["maxLength"]["minimum"],
            strict["properties"]["maxLength"]["maximum"],
        ) == (1, 10)
        assert strict == strict_schema(json_schema_for(Line)) and sent["strict"] is True
    assert json_schema_for(Line)["properties"]["text"]["maxLength"] == 300  # the original is untouched
    assert not openai_hosted("http://127.0.0.1:8080/v1") and not openai_hosted(
        "https://api.openai.com.evil.example"
    )


async def test_other_servers_speaking_the_api_get_the_full_schema(
    settings: Settings, fake: FakeModelServer
) -> None:
    # llama-server, vLLM...: their grammars enforce lengths (without minLength a small model wrote an empty label).
    for make in (openai_llm, vllm_llm):
        llm = make(settings, fake)
        fake.say('{"text": "hi", "mood": "busy", "tags": ["a"], "maxLength": 3}')
        await llm.generate_json(MESSAGES, Line, options=GenerateOptions(purpose="plan"))
        sent = fake.posts(CHAT)[-1]
        assert sent["response_format"]["json_schema"]["schema"] == json_schema_for(Line)
        await llm.aclose()
    assert sent["structured_outputs"] == {"json": json_schema_for(Line)}  # vLLM's own parameter too


@pytest.mark.parametrize("make", [openai_llm, vllm_llm])
async def test_stream_yields_pieces_and_usage(make, settings: Settings, fake: FakeModelServer) -> None:  # type: ignore[no-untyped-def]
    llm = make(settings, fake)
    fake.say("Let's meet at the café at noon.", chunks=5, prompt_tokens=33, completion_tokens=9)
    usage = Completion("")
    pieces = [p async for p in llm.stream(MESSAGES, options=GenerateOptions(), usage=usage)]
    assert len(pieces) >= 4
    assert "".join(pieces) == "Let's meet at the café at noon."
    assert (usage.prompt_tokens, usage.completion_tokens) == (33, 9)
    sent = fake.posts(CHAT)[0]
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    await llm.aclose()


async def test_bad_key_is_not_retried(settings: Settings, fake: FakeModelServer) -> None:
    fake.reply(
        Reply(status=401, body={"error": {"message": "Incorrect API key", "type": "invalid_request_error"}})
    )
    llm = RetryingLLM(openai_llm(settings, fake), max_retries=3, backoff_s=0)
    with pytest.raises(LLMUnavailable) as caught:
        await llm.complete(MESSAGES, options=GenerateOptions())
    assert caught.value.retryable is False
    assert "OPENAI_API_KEY" in caught.value.message and "Incorrect API key" in caught.value.message
    assert len(fake.posts(CHAT)) == 1
    await llm.aclose()


async def test_unknown_model_and_bad_request_are_not_retryable(
    settings: Settings, fake: FakeModelServer
) -> None:
    llm = vllm_llm(settings, fake)
    fake.reply(
        Reply(status=404, body={"error": {"message": "The model `qwen-test` does not exist."}}),
        Reply(status=400, body={"error": {"message": "Invalid schema for response_format"}}),
    )
    with pytest.raises(LLMUnavailable, match="qwen-test") as not_found:
        await llm.complete(MESSAGES, options=GenerateOptions())
    with pytest.raises(LLMUnavailable, match="Invalid schema") as bad_request:
        await llm.complete(MESSAGES, options=GenerateOptions())
    assert not_found.value.retryable is False and bad_request.value.retryable is False
    await llm.aclose()


async def test_server_errors_and_rate_limits_are_retried(settings: Settings, fake: FakeModelServer) -> None:
    fake.reply(
        Reply(status=503, body={"error": {"message": "overloaded"}}),
        Reply(status=429, body={"error": {"message": "slow down", "code": "rate_limit_exceeded"}}),
    )
    fake.say("finally")
    llm = RetryingLLM(openai_llm(settings, fake), max_retries=2, backoff_s=0)
    completion = await llm.complete(MESSAGES, options=GenerateOptions())
    assert completion.text == "finally"
    assert len(fake.posts(CHAT)) == 3
    await llm.aclose()


async def test_exhausted_quota_is_not_retried(settings: Settings, fake: FakeModelServer) -> None:
    fake.reply(
        Reply(
            status=429, body={"error": {"message": "You exceeded your quota", "code": "insufficient_quota"}}
        )
    )
    llm = RetryingLLM(openai_llm(settings, fake), max_retries=2, backoff_s=0)
    with pytest.raises(LLMUnavailable, match="quota"):
        await llm.complete(MESSAGES, options=GenerateOptions())
    assert len(fake.posts(CHAT)) == 1
    await llm.aclose()


async def test_connection_refused_and_timeout(settings: Settings, fake: FakeModelServer) -> None:
    refused = OpenAILLM.from_settings(settings_for(settings, "openai", closed_port_url()))
    with pytest.raises(LLMUnavailable, match="cannot reach openai"):
        await refused.complete(MESSAGES, options=GenerateOptions())
    slow = openai_llm(settings, fake)
    fake.queue.append(Said("late", delay_s=2.0))
    with pytest.raises(LLMTimeout):
        await slow.complete(MESSAGES, options=GenerateOptions(timeout_s=0.2))
    for llm in (refused, slow):
        await llm.aclose()


async def test_check_verifies_served_models(settings: Settings, fake: FakeModelServer) -> None:
    fake.models = ["qwen-test", "qwen-small"]
    plain, with_role, wrong = (
        vllm_llm(settings, fake),
        vllm_llm(settings, fake, model_importance="qwen-small"),
        openai_llm(settings, fake),
    )
    assert "qwen-test" in await plain.check()
    assert "qwen-small" in await with_role.check()
    with pytest.raises(LLMUnavailable, match="does not serve gpt-test"):
        await wrong.check()
    assert [r.path for r in fake.requests] == ["/v1/models"] * 3
    for llm in (plain, with_role, wrong):
        await llm.aclose()


def test_schema_name_is_api_safe() -> None:
    assert schema_name({"title": "Plan"}) == "Plan"
    assert schema_name({"title": "Plan[Step] v2"}) == "Plan_Step__v2"
    assert schema_name({}) == "reply"
    assert len(schema_name({"title": "x" * 100})) == 64
