"""The echo check: replies that copy their prompt (placeholders, field words, prompt lines, names) are refused,
real answers in Japanese and English pass, and the repair wrapper re-asks once with the reason."""

from __future__ import annotations

import re
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from backend.conversation.schemas import TurnReply
from backend.council.schemas import Aggregation, MemberOpinion, judge_reply_for
from backend.emotion.schemas import EmotionEvaluation
from backend.errors import LLMReplyError
from backend.interview.schemas import InterviewReply
from backend.llm.base import GenerateOptions, Message
from backend.llm.echo import echo_problem, fact_names, normalise, prompt_lines
from backend.llm.retry import REASK_HEAT, RepairingLLM, checked_reply
from backend.memory.afterthought import afterthought_for
from backend.memory.prompts import PersonSummary, PersonUpdate
from backend.planning.schemas import PlanReply
from backend.scripted import ScriptedLLM

#: What a prompt must never show: a JSON example whose values a small model would copy.
TEMPLATE = re.compile(r'"\.\.\."|<your|<1-10>|<true|":\s*"|":\s*\[|\{\s*"|\[\s*"|\.\.\.\s*\]|\|reject')

PROMPT: list[Message] = [
    {"role": "system", "content": "You are 葵.\n- dialogue: what 葵 says now, in Japanese"},
    {
        "role": "user",
        "content": "What you remember that may matter:\n- 昨日、図書館で古い地図を見つけた\n"
        "<<<TRANSCRIPT\nひかり: こんにちは、葵ちゃん。今日は何してるの？\nTRANSCRIPT>>>",
    },
]
FACTS = {"speaker": {"id": "aoi", "name": "葵"}, "partner": {"id": "hikari", "name": "ひかり"}}


def assert_no_template(messages: list[Message]) -> None:
    """The rendered prompt describes the reply in words: no JSON example, no placeholder value."""
    for message in messages:
        found = TEMPLATE.search(message["content"])
        assert found is None, f"template {found.group(0)!r} in {message['content']!r}"


def line(dialogue: str, emotion: str = "happy") -> TurnReply:
    return TurnReply(dialogue=dialogue, emotion=emotion)


@pytest.mark.parametrize(
    ("dialogue", "why"),
    [
        ("<your line>", "placeholder"),
        ("...", "placeholder"),
        ("…", "placeholder"),
        ("", "empty"),
        ("。", "placeholder"),
        ("！", "one character"),
        ("え？", "one character"),
        ("dialogue", "field's name"),
        ("The speaker's next line", "field's name or description"),
        ("string", "placeholder"),
        ("ひかり", "only a name"),
        ("Aoi", "only a name"),
        ("こんにちは、葵ちゃん。今日は何してるの？", "repeats a line"),
        ("ひかり: こんにちは、葵ちゃん。今日は何してるの？", "repeats a line"),
        ("昨日、図書館で古い地図を見つけた", "repeats a line"),
        ("what 葵 says now, in Japanese", "repeats the prompt's description of a field"),
        ("in Japanese", "repeats the prompt's description of a field"),
    ],
)
def test_an_echo_in_the_dialogue_is_named_with_its_field(dialogue: str, why: str) -> None:
    facts = {**FACTS, "speaker": {"id": "aoi", "name": "Aoi"}}
    problem = echo_problem(line(dialogue), TurnReply, PROMPT, facts)
    assert problem is not None and problem.startswith("dialogue ") and why in problem, problem


@pytest.mark.parametrize(
    "dialogue",
    [
        "えっと、図書館で地図を調べていたんです。",
        "こんにちは！",  # shorter than a line echo needs: greetings may repeat
        "はい",
        "Morning, Hikari! I found an old map yesterday.",
        "地図",
    ],
)
def test_real_lines_pass(dialogue: str) -> None:
    assert echo_problem(line(dialogue), TurnReply, PROMPT, FACTS) is None


def test_vocabulary_fields_keep_one_character_words_but_not_placeholders() -> None:
    values = dict.fromkeys(
        ("joy", "trust", "fear", "surprise", "sadness", "disgust", "anger", "anticipation"), 5
    )
    assert echo_problem(EmotionEvaluation(**values, label="愛"), EmotionEvaluation, PROMPT, FACTS) is None
    assert echo_problem(EmotionEvaluation(**values, label="joy"), EmotionEvaluation, PROMPT, FACTS) is None
    problem = echo_problem(EmotionEvaluation(**values, label="<one word>"), EmotionEvaluation, [], {})
    assert problem is not None and problem.startswith("label is a placeholder")

    # A cut-off template slot in a short word field is a placeholder too; an enum field is not checked.
    class Word(BaseModel):
        word: str = Field(max_length=16)
        preset: str = Field(max_length=16, json_schema_extra={"enum": ["happy", "sad"]})

    cut = Word(word="<one of: happy", preset="<one of")
    assert echo_problem(cut, Word, PROMPT, FACTS) == (
        "word is a placeholder ('<one of: happy'), not an answer: write it anew, in your own words"
    )
    assert echo_problem(Word(word="嬉しい", preset="<one of"), Word, PROMPT, FACTS) is None


def test_council_placeholders_of_the_old_templates_are_refused() -> None:
    old_ja = MemberOpinion(stance="for", opinion="意見（2〜4文、あなたの口調で）", concerns=["懸念"])
    assert (echo_problem(old_ja, MemberOpinion, [], {}) or "").startswith("opinion is a placeholder")
    old_en = MemberOpinion(stance="for", opinion="your view (2-4 sentences, in your voice)")
    assert (echo_problem(old_en, MemberOpinion, [], {}) or "").startswith("opinion is a placeholder")
    concern = MemberOpinion(stance="against", opinion="夜は静かな方がいいと思います。", concerns=["懸念"])
    assert (echo_problem(concern, MemberOpinion, [], {}) or "").startswith("concerns[0] is a placeholder")
    condition = MemberOpinion(
        stance="conditional", opinion="I agree.", conditions=["a condition for your support"]
    )
    assert "conditions[0]" in (echo_problem(condition, MemberOpinion, [], {}) or "")
    fine = MemberOpinion(stance="for", opinion="夜道が明るくなるのは賛成です。", concerns=["電気代"])
    assert echo_problem(fine, MemberOpinion, [], {}) is None


def test_a_phrase_of_the_prompts_field_descriptions_is_refused_even_in_a_list() -> None:
    prompt: list[Message] = [
        {
            "role": "user",
            "content": "- concerns: 心配な点を短い文で（なければ空のリスト）\n- stance, opinion: 立場と意見",
        }
    ]
    copied = MemberOpinion(stance="for", opinion="いい案です。", concerns=["なければ空のリスト"])
    assert "concerns[0] repeats the prompt's description of a field" in (
        echo_problem(copied, MemberOpinion, prompt) or ""
    )
    listed = MemberOpinion(stance="for", opinion="立場と意見")
    assert "opinion repeats the prompt's description" in (echo_problem(listed, MemberOpinion, prompt) or "")
    fine = MemberOpinion(stance="for", opinion="いい案です。", concerns=["短い期間で終わること"])
    assert echo_problem(fine, MemberOpinion, prompt) is None


def test_list_items_may_quote_the_prompt_but_scalar_text_may_not() -> None:
    prompt: list[Message] = [
        {"role": "user", "content": "- 夏海（反対）: 毎週は多すぎる\n  懸念: 人手が足りない"}
    ]
    quoted = Aggregation(concerns=["人手が足りない"], differences=["毎週は多すぎる"])
    assert echo_problem(quoted, Aggregation, prompt, {}) is None  # the clerk extracts what was said
    repeated = MemberOpinion(stance="against", opinion="毎週は多すぎる")
    assert "repeats a line" in (echo_problem(repeated, MemberOpinion, prompt, {}) or "")


def test_ids_and_enum_fields_are_not_checked_and_empty_is_allowed_where_the_schema_allows_it() -> None:
    plan = PlanReply.model_validate({"items": [{"start": 7, "end": 8, "poi_id": "...", "activity": "散歩"}]})
    assert echo_problem(plan, PlanReply, [], {}) is None
    judged = judge_reply_for(["warmth"]).model_validate(
        {
            "scores": [{"criterion": "warmth", "score": 7, "reason": ""}],
            "overall": 7,
            "rationale": "温かい言葉づかいです。",
            "recommended_action": "accept",
        }
    )
    assert echo_problem(judged, type(judged), [], {}) is None
    filler = PlanReply.model_validate(
        {"items": [{"start": 7, "end": 8, "poi_id": "cafe", "activity": "..."}]}
    )
    assert (echo_problem(filler, PlanReply, [], {}) or "").startswith("items[0].activity is a placeholder")


def test_a_schema_field_can_opt_out_or_in() -> None:
    class Reply(BaseModel):
        code: str = Field(json_schema_extra={"echo_check": False})
        word: Annotated[str, Field(max_length=10, json_schema_extra={"echo_check": True})]

    assert echo_problem(Reply(code="x", word="ok"), Reply, [], {}) is None
    assert "word has at most one character" in (echo_problem(Reply(code="x", word="x"), Reply, [], {}) or "")


def test_a_field_description_opening_a_value_is_cut_or_refused() -> None:
    """SmolLM2 opened an interview answer with the field's description, then answered; and opened a council
    opinion with a phrase of the stance's description. The first is cut off, the second refused."""
    interview: list[Message] = [
        {
            "role": "system",
            "content": "- answer: Ben's spoken reply to the interviewer, in English, in Ben's own words",
        },
        {"role": "user", "content": "Have you heard about a party?"},
    ]
    said = "Ben's spoken reply to the interviewer, in English, in Ben's own words. Mia's party is tomorrow at 7pm."
    reply = checked_reply(f'{{"answer": "{said}"}}', InterviewReply, interview, GenerateOptions())
    assert reply.answer == "Mia's party is tomorrow at 7pm."
    only = "Ben's spoken reply to the interviewer, in English, in Ben's own words."
    with pytest.raises(LLMReplyError, match="description of"):
        checked_reply(f'{{"answer": "{only}"}}', InterviewReply, interview, GenerateOptions())
    council: list[Message] = [
        {"role": "user", "content": "- stance: your position on the proposal, one of for, conditional, against\n"
                                    "- opinion: what you yourself think of this proposal, two to four sentences"},
    ]  # fmt: skip
    copied = MemberOpinion(stance="against", opinion="your position on the proposal is against, conditional")
    assert "opens with the prompt's description" in (echo_problem(copied, MemberOpinion, council, {}) or "")
    own = MemberOpinion(stance="for", opinion="Your position on this is brave. I would hold it every month.")
    assert echo_problem(own, MemberOpinion, council, {}) is None  # three words of it are not a copy
    ja: list[Message] = [{"role": "user", "content": "- answer: 葵がインタビューに口で答える言葉"}]
    copied_ja = InterviewReply(answer="葵がインタビューに口で答える言葉です。パーティーは明日です。")
    assert "opens with the prompt's description" in (echo_problem(copied_ja, InterviewReply, ja, {}) or "")


def test_an_empty_item_of_a_list_is_dropped_not_refused() -> None:
    """SmolLM2's council opinion had `"concerns": [""]`: no concern. The opinion stands; an empty opinion
    (scalar text) is still refused."""
    raw = (
        '{"stance": "for", "opinion": "I think it would bring people together.", "concerns": ["", " "], '
        '"conditions": ["Enough helpers.", "} ,"]}'
    )
    reply = checked_reply(raw, MemberOpinion, PROMPT, GenerateOptions())
    assert reply.concerns == [] and reply.opinion.startswith("I think")
    assert reply.conditions == ["Enough helpers."]  # JSON debris is no condition either
    with pytest.raises(LLMReplyError):
        checked_reply('{"stance": "for", "opinion": " "}', MemberOpinion, PROMPT, GenerateOptions())
    dots = '{"stance": "for", "opinion": "I think it would bring people together.", "concerns": ["..."]}'
    with pytest.raises(LLMReplyError, match="placeholder"):  # a template's dots are not "no concern"
        checked_reply(dots, MemberOpinion, PROMPT, GenerateOptions())


def test_a_list_item_copying_a_field_description_is_dropped_not_refused() -> None:
    """SmolLM2 wrote a council concern "each thing that worries you" (the prompt's description of the field):
    it is no concern, and the member's own opinion stands instead of the whole reply being refused. English
    and Japanese; a concern of the member's own is kept."""
    council: list[Message] = [
        {"role": "user", "content": "- opinion: what you yourself think of this proposal, two to four sentences\n"
                                    "- concerns: each thing that worries you, as a short sentence\n"
                                    "- conditions: what must be true for you to agree, as short sentences"},
    ]  # fmt: skip
    raw = (
        '{"stance": "for", "opinion": "A monthly party would bring the town together.", '
        '"concerns": ["each thing that worries you, as a short sentence", "The cafe is small."], '
        '"conditions": ["what must be true for you to agree"]}'
    )
    reply = checked_reply(raw, MemberOpinion, council, GenerateOptions())
    assert reply.concerns == ["The cafe is small."] and reply.conditions == []
    assert reply.opinion == "A monthly party would bring the town together."
    ja: list[Message] = [{"role": "user", "content": "- opinion: この提案についての自分の考え\n"
                                                     "- concerns: あなたが心配している点。一つずつ短い文で"}]  # fmt: skip
    raw_ja = '{"stance": "for", "opinion": "毎月やるのは楽しそう。", "concerns": ["あなたが心配している点", "雨の日が心配。"]}'
    assert checked_reply(raw_ja, MemberOpinion, ja, GenerateOptions()).concerns == ["雨の日が心配。"]


def test_a_running_summary_may_come_back_unchanged_but_not_as_a_placeholder() -> None:
    """A conversation that taught nothing new leaves the person summary as it was: the old summary, copied
    from the prompt, is the answer (CI saw a job retry to failure on it); the other rules still hold."""
    known = "1日目にひかりとバリスタ、図書館について話した。"
    prompt: list[Message] = [{"role": "user", "content": f"Summary: {known}\nひかり: またね！"}]
    afterthought = afterthought_for("ja", 400)
    kept = afterthought.model_validate(
        {"reflection": "ひかりとまた図書館の話をした。", "importance": 3, "person_summary": known}
    )
    assert echo_problem(kept, afterthought, prompt, {}) is None
    assert echo_problem(PersonUpdate(summary=known), PersonUpdate, prompt, {}) is None
    assert echo_problem(PersonSummary(summary=known), PersonSummary, prompt, {}) is None
    copied = kept.model_copy(update={"reflection": known})  # the reflection is new text: still checked
    assert "reflection repeats a line" in (echo_problem(copied, afterthought, prompt, {}) or "")
    dots = kept.model_copy(update={"person_summary": "..."})
    assert "person_summary is a placeholder" in (echo_problem(dots, afterthought, prompt, {}) or "")
    named = PersonUpdate(summary="ひかり")
    assert "summary is only a name" in (
        echo_problem(named, PersonUpdate, prompt, {"other_name": "ひかり"}) or ""
    )


def test_names_come_from_the_facts_and_lines_are_normalised() -> None:
    facts = {"agent_name": "Emma", "other_name": "リアム", "speaker": {"id": "emma"}, "lines": ["Bob"]}
    assert fact_names(facts) == {"emma", "リアム"}
    lines = prompt_lines("Rules:\n- Ｓｐｅａｋ  English.\n[12] Liam: Morning, Emma!\n1. ok")
    assert {"speak english", "morning, emma"} <= lines and "ok" not in lines
    assert normalise("「こんにちは！」") == "こんにちは"
    person = PersonUpdate(traits_noticed=["明るい"], notes=[], summary="リアム")
    assert "summary is only a name" in (echo_problem(person, PersonUpdate, [], facts) or "")


def test_checked_reply_raises_with_the_reason() -> None:
    options = GenerateOptions(purpose="dialogue", facts=FACTS)
    with pytest.raises(LLMReplyError, match="echoes the prompt: dialogue is a placeholder"):
        checked_reply('{"dialogue": "<your line>", "emotion": "happy"}', TurnReply, PROMPT, options)
    reply = checked_reply('{"dialogue": "地図を見てたの。", "emotion": "happy"}', TurnReply, PROMPT, options)
    assert reply.dialogue == "地図を見てたの。"


async def test_the_repairing_wrapper_re_asks_once_with_the_echo_reason() -> None:
    scripted = ScriptedLLM()
    scripted.enqueue(
        {"dialogue": "<your line>", "emotion": "happy"}, {"dialogue": "地図の話です。", "emotion": "happy"}
    )
    reply = await RepairingLLM(scripted).generate_json(
        PROMPT, TurnReply, options=GenerateOptions(facts=FACTS)
    )
    assert reply.dialogue == "地図の話です。"
    first, second = scripted.calls()
    assert first.messages == PROMPT
    # The echo is not shown back (a small model shown a copy copies it again), and its quote is left out.
    assert second.messages[:-1] == PROMPT and "<your line>" not in second.messages[-1]["content"]
    assert "dialogue is a placeholder" in second.messages[-1]["content"]
    assert second.options.temperature == pytest.approx(0.7 + REASK_HEAT)  # sampled a little hotter


async def test_a_reply_that_breaks_the_schema_is_not_shown_back_either() -> None:
    scripted = ScriptedLLM()
    scripted.enqueue({"emotion": "happy"}, {"dialogue": "地図の話です。", "emotion": "happy"})
    await RepairingLLM(scripted).generate_json(PROMPT, TurnReply, options=GenerateOptions(facts=FACTS))
    first, second = scripted.calls()
    assert second.messages[:-1] == PROMPT and "happy" not in second.messages[-1]["content"]
    assert "dialogue" in second.messages[-1]["content"]
    assert second.options.banned_openings == []  # a broken reply's opening was not the fault


async def test_two_echoes_give_up_with_the_reason() -> None:
    scripted = ScriptedLLM()
    scripted.enqueue({"dialogue": "...", "emotion": "happy"}, {"dialogue": "ひかり", "emotion": "happy"})
    with pytest.raises(LLMReplyError, match="dialogue is only a name"):
        await RepairingLLM(scripted).generate_json(PROMPT, TurnReply, options=GenerateOptions(facts=FACTS))
    assert len(scripted.calls()) == 2
