"""Every reply schema the model is asked for is closed and bounded, and the scripted writers stay inside it.

Closed: a closed set of values is an `enum` (VRM presets, the wheel's labels, the world's places, the
judge's criteria). Bounded: every string has a `maxLength` (or an enum), every list a `maxItems`, every
number both bounds, so a grammar-bound reply always ends (no "６６６６..." until max_tokens).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from pydantic import BaseModel

from backend.conversation.schemas import EMOTIONS, MAX_REPLY_CHARS, TurnReply, cut_line
from backend.council.schemas import Aggregation, Consensus, MemberOpinion, judge_reply_for
from backend.emotion.schemas import evaluation_for, label_vocabulary
from backend.interview.schemas import InterviewReply
from backend.llm.base import GenerateOptions, json_schema_for
from backend.llm.grammar import json_schema_to_gbnf
from backend.llm.openai_compat import strict_schema
from backend.memory.prompts import (
    ConversationReflection,
    ImportanceRating,
    InsightList,
    PersonSummary,
    PersonUpdate,
    SalientQuestions,
)
from backend.memory.reflection import ratings_for
from backend.planning.schemas import PlanReply, plan_reply_for
from backend.scripted import ScriptedLLM
from tests.llm.gbnf_matcher import accepts

POIS = ("cafe", "home", "library", "park")
CRITERIA = ["clarity", "feasibility", "fairness"]

#: Every model call's reply class, per-call ones built as their call sites build them.
REPLY_SCHEMAS: dict[str, type[BaseModel]] = {
    "turn": TurnReply,
    "emotion-ja": evaluation_for("ja"),
    "emotion-en": evaluation_for("en"),
    "plan": plan_reply_for(POIS),
    "plan-no-places": PlanReply,
    "importance": ImportanceRating,
    "importance-batch": ratings_for(3),
    "reflection": ConversationReflection,
    "questions": SalientQuestions,
    "insight": InsightList,
    "person-update": PersonUpdate,
    "person-summary": PersonSummary,
    "opinion": MemberOpinion,
    "aggregation": Aggregation,
    "consensus": Consensus,
    "judge": judge_reply_for(CRITERIA),
    "interview": InterviewReply,
}


def unbounded(node: Any, path: str = "") -> list[str]:
    """Paths in a JSON Schema where a value has no bound (a string without maxLength or enum...)."""
    if not isinstance(node, dict):
        return []
    found = []
    kind = node.get("type")
    closed = "enum" in node or "const" in node
    if kind == "string" and not closed and "maxLength" not in node:
        found.append(f"{path}: string without maxLength")
    if kind == "array" and "maxItems" not in node:
        found.append(f"{path}: array without maxItems")
    if kind in ("integer", "number") and not closed and not {"minimum", "maximum"} <= set(node):
        found.append(f"{path}: {kind} without both bounds")
    if kind == "object" and "properties" not in node:
        found.append(f"{path}: free-form object")
    for key, sub in (node.get("properties") or {}).items():
        found += unbounded(sub, f"{path}.{key}")
    found += unbounded(node.get("items"), f"{path}[]")
    for sub in node.get("anyOf", []):
        found += unbounded(sub, path)
    return found


@pytest.mark.parametrize("name", REPLY_SCHEMAS)
def test_every_reply_schema_is_bounded(name: str) -> None:
    schema = json_schema_for(REPLY_SCHEMAS[name])
    assert unbounded(schema) == []
    # ...and so is its grammar: no unbounded repetition anywhere (no `*`, `+` or `{n,}`).
    grammar = json_schema_to_gbnf(schema)
    assert not re.search(r"[*+]|\{\d+,\}", grammar.replace("[^", "")), grammar


def test_closed_sets_are_enums() -> None:
    def enum_at(name: str, *path: str) -> list[Any]:
        node = json_schema_for(REPLY_SCHEMAS[name])
        for key in path:
            node = node["items"] if key == "[]" else node["properties"][key]
        return list(node["enum"])

    assert enum_at("turn", "emotion") == list(EMOTIONS)
    assert enum_at("emotion-ja", "label") == list(label_vocabulary("ja"))
    assert "恍惚" in enum_at("emotion-ja", "label") and "ecstasy" in enum_at("emotion-en", "label")
    assert enum_at("plan", "items", "[]", "poi_id") == list(POIS)
    assert enum_at("judge", "scores", "[]", "criterion") == CRITERIA
    assert enum_at("opinion", "stance") == ["for", "conditional", "against"]
    assert enum_at("judge", "recommended_action") == ["accept", "revise", "reject"]
    judge = json_schema_for(REPLY_SCHEMAS["judge"])["properties"]["scores"]
    batch = json_schema_for(REPLY_SCHEMAS["importance-batch"])["properties"]["ratings"]
    assert (judge["minItems"], judge["maxItems"]) == (3, 3) and (batch["minItems"], batch["maxItems"]) == (
        3,
        3,
    )


def test_the_judge_grammar_asks_for_each_criterion_once_in_order() -> None:
    # SmolLM2 scored "fairness" three times when three criteria were asked (the reply is then re-asked).
    grammar = json_schema_to_gbnf(json_schema_for(REPLY_SCHEMAS["judge"]))

    def verdict(names: list[str]) -> str:
        scores = [{"criterion": name, "score": 7, "reason": "ok"} for name in names]
        reply = {"scores": scores, "overall": 7, "rationale": "fine", "recommended_action": "accept"}
        return json.dumps(reply, separators=(",", ":"))

    assert accepts(grammar, verdict(CRITERIA))
    assert not accepts(grammar, verdict(["fairness"] * 3))
    assert not accepts(grammar, verdict(CRITERIA[:2]))
    strict = strict_schema(json_schema_for(REPLY_SCHEMAS["judge"]))["properties"]["scores"]
    assert "prefixItems" not in strict and strict["items"]["properties"]["criterion"]["enum"] == CRITERIA


def test_per_call_schemas_keep_their_title_and_are_cached() -> None:
    assert plan_reply_for(POIS) is plan_reply_for(POIS) and judge_reply_for(CRITERIA) is judge_reply_for(
        CRITERIA
    )
    assert ratings_for(3) is ratings_for(3) and evaluation_for("en") is evaluation_for("en")
    writers = ScriptedLLM().writers  # the scripted engine (and the tracer) know a reply by its title
    for name, model in REPLY_SCHEMAS.items():
        schema = json_schema_for(model)
        assert schema["title"] in writers, name
        assert schema.get("description"), f"{name}: the reply's description was lost"
    assert plan_reply_for(()) is PlanReply  # no places known: any id (the plan is repaired onto home)


def test_schemas_are_narrow_but_validation_stays_tolerant() -> None:
    # A provider that ignores the schema still gives a usable reply: the server maps or repairs it.
    turn = TurnReply.model_validate({"dialogue": "あ" * 500, "emotion": "joy"})
    assert turn.emotion == "joy" and len(turn.dialogue) <= MAX_REPLY_CHARS
    values = dict.fromkeys(
        ["joy", "trust", "fear", "surprise", "sadness", "disgust", "anger", "anticipation"], 9
    )
    assert evaluation_for("ja").model_validate({**values, "label": "嬉しい"}).label == "嬉しい"
    item = {"start": 7, "end": 8, "poi_id": "moon", "activity": "散歩"}
    assert plan_reply_for(POIS).model_validate({"items": [item]}).items[0].poi_id == "moon"
    assert ratings_for(3).model_validate({"ratings": [4, 5]}).ratings == [4, 5]  # rated one by one then


def test_a_long_line_is_cut_at_a_sentence_end() -> None:
    text = "今日はいい天気だね。" * 40
    cut = cut_line(text)
    assert len(cut) <= MAX_REPLY_CHARS and cut.endswith("。") and text.startswith(cut)
    assert cut_line("a" * 400) == "a" * MAX_REPLY_CHARS  # no sentence end: a hard cut
    assert cut_line("short.") == "short."


FACTS: dict[str, tuple[type[BaseModel], dict[str, Any]]] = {
    "plan": (
        plan_reply_for(POIS),
        {
            "home_poi": "home",
            "window": {"start": 7.0, "end": 22.0},
            "persona": {"traits": ["読書好き"]},
            "pois": [
                {"id": "home", "name": "家", "kind": "home"},
                {"id": "cafe", "name": "中央カフェ", "kind": "cafe"},
                {"id": "library", "name": "図書館", "kind": "library"},
                {"id": "park", "name": "公園", "kind": "park"},
            ],
        },
    ),
    "importance-batch": (ratings_for(3), {"memories": ["歯磨きをした", "ひかりと喧嘩した", "本を読んだ"]}),
    "judge": (judge_reply_for(CRITERIA), {"criteria": CRITERIA, "content": "広場で毎月市場を開く提案です。"}),
    "emotion-ja": (
        evaluation_for("ja"),
        {"previous": {"joy": 80, "trust": 60}, "lines": ["楽しいね！ありがとう"]},
    ),
    "emotion-en": (evaluation_for("en"), {"previous": {"anger": 70}, "lines": ["That is so unfair!"]}),
}


@pytest.mark.parametrize("name", FACTS)
@pytest.mark.parametrize("language", ["ja", "en"])
async def test_scripted_writers_answer_inside_the_per_call_schemas(name: str, language: str) -> None:
    model, facts = FACTS[name]
    if name.startswith("emotion"):
        language = name.rsplit("-", 1)[1]  # the schema is the character's language
    schema = json_schema_for(model)
    options = GenerateOptions(purpose="probe", language=language, facts=facts)
    reply = await ScriptedLLM(seed=5).complete(
        [{"role": "user", "content": name}], options=options, schema=schema
    )
    model.model_validate_json(reply.text)
    compact = json.dumps(json.loads(reply.text), ensure_ascii=False, separators=(",", ":"))
    assert accepts(json_schema_to_gbnf(schema), compact), compact
