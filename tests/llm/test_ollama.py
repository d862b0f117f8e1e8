"""The Ollama adapter against a fake Ollama server: the request it builds, the reply it parses, its errors."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from backend.config import Settings
from backend.errors import LLMTimeout, LLMUnavailable
from backend.llm.base import Completion, GenerateOptions, json_schema_for
from backend.llm.ollama import OllamaLLM
from tests.llm.conftest import settings_for
from tests.llm.fakes import FakeModelServer, Reply, Said, closed_port_url

MESSAGES = [{"role": "system", "content": "あなたはアオイです。"}, {"role": "user", "content": "こんにちは"}]


class Mood(BaseModel):
    emotion: Literal["joy", "sadness", "calm"]
    intensity: int = Field(ge=1, le=10)


def adapter(settings: Settings, fake: FakeModelServer, **overrides: object) -> OllamaLLM:
    return OllamaLLM.from_settings(settings_for(settings, "ollama", fake.url, **overrides))


async def test_json_request_carries_model_schema_and_options(
    settings: Settings, fake: FakeModelServer
) -> None:
    llm = adapter(settings, fake, llm_temperature=0.3)
    fake.say('{"emotion": "joy", "intensity": 4}', prompt_tokens=21, completion_tokens=9)
    options = GenerateOptions(purpose="dialogue", max_tokens=64, seed=7)
    mood = await llm.generate_json(MESSAGES, Mood, options=options)
    assert mood == Mood(emotion="joy", intensity=4)
    [sent] = fake.posts("/api/chat")
    assert sent["model"] == "gemma3n:e4b"
    assert sent["messages"] == MESSAGES
    assert sent["format"] == json_schema_for(Mood)
    assert sent["format"]["properties"]["emotion"]["enum"] == ["joy", "sadness", "calm"]
    assert sent["options"] == {"temperature": 0.3, "num_predict": 64, "seed": 7}
    assert sent["keep_alive"] == "30m"
    assert sent["stream"] is False
    await llm.aclose()


async def test_reply_text_model_and_token_counts(settings: Settings, fake: FakeModelServer) -> None:
    llm = adapter(settings, fake)
    fake.say("やあ、アオイだよ。", prompt_tokens=30, completion_tokens=12)
    completion = await llm.complete(MESSAGES, options=GenerateOptions(temperature=1.1))
    assert completion.text == "やあ、アオイだよ。"
    assert (completion.model, completion.prompt_tokens, completion.completion_tokens) == (
        "gemma3n:e4b",
        30,
        12,
    )
    [sent] = fake.posts("/api/chat")
    assert "format" not in sent  # free text: no schema constraint
    assert sent["options"]["temperature"] == 1.1
    await llm.aclose()


async def test_role_model_override_and_explicit_model(settings: Settings, fake: FakeModelServer) -> None:
    llm = adapter(settings, fake, model_emotion="m-small")
    await llm.complete(MESSAGES, options=GenerateOptions(purpose="emotion"))
    await llm.complete(MESSAGES, options=GenerateOptions(purpose="plan"))
    await llm.complete(MESSAGES, options=GenerateOptions(purpose="plan", model="explicit:1b"))
    assert [body["model"] for body in fake.posts("/api/chat")] == ["m-small", "gemma3n:e4b", "explicit:1b"]
    assert llm.resolve_model(GenerateOptions(purpose="emotion")) == "m-small"
    await llm.aclose()


async def test_stream_yields_pieces_and_reports_usage(settings: Settings, fake: FakeModelServer) -> None:
    llm = adapter(settings, fake)
    fake.say("今日はカフェに行こうかな。", chunks=4, prompt_tokens=40, completion_tokens=13)
    usage = Completion("")
    pieces = [p async for p in llm.stream(MESSAGES, options=GenerateOptions(purpose="turn"), usage=usage)]
    assert len(pieces) >= 3
    assert "".join(pieces) == "今日はカフェに行こうかな。"
    assert (usage.model, usage.prompt_tokens, usage.completion_tokens) == ("gemma3n:e4b", 40, 13)
    assert fake.posts("/api/chat")[0]["stream"] is True
    await llm.aclose()


async def test_missing_model_is_not_retryable_and_says_what_to_pull(
    settings: Settings, fake: FakeModelServer
) -> None:
    llm = adapter(settings, fake)
    fake.reply(Reply(status=404, body={"error": "model 'gemma3n:e4b' not found"}))
    with pytest.raises(LLMUnavailable) as caught:
        await llm.complete(MESSAGES, options=GenerateOptions())
    assert "ollama pull gemma3n:e4b" in caught.value.message
    assert caught.value.retryable is False
    await llm.aclose()


async def test_server_error_is_retryable(settings: Settings, fake: FakeModelServer) -> None:
    llm = adapter(settings, fake)
    fake.reply(Reply(status=500, body={"error": "llama runner process has terminated"}))
    with pytest.raises(LLMUnavailable) as caught:
        await llm.complete(MESSAGES, options=GenerateOptions())
    assert caught.value.retryable is True
    assert "llama runner" in caught.value.message
    await llm.aclose()


async def test_error_in_the_middle_of_a_stream(settings: Settings, fake: FakeModelServer) -> None:
    llm = adapter(settings, fake)
    fake.reply(
        Reply(
            lines=[
                '{"model":"x","message":{"role":"assistant","content":"や"},"done":false}',
                '{"error":"out of memory"}',
            ]
        )
    )
    received: list[str] = []
    with pytest.raises(LLMUnavailable, match="out of memory"):
        async for piece in llm.stream(MESSAGES, options=GenerateOptions()):
            received.append(piece)
    assert received == ["や"]
    await llm.aclose()


async def test_connection_refused(settings: Settings) -> None:
    llm = OllamaLLM.from_settings(settings_for(settings, "ollama", closed_port_url()))
    with pytest.raises(LLMUnavailable, match="cannot reach Ollama"):
        await llm.complete(MESSAGES, options=GenerateOptions())
    with pytest.raises(LLMUnavailable, match="cannot reach Ollama"):
        await llm.check()
    await llm.aclose()


async def test_client_timeout_maps_to_llm_timeout(settings: Settings, fake: FakeModelServer) -> None:
    llm = adapter(settings, fake, llm_timeout_s=0.2)
    fake.queue.append(Said("late", delay_s=2.0))
    with pytest.raises(LLMTimeout):
        await llm.complete(MESSAGES, options=GenerateOptions())
    await llm.aclose()


async def test_check_lists_models_and_names_missing_ones(settings: Settings, fake: FakeModelServer) -> None:
    fake.models = ["gemma3n:e4b", "nomic-embed-text:latest"]
    llm = adapter(settings, fake)
    assert "gemma3n:e4b" in await llm.check()
    needs_more = adapter(settings, fake, model_judge="qwen3:8b")
    with pytest.raises(LLMUnavailable, match="ollama pull qwen3:8b"):
        await needs_more.check()
    untagged = adapter(settings, fake, model_emotion="nomic-embed-text")
    assert "nomic-embed-text" in await untagged.check()  # pulled as :latest
    for client in (llm, needs_more, untagged):
        await client.aclose()
