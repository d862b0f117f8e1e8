"""Every reply schema Machi uses, decoded by llama.cpp under the grammar: 50 seeded replies each validate.

The tiny model knows nothing about JSON order, so the controls (no grammar; llama-cpp-python's own
converter on a model that loves newlines) show that validity comes from our grammar, not from the model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from backend.conversation.schemas import TurnReply
from backend.council.schemas import Aggregation, Consensus, JudgeReply, MemberOpinion
from backend.emotion.schemas import EmotionEvaluation
from backend.errors import LLMReplyError
from backend.llm.base import GenerateOptions, json_schema_for, parse_reply
from backend.memory.prompts import ConversationReflection, ImportanceRating, InsightList, SalientQuestions
from backend.planning.schemas import PlanReply
from tests.real_engine.conftest import open_llama
from tests.real_engine.tiny_gguf import write_tiny_gguf

#: The reply models of every model call the server makes.
SCHEMAS: list[type[BaseModel]] = [
    TurnReply,
    PlanReply,
    ImportanceRating,
    ConversationReflection,
    SalientQuestions,
    InsightList,
    EmotionEvaluation,
    MemberOpinion,
    Aggregation,
    Consensus,
    JudgeReply,
]
REPLIES = 50
MAX_TOKENS = 512

MESSAGES = [
    {"role": "system", "content": "あなたは町の住人です。Answer with one JSON object only."},
    {"role": "user", "content": "今日は広場で祭りがあります。How do you feel? 気持ちを教えて。"},
]


async def replies(
    provider: Any, schema: type[BaseModel] | None, *, seeds: range, max_tokens: int
) -> list[str]:
    """Raw reply texts, one per seed, with the schema's grammar when `schema` is given."""
    json_schema = json_schema_for(schema) if schema is not None else None
    texts = []
    for seed in seeds:
        options = GenerateOptions(purpose="test", seed=seed, max_tokens=max_tokens, temperature=1.0)
        completion = await provider.complete(MESSAGES, options=options, schema=json_schema)
        texts.append(completion.text)
    return texts


def valid_count(texts: list[str], schema: type[BaseModel]) -> int:
    count = 0
    for text in texts:
        try:
            parse_reply(text, schema)
            count += 1
        except LLMReplyError:
            pass
    return count


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.__name__)
async def test_fifty_seeded_replies_all_validate(provider: Any, schema: type[BaseModel]) -> None:
    texts = await replies(provider, schema, seeds=range(REPLIES), max_tokens=MAX_TOKENS)
    valid = valid_count(texts, schema)
    print(f"{schema.__name__}: {valid}/{REPLIES} valid with the grammar")
    assert valid == REPLIES, [t for t in texts if not _valid(t, schema)][:3]
    assert len(set(texts)) >= 10  # seeds really vary the replies
    for text in texts:  # no raw control character anywhere (escapes like \\n are fine)
        assert not any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text), repr(text)


def _valid(text: str, schema: type[BaseModel]) -> bool:
    return valid_count([text], schema) == 1


@pytest.mark.parametrize("schema", [ImportanceRating, TurnReply, EmotionEvaluation], ids=lambda s: s.__name__)
async def test_without_the_grammar_most_replies_fail(provider: Any, schema: type[BaseModel]) -> None:
    texts = await replies(provider, None, seeds=range(REPLIES), max_tokens=64)
    valid = valid_count(texts, schema)
    print(f"{schema.__name__}: {valid}/{REPLIES} valid without the grammar")
    assert valid < REPLIES // 5


def test_control_characters_break_llama_cpp_pythons_grammar_but_not_ours(tmp_path: Path) -> None:
    """llama-cpp-python issue #1259: its converter lets raw newlines into strings; ours does not."""
    import llama_cpp

    from backend.llm.grammar import json_schema_to_gbnf

    model = open_llama(write_tiny_gguf(tmp_path / "newlines.gguf", favour={"<0x0A>": 4.0, "<0x09>": 4.0}))
    # (TurnReply: its converter nests a paren per character of a maxLength, which crashes llama.cpp's
    # parser for lengths in the thousands, e.g. a reflection's summary; a line's 300 are fine. With the emotion
    # an enum and the line bounded there is less room for a newline: 40 seeds, not 20.)
    schema = json_schema_for(TurnReply)
    ours = llama_cpp.LlamaGrammar.from_string(json_schema_to_gbnf(schema), verbose=False)
    theirs = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    broken = {"ours": 0, "theirs": 0}
    for seed in range(40):
        for name, grammar in (("ours", ours), ("theirs", theirs)):
            reply = model.create_chat_completion(
                MESSAGES, grammar=grammar, seed=seed, temperature=1.0, max_tokens=MAX_TOKENS
            )
            broken[name] += not _valid(reply["choices"][0]["message"]["content"], TurnReply)
    model.close()
    print(f"replies that fail to parse out of 40: {broken}")
    assert broken["ours"] == 0
    assert broken["theirs"] >= 10
