"""A re-ask's banned openings on llama.cpp: a tiny model that loves one word writes it in most replies, and
never once that word is banned (`GenerateOptions.banned_openings` -> logit bias), under the reply's grammar.

The word is Japanese: the tiny model's tokenizer spells English one letter at a time (its vocabulary has no
merges), and a one-letter token is never banned (llm/ban.py)."""

from __future__ import annotations

from pathlib import Path

from backend.conversation.schemas import TurnReply
from backend.llm.base import GenerateOptions, json_schema_for
from backend.llm.llamacpp import LlamaCppLLM
from tests.real_engine.conftest import open_llama
from tests.real_engine.tiny_gguf import write_tiny_gguf

MESSAGES = [{"role": "user", "content": "Say something to your friend."}]
SEEDS = range(12)


async def _replies(provider: LlamaCppLLM, banned: list[str]) -> list[str]:
    texts = []
    for seed in SEEDS:
        options = GenerateOptions(seed=seed, temperature=1.0, max_tokens=96, banned_openings=banned)
        completion = await provider.complete(MESSAGES, options=options, schema=json_schema_for(TurnReply))
        texts.append(completion.text)  # raw: a reply cut at max_tokens counts too
    return texts


async def test_a_banned_opening_is_never_written_again(tmp_path: Path) -> None:
    path = write_tiny_gguf(tmp_path / "fond.gguf", favour={"明日": 6.0})
    provider = LlamaCppLLM(open_llama(path), model_name="fond.gguf", seed=1)
    try:
        free = await _replies(provider, [])
        assert sum("明日" in t for t in free) >= len(SEEDS) // 3
        banned = await _replies(provider, ["明日の夜7時に広場で"])
    finally:
        provider.engine.llama.close()
    assert not any("明日" in t for t in banned), banned
    assert all(t.startswith('{"dialogue"') for t in banned)  # still under the grammar
