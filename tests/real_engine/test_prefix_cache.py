"""The stable-prefix KV cache on the real engine: a turn whose system message was seen before reads only the
rest of its prompt, even after other calls replaced the context, and replies exactly as without the cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backend.llm.base import GenerateOptions
from backend.llm.kvcache import PrefixCache, prefix_length
from backend.llm.llamacpp import LlamaCppLLM
from tests.real_engine.conftest import open_llama

PERSONA = "あなたは葵です。図書館で働く司書で、静かな話し方をします。" * 6
OTHER = "記憶の重要度を 1 から 10 で評価してください。" * 6
USER_LINES = ["こんにちは、今日はどうですか?", "おすすめの本はありますか?", "雨が降りそうですね。"]


def _messages(system: str, user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


async def _turns(provider: LlamaCppLLM) -> list[str]:
    """Three turns of one speaker, each after a call with another system message (a background call)."""
    options = GenerateOptions(max_tokens=16, temperature=0.0, seed=3)
    replies = []
    for line in USER_LINES:
        await provider.complete(_messages(OTHER, "猫がいた。"), options=options)
        replies.append((await provider.complete(_messages(PERSONA, line), options=options)).text)
    return replies


def _evaluated(llama: Any) -> list[int]:
    """Counts the prompt tokens each `eval` reads (the engine wraps `eval`; this wraps what it calls)."""
    counts: list[int] = []
    evaluate = llama.eval

    def counting(tokens: Any) -> None:
        counts.append(len(tokens))
        evaluate(tokens)

    llama.eval = counting
    return counts


async def test_a_known_prefix_is_restored_not_read_again_and_the_replies_do_not_change(
    tiny_model: Path,
) -> None:
    plain_llama, cached_llama = open_llama(tiny_model), open_llama(tiny_model)
    try:
        plain_counts = _evaluated(plain_llama)
        cached_counts = _evaluated(cached_llama)
        plain = LlamaCppLLM(plain_llama, model_name="tiny.gguf")
        cached = LlamaCppLLM(cached_llama, model_name="tiny.gguf", prefix_cache_bytes=64 * 2**20)
        assert await _turns(cached) == await _turns(plain)
        prefixes = cached.engine.prefixes
        assert prefixes is not None
        # Each system message was read once; every later call of it restored its state.
        assert prefixes.stats()["entries"] == 2 and prefixes.misses == 2 and prefixes.hits == 4
        assert sum(cached_counts) < sum(plain_counts) / 2
    finally:
        plain_llama.close()
        cached_llama.close()


async def test_the_cache_keeps_to_its_byte_budget(tiny_model: Path) -> None:
    llama = open_llama(tiny_model)
    try:
        provider = LlamaCppLLM(llama, model_name="tiny.gguf", prefix_cache_bytes=1)
        prefixes = provider.engine.prefixes
        assert isinstance(prefixes, PrefixCache)
        await provider.complete(_messages(PERSONA, "やあ"), options=GenerateOptions(max_tokens=4, seed=1))
        assert prefixes.stats()["bytes"] <= 1  # a state larger than the budget is not kept
    finally:
        llama.close()


def test_the_prefix_ends_with_the_system_message_whatever_the_template(tiny_model: Path) -> None:
    llama = open_llama(tiny_model)
    try:
        text = f"<|im_start|>system\n{PERSONA}<|im_end|>\n<|im_start|>user\nやあ<|im_end|>\n"
        tokens = llama.tokenize(text.encode(), add_bos=False, special=True)
        length = prefix_length(llama, tokens, PERSONA)
        assert PERSONA.encode() in llama.detokenize(tokens[:length], special=True)
        assert PERSONA.encode() not in llama.detokenize(tokens[: length - 1], special=True)
        assert prefix_length(llama, tokens, "not in the prompt") == 0
    finally:
        llama.close()
