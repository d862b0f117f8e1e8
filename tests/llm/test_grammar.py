"""JSON Schema -> GBNF: the grammar accepts the compact JSON of valid replies and refuses broken ones.

Checked with a small GBNF recogniser (tests/llm/gbnf_matcher.py), so these run without llama.cpp; the
real-engine tests (tests/real_engine) decode under the same grammars.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from backend.council.schemas import JudgeReply, MemberOpinion
from backend.emotion.schemas import EmotionEvaluation
from backend.llm.base import json_schema_for
from backend.llm.grammar import CHAR_RULE, alternatives, integer_range, json_schema_to_gbnf
from backend.memory.prompts import ImportanceRating, InsightList
from backend.planning.schemas import PlanReply
from tests.llm.gbnf_matcher import accepts


def grammar_of(model: type[BaseModel]) -> str:
    return json_schema_to_gbnf(json_schema_for(model))


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


VALID = [
    (ImportanceRating, {"importance": 7}),
    (EmotionEvaluation, {**dict.fromkeys(EmotionEvaluation.model_fields, 0), "joy": 100, "label": "嬉しい"}),
    (PlanReply, {"items": [{"poi_id": "cafe", "activity": "朝のコーヒー", "hours": 1.5}]}),
    (
        PlanReply,
        {
            "items": [
                {"poi_id": "home", "activity": "寝る", "hours": 8.0},
                {"poi_id": "a", "activity": "b", "hours": 0},
            ]
        },
    ),
    (
        MemberOpinion,
        {"stance": "conditional", "opinion": "賛成だが\n条件がある", "concerns": [], "conditions": ["予算"]},
    ),
    (
        JudgeReply,
        {
            "scores": [{"criterion": "clarity", "score": 10, "reason": ""}],
            "overall": 9.25,
            "rationale": 'says "why"',
            "recommended_action": "accept",
        },
    ),
    (InsightList, {"insights": [{"content": "x", "evidence_ids": [3, 14], "importance": 1}]}),
]


@pytest.mark.parametrize(("model", "reply"), VALID, ids=lambda v: getattr(v, "__name__", ""))
def test_valid_replies_are_sentences_of_the_grammar(model: type[BaseModel], reply: dict[str, Any]) -> None:
    model.model_validate(reply)  # the example itself is valid
    text = compact(reply)
    assert accepts(grammar_of(model), text), text
    # a single space after separators is allowed too (models like to write it)
    assert accepts(grammar_of(model), text.replace('":', '": ').replace(',"', ', "'))


def test_raw_control_characters_are_refused_inside_strings() -> None:
    # llama-cpp-python's own converter allows these (its issue #1259); a JSON parser refuses them.
    grammar = grammar_of(MemberOpinion)
    escaped = compact({"stance": "for", "opinion": "a\nb\tc", "concerns": [], "conditions": []})
    assert accepts(grammar, escaped)
    for raw in ("\n", "\t", "\x00", "\x1f", "\x7f"):
        broken = escaped.replace("a\\nb", f"a{raw}b")
        assert not accepts(grammar, broken), repr(raw)
        if raw != "\x7f":  # JSON itself only forbids U+0000-U+001F; llama.cpp also keeps DEL out
            with pytest.raises(ValueError):
                json.loads(broken)
    assert "\\x00-\\x1F" in CHAR_RULE and "\\x7F" in CHAR_RULE


@pytest.mark.parametrize("value", [0, 11, -1, 100])
def test_integer_bounds_are_part_of_the_grammar(value: int) -> None:
    assert not accepts(grammar_of(ImportanceRating), compact({"importance": value}))


def test_bounded_numbers_keep_their_integer_part_in_range() -> None:
    grammar = grammar_of(JudgeReply)
    base = {"scores": [{"criterion": "c", "score": 5, "reason": "r"}], "overall": 0, "rationale": "r"}
    cases = [(1, True), (9.99, True), (10, True), ("10.0", True), (0.5, False), ("10.5", False), (11, False)]
    for overall, ok in cases:
        reply = {**base, "recommended_action": "revise"}
        text = compact(reply).replace('"overall":0', f'"overall":{overall}')
        assert accepts(grammar, text) is ok, overall


def test_lengths_and_item_counts_are_bounded() -> None:
    class Bounded(BaseModel):
        word: str = Field(min_length=2, max_length=3)
        tags: list[Literal["a", "b"]] = Field(min_length=1, max_length=2)

    grammar = grammar_of(Bounded)
    assert accepts(grammar, compact({"word": "日本語", "tags": ["a", "b"]}))  # characters, not bytes
    assert not accepts(grammar, compact({"word": "x", "tags": ["a"]}))
    assert not accepts(grammar, compact({"word": "abcd", "tags": ["a"]}))
    assert not accepts(grammar, compact({"word": "ab", "tags": []}))
    assert not accepts(grammar, compact({"word": "ab", "tags": ["a", "b", "a"]}))
    assert not accepts(grammar, compact({"word": "ab", "tags": ["c"]}))


def test_optional_fields_refs_and_free_dicts() -> None:
    class Inner(BaseModel):
        n: int

    class Outer(BaseModel):
        inner: Inner
        maybe: str | None = None
        extra: dict[str, int] = {}

    grammar = json_schema_to_gbnf(Outer.model_json_schema())  # with $defs and $ref, not inlined
    assert accepts(grammar, compact({"inner": {"n": -3}, "maybe": None, "extra": {"k": 1, "日": 2}}))
    assert accepts(grammar, compact({"inner": {"n": 0}, "maybe": "s", "extra": {}}))
    assert not accepts(grammar, compact({"inner": {"n": 1.5}, "maybe": None, "extra": {}}))
    assert not accepts(grammar, compact({"inner": {"n": 1}, "maybe": None, "extra": {"k": "v"}}))


def test_unsupported_schemas_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="only local"):
        json_schema_to_gbnf({"$ref": "https://example.org/schema.json"})
    with pytest.raises(ValueError, match="unsupported JSON Schema type"):
        json_schema_to_gbnf({"type": "tuple"})
    with pytest.raises(ValueError, match="empty enum"):
        json_schema_to_gbnf({"enum": []})
    with pytest.raises(ValueError, match="empty integer range"):
        json_schema_to_gbnf({"type": "integer", "minimum": 5, "maximum": 4})


RANGES = [
    (0, 100),
    (1, 10),
    (0, 23),
    (7, 123),
    (10, 19),
    (123, 129),
    (5, 50_000),
    (0, 0),
    (-30, -4),
    (-5, 20),
]


@pytest.mark.parametrize(("low", "high"), RANGES)
def test_integer_ranges_accept_exactly_their_numbers(low: int, high: int) -> None:
    grammar = f"root ::= {integer_range(low, high)}\n"
    probes = {*range(low - 12, low + 30), *range(high - 30, high + 12), 10 * high, -low - 1}
    for value in sorted(probes):
        assert accepts(grammar, str(value)) is (low <= value <= high), value
    assert not accepts(grammar, f"0{high}") and not accepts(grammar, "")  # no leading zero, no empty


def test_ranges_are_a_few_digit_patterns_not_one_alternative_per_value() -> None:
    # Each top-level alternative is one more parse stack llama.cpp checks every token against.
    assert integer_range(0, 100) == '[0-9] | [1-9] [0-9] | "100"'
    assert integer_range(1, 10) == '[1-9] | "10"'
    assert integer_range(1, 2**63 - 1).startswith("[1-9] [0-9]{0,17} | [1-8] [0-9]{18} | ")
    emotion = grammar_of(EmotionEvaluation)
    assert emotion.count('"37"') == 0 and len(emotion) < 900


def test_enums_are_factored_by_common_prefix_and_accept_exactly_their_values() -> None:
    values = ["sad", "surprised", "happy", 1, 10, 100, "喜び", "恍惚", 'a"b']
    grammar = f"root ::= {alternatives([compact(v) for v in values])}\n"
    assert '"s" (' in grammar  # sad and surprised share their first letters
    for value in values:
        assert accepts(grammar, compact(value)), value
    for other in ["su", "sadd", 0, 1000, 11, "喜", "", "happy "]:
        assert not accepts(grammar, compact(other)), other
    schema = {"type": "string", "enum": ["neutral", "happy", "angry", "sad", "relaxed", "surprised"]}
    assert json_schema_to_gbnf(schema).count("|") == 5  # one alternative per value, one shared "s"


def test_bounded_numbers_use_digit_patterns_too() -> None:
    grammar = json_schema_to_gbnf({"type": "number", "minimum": 0, "maximum": 24})
    for text, ok in [("0", True), ("9.5", True), ("13.25", True), ("23.999", True), ("24", True), ("24.0", True),
                     ("24.5", False), ("25", False), ("-1", False), ("07", False)]:  # fmt: skip
        assert accepts(grammar, text) is ok, text
