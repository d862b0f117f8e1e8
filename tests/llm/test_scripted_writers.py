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
