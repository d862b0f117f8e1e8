"""Every reply schema the system uses has a scripted writer whose output validates, in both languages,
deterministically, even when the caller's facts are sparse."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from pydantic import BaseModel

import backend
from backend.llm.base import GenerateOptions, json_schema_for, parse_reply
from backend.scripted import ScriptedLLM

WRITERS = sorted(k for k in ScriptedLLM().writers if not k.startswith("text"))


def _schema_classes() -> dict[str, type[BaseModel]]:
    """Every pydantic model defined under backend/, by class name."""
    found: dict[str, type[BaseModel]] = {}
    for info in pkgutil.walk_packages(backend.__path__, prefix="backend."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseModel)
                and value.__module__ == module.__name__
            ):
                found.setdefault(value.__name__, value)
    return found


CLASSES = _schema_classes()


def test_the_system_has_writers_for_its_reply_schemas() -> None:
    expected = {"TurnReply", "EmotionEvaluation", "MemberOpinion", "JudgeReply"}
    assert expected <= set(WRITERS)
    assert len(WRITERS) >= 10


@pytest.mark.parametrize("title", WRITERS)
@pytest.mark.parametrize("language", ["ja", "en"])
@pytest.mark.parametrize("facts", [{}, {"language": "ja", "name": "葵", "traits": ["明るい"]}])
async def test_writer_output_validates_and_is_deterministic(
    title: str, language: str, facts: dict[str, object]
) -> None:
    assert title in CLASSES, f"a writer for {title}, but no such schema under backend/"
    schema = CLASSES[title]
    messages = [{"role": "user", "content": f"{title} {language}"}]
    options = GenerateOptions(purpose="probe", language=language, facts=facts)
    first = await ScriptedLLM(seed=3).complete(messages, options=options, schema=json_schema_for(schema))
    again = await ScriptedLLM(seed=3).complete(messages, options=options, schema=json_schema_for(schema))
    assert first.text == again.text
    parse_reply(first.text, schema)


@pytest.mark.parametrize("seed", range(12))
async def test_the_turn_writer_never_says_a_line_of_its_prompt_again(seed: int) -> None:
    from backend.conversation.schemas import TurnReply
    from backend.llm.echo import prompt_lines
    from backend.text import normalise

    said = "うんうん、わかるよ。"  # the generic answer, already said earlier in this conversation
    facts = {"turn_index": 3, "max_turns": 8, "partner": {"name": "ひかり"}, "partner_last_line": "うん。",
             "history": [f"葵: {said}", "ひかり: うん。"]}  # fmt: skip
    messages = [{"role": "user", "content": f"葵: {said}\nひかり: うん。"}]
    options = GenerateOptions(purpose="dialogue", language="ja", facts=facts)
    reply = await ScriptedLLM(seed=seed).complete(
        messages, options=options, schema=json_schema_for(TurnReply)
    )
    dialogue = parse_reply(reply.text, TurnReply).dialogue
    assert normalise(dialogue).strip("。") not in prompt_lines(messages[0]["content"])


@pytest.mark.parametrize("language", ["ja", "en"])
@pytest.mark.parametrize("seed", range(6))
async def test_insights_never_restate_a_reflection_the_prompt_shows(language: str, seed: int) -> None:
    """A reflection is a memory too: the next reflection's prompt shows it, and the scripted engine must not
    write it again (the echo check would refuse the whole reply, and the character would never reflect)."""
    from backend.memory.prompts import InsightList
    from backend.scripted.writers.memory import _insight_forms

    place = "カフェ" if language == "ja" else "cafe"
    seen = [f"{place}で話した。", f"{place}でケーキを食べた。", f"{place}で写真を撮った。"]
    if language == "en":
        seen = [f"Talked at the {place}.", f"Ate cake at the {place}.", f"Took photos at the {place}."]
    said = _insight_forms(place, language == "ja")[:2]  # two of the three forms are already memories
    memories = [{"id": i, "content": text} for i, text in enumerate(seen + said, start=1)]
    options = GenerateOptions(purpose="reflection", language=language, facts={"memories": memories})
    messages = [{"role": "user", "content": "\n".join(m["content"] for m in memories)}]
    reply = await ScriptedLLM(seed=seed).complete(
        messages, options=options, schema=json_schema_for(InsightList)
    )
    contents = [insight.content for insight in parse_reply(reply.text, InsightList).insights]
    assert _insight_forms(place, language == "ja")[2] in contents
    assert not set(contents) & set(said)
