"""The scripted engine's core: schema-valid filling, determinism, and the test controls (enqueue, history)."""

from __future__ import annotations

import random
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from backend.errors import LLMTimeout
from backend.llm.base import Completion, GenerateOptions, json_schema_for
from backend.scripted import ScriptedLLM, WriterContext, fill_schema
from backend.scripted.engine import DEFAULT_KEPT_CALLS


class ProbeStep(BaseModel):
    time_of_day: float = Field(ge=0, lt=24)
    place: str = Field(min_length=2, max_length=40)
    kind: Literal["work", "meal", "walk"]


class ProbeSchedule(BaseModel):
    """Enums, ranges, nested lists of models, optional and exclusive bounds: what the real schemas use."""

    steps: list[ProbeStep] = Field(min_length=2, max_length=5)
    tags: list[str] = Field(default_factory=list, max_length=3)
    priority: int = Field(ge=1, le=3)
    confidence: float = Field(gt=0, lt=1)
    note: str | None = None
    mood: Literal["joy", "calm", "worry"]
    done: bool


class ProbeVote(BaseModel):
    choice: Literal["yes", "no", "abstain"]
    strength: int = Field(gt=0, lt=5)
    reasons: list[list[str]] = Field(min_length=1)
    offset: int = Field(le=-5)
    budget: float = Field(ge=100)


def context(seed: int = 0, language: str = "ja") -> WriterContext:
    return WriterContext({}, random.Random(seed), [], GenerateOptions(language=language), None)


@pytest.mark.parametrize("model", [ProbeSchedule, ProbeVote, ProbeStep])
@pytest.mark.parametrize("seed", range(12))
def test_fill_schema_validates(model: type[BaseModel], seed: int) -> None:
    value = fill_schema(json_schema_for(model), context(seed))
    model.model_validate(value)  # raises if the filler broke a constraint


def test_fill_schema_is_deterministic_and_varies_with_the_seed() -> None:
    schema = json_schema_for(ProbeSchedule)
    assert fill_schema(schema, context(5)) == fill_schema(schema, context(5))
    assert len({str(fill_schema(schema, context(seed))) for seed in range(10)}) > 1


def test_fill_schema_writes_in_the_language_of_the_call() -> None:
    ja = fill_schema({"type": "string"}, context(1, "ja"))
    en = fill_schema({"type": "string"}, context(1, "en"))
    assert any("\u3040" <= ch <= "\u30ff" for ch in ja)
    assert en.isascii()


async def test_same_input_gives_same_reply_and_history_records_it() -> None:
    messages = [{"role": "user", "content": "明日の予定は?"}]
    options = GenerateOptions(purpose="probe", language="ja")
    first = await ScriptedLLM(seed=3).generate_json(messages, ProbeSchedule, options=options)
    engine = ScriptedLLM(seed=3)
    second = await engine.generate_json(messages, ProbeSchedule, options=options)
    assert first == second
    [call] = engine.history
    assert call.messages == messages and call.schema is not None and call.schema["title"] == "ProbeSchedule"
    assert ProbeSchedule.model_validate_json(call.reply) == second


async def test_history_keeps_only_the_newest_calls() -> None:
    """A server on the scripted engine runs for days: its history of calls is bounded (the newest kept)."""
    assert ScriptedLLM().history.maxlen == DEFAULT_KEPT_CALLS
    engine = ScriptedLLM(kept_calls=3)
    for n in range(5):
        await engine.generate(
            [{"role": "user", "content": f"質問{n}"}], options=GenerateOptions(purpose="probe")
        )
    assert [call.messages[0]["content"] for call in engine.history] == ["質問2", "質問3", "質問4"]
    assert len(engine.calls("probe")) == 3


async def test_enqueued_replies_are_used_first_and_filtered_by_purpose() -> None:
    engine = ScriptedLLM()
    vote_reply = {"choice": "no", "strength": 2, "reasons": [["雨"]], "offset": -9, "budget": 150.5}
    engine.enqueue(vote_reply, purpose="council")
    engine.enqueue("ただの文字列")
    text = await engine.generate(
        [{"role": "user", "content": "hi"}], options=GenerateOptions(purpose="dialogue")
    )
    assert text == "ただの文字列"  # the purpose-less reply; the council one waits for its purpose
    vote = await engine.generate_json([], ProbeVote, options=GenerateOptions(purpose="council"))
    assert vote == ProbeVote.model_validate(vote_reply)
    writer_made = await engine.generate_json([], ProbeVote, options=GenerateOptions(purpose="council"))
    assert isinstance(writer_made, ProbeVote)  # queue empty: back to the generic filler
    assert [c.options.purpose for c in engine.calls("council")] == ["council", "council"]
    assert len(engine.calls()) == 3 and engine.calls("plan") == []


async def test_enqueued_exception_is_raised() -> None:
    engine = ScriptedLLM()
    engine.enqueue(LLMTimeout("too slow"), purpose="plan")
    with pytest.raises(LLMTimeout, match="too slow"):
        await engine.complete([], options=GenerateOptions(purpose="plan"))
    assert (await engine.complete([], options=GenerateOptions(purpose="plan"))).text  # only raised once


async def test_stream_chunks_the_reply_and_reports_usage() -> None:
    engine = ScriptedLLM(chunk_chars=4)
    engine.enqueue("カフェで会おうね、また明日。")
    usage = Completion("")
    pieces = [
        p
        async for p in engine.stream(
            [{"role": "user", "content": "じゃあね"}], options=GenerateOptions(), usage=usage
        )
    ]
    assert "".join(pieces) == "カフェで会おうね、また明日。" and len(pieces) == 4
    assert usage.model == "scripted" and usage.completion_tokens is not None
