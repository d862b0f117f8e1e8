"""The llamacpp provider's plumbing on the real engine: streaming, usage, one call at a time by priority,
timeouts that leave the model usable, embeddings, and loading through the settings and the registry."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backend.config import Settings
from backend.errors import ConfigError, LLMTimeout, LLMUnavailable
from backend.llm.base import Completion, GenerateOptions, json_schema_for, parse_reply
from backend.llm.llamacpp import LlamaCppEmbedder, LlamaCppLLM, PriorityGate
from backend.llm.registry import build_embedder, build_provider
from backend.llm.retry import TimeoutLLM
from backend.memory.prompts import ConversationReflection

MESSAGES = [{"role": "user", "content": "今日のことを JSON で振り返って。"}]


def options(seed: int = 1, max_tokens: int = 256, **extra: Any) -> GenerateOptions:
    return GenerateOptions(purpose="reflection", seed=seed, max_tokens=max_tokens, temperature=1.0, **extra)


async def test_complete_reports_usage_from_the_engine(provider: LlamaCppLLM) -> None:
    schema = json_schema_for(ConversationReflection)
    completion = await provider.complete(MESSAGES, options=options(), schema=schema)
    parse_reply(completion.text, ConversationReflection)
    assert completion.model == "tiny.gguf"
    assert completion.prompt_tokens and completion.prompt_tokens > 10
    assert completion.completion_tokens and completion.completion_tokens > 5
    assert completion.meta["finish_reason"] == "stop"  # the grammar closed the reply, not max_tokens


async def test_stream_yields_pieces_that_make_the_same_valid_reply(provider: LlamaCppLLM) -> None:
    schema = json_schema_for(ConversationReflection)
    usage = Completion("")
    pieces = [p async for p in provider.stream(MESSAGES, options=options(seed=7), schema=schema, usage=usage)]
    whole = await provider.complete(MESSAGES, options=options(seed=7), schema=schema)
    assert len(pieces) > 3
    assert "".join(pieces) == whole.text  # same seed, same reply, streamed or not
    parse_reply("".join(pieces), ConversationReflection)
    assert usage.model == "tiny.gguf"
    assert (usage.prompt_tokens, usage.completion_tokens) == (whole.prompt_tokens, whole.completion_tokens)


async def test_a_consumer_that_stops_early_frees_the_model(provider: LlamaCppLLM) -> None:
    stream = provider.stream(MESSAGES, options=options(max_tokens=2000))  # free text: would run long
    async for _ in stream:
        break
    await stream.aclose()
    reply = await provider.complete(
        MESSAGES, options=options(), schema=json_schema_for(ConversationReflection)
    )
    parse_reply(reply.text, ConversationReflection)


async def test_a_timed_out_call_leaves_the_model_usable(provider: LlamaCppLLM) -> None:
    hurried = TimeoutLLM(provider, timeout_s=0.001)
    with pytest.raises(LLMTimeout):
        await hurried.complete(MESSAGES, options=options(max_tokens=500))
    reply = await provider.complete(
        MESSAGES, options=options(), schema=json_schema_for(ConversationReflection)
    )
    parse_reply(reply.text, ConversationReflection)


async def test_the_gate_serves_the_most_urgent_waiter_first() -> None:
    gate, served = PriorityGate(), []
    await gate.acquire(3)

    async def wait(priority: int, name: str) -> None:
        await gate.acquire(priority)
        served.append(name)
        gate.release()

    tasks = [asyncio.create_task(wait(p, n)) for p, n in [(3, "background"), (2, "plan"), (0, "turn")]]
    await asyncio.sleep(0)
    cancelled = asyncio.create_task(wait(1, "gave-up"))
    await asyncio.sleep(0)
    cancelled.cancel()
    gate.release()
    await asyncio.gather(*tasks)
    assert served == ["turn", "plan", "background"]


async def test_concurrent_calls_are_serialised_and_all_answered(provider: LlamaCppLLM) -> None:
    schema = json_schema_for(ConversationReflection)
    calls = [
        provider.complete(MESSAGES, options=options(seed=s, priority=s % 4), schema=schema) for s in range(6)
    ]
    for reply in await asyncio.gather(*calls):
        parse_reply(reply.text, ConversationReflection)


def llamacpp_settings(tmp_path: Path, model: Path | str | None, **extra: Any) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=f"sqlite:///{tmp_path / 'm.db'}",
        llm_provider="llamacpp",
        llamacpp_model_path=str(model) if model else None,
        llamacpp_threads=1,
        llamacpp_n_gpu_layers=0,
        llamacpp_n_ctx=1024,
        **extra,
    )


async def test_registry_builds_provider_and_embedder_from_settings(tmp_path: Path, tiny_model: Path) -> None:
    settings = llamacpp_settings(tmp_path, tiny_model, embedding_provider="llamacpp")
    llm, embedder = build_provider(settings), build_embedder(settings)
    try:
        assert isinstance(llm, LlamaCppLLM) and isinstance(embedder, LlamaCppEmbedder)
        assert settings.provider_model() == "tiny.gguf" == settings.embedding_model_name()
        vectors = await embedder.embed(["広場の祭り", "広場の祭り", "river bread", ""])
        assert vectors.shape == (4, 64) and vectors.dtype == np.float32
        assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, atol=1e-5)
        assert np.allclose(vectors[0], vectors[1]) and not np.allclose(vectors[0], vectors[2])
        assert not vectors[3].any()  # a blank text keeps a zero row
    finally:
        await llm.aclose()
        await embedder.aclose()


def test_a_file_llama_cpp_cannot_load_is_a_config_error(tmp_path: Path) -> None:
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"not a gguf at all")
    with pytest.raises(ConfigError, match="fake.gguf"):
        build_provider(llamacpp_settings(tmp_path, fake))


async def test_a_prompt_too_long_for_the_context_fails_once_not_retried(provider: LlamaCppLLM) -> None:
    too_long = [{"role": "user", "content": "ぁ" * 1000}]  # 3 byte tokens each: beyond the 2048-token context
    with pytest.raises(LLMUnavailable) as caught:
        await provider.complete(too_long, options=options())
    assert caught.value.retryable is False
    assert "tiny.gguf loaded in-process" in await provider.check()
    reply = await provider.complete(
        MESSAGES, options=options(), schema=json_schema_for(ConversationReflection)
    )
    parse_reply(reply.text, ConversationReflection)
