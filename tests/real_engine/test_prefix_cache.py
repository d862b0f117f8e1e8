"""The stable-prefix KV cache on the real engine: a turn whose system message was seen before reads only the
rest of its prompt, even after other calls replaced the context, and replies exactly as without the cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backend.llm.base import PRIORITY_TURN, GenerateOptions
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


HEAD = (
    "あなたは中央カフェでひかりと話しています。" * 4
    + "<<<TRANSCRIPT\nひかり: 今日はいい天気だね。\nTRANSCRIPT>>>"
)


async def test_a_prefilled_prompt_is_read_only_past_its_prefix_and_replies_the_same(tiny_model: Path) -> None:
    """`prefill` reads a prompt up to `upto` ahead of time; the call that comes then reads only the tail."""
    plain_llama, ahead_llama = open_llama(tiny_model), open_llama(tiny_model)
    try:
        messages = _messages(PERSONA, HEAD + "\nNow: day 1, 10:00.")
        options = GenerateOptions(max_tokens=16, temperature=0.0, seed=3)
        plain = LlamaCppLLM(plain_llama, model_name="tiny.gguf")
        ahead = LlamaCppLLM(ahead_llama, model_name="tiny.gguf", prefix_cache_bytes=64 * 2**20)
        assert await plain.prefill(messages, options=options, upto=HEAD) is False  # no cache: nothing kept
        assert await ahead.prefill(messages, options=options, upto=HEAD) is True
        await ahead.complete(_messages(OTHER, "猫がいた。"), options=options)  # another call in between
        counts = _evaluated(ahead_llama)
        assert (await ahead.complete(messages, options=options)).text == (
            await plain.complete(messages, options=options)
        ).text
        tail = len(ahead_llama.tokenize(b"\nNow: day 1, 10:00.", add_bos=False)) + 16  # and the template's
        assert 0 < counts[0] <= tail
    finally:
        plain_llama.close()
        ahead_llama.close()


async def test_a_live_turns_context_is_kept_for_the_speakers_next_turn(tiny_model: Path) -> None:
    llama = open_llama(tiny_model)
    try:
        provider = LlamaCppLLM(llama, model_name="tiny.gguf", prefix_cache_bytes=64 * 2**20)
        turn = GenerateOptions(max_tokens=8, temperature=0.0, seed=3, priority=PRIORITY_TURN)
        first = HEAD + "\nNow: day 1, 10:00."
        await provider.complete(_messages(PERSONA, first), options=turn)
        await provider.complete(_messages(OTHER, "猫がいた。"), options=GenerateOptions(max_tokens=8))
        counts = _evaluated(llama)
        later = HEAD.replace("TRANSCRIPT>>>", "葵: そうだね。\nひかり: 散歩しよう。\nTRANSCRIPT>>>")
        await provider.complete(_messages(PERSONA, later + "\nNow: day 1, 10:05."), options=turn)
        prefixes = provider.engine.prefixes
        assert prefixes is not None and prefixes.kept >= 1
        whole = len(llama.tokenize(later.encode(), add_bos=False))
        assert sum(counts) < whole / 2  # the persona and the history so far came from the kept turn
    finally:
        llama.close()
