"""Loops cut out of a small model's free text (llm/loops.py)."""

from __future__ import annotations

import json

import pytest

from backend.conversation.schemas import turn_reply_for
from backend.council.schemas import MemberOpinion
from backend.errors import LLMReplyError
from backend.interview.schemas import InterviewReply
from backend.llm.base import GenerateOptions
from backend.llm.loops import unlooped
from backend.llm.retry import checked_reply
from backend.memory.prompts import InsightList


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        # What SmolLM2-135M wrote at temperature 0.2 in the party scenario.
        ("I'm going to spend time at Oak Bakery. I'm going to spend time at Oak Bakery. I'm going to spend",
         "I'm going to spend time at Oak Bakery."),
        ("08:28, 08:28, 08:28, 08:28, 08:28,", "08:28"),
        ("I'm so glad you're here, I'm so glad you're here, I'm so", "I'm so glad you're here"),
        ("明日ね。明日ね。明日ね。", "明日ね。"),
        ("パーティーに来てね、パーティーに来てね、パーティーに", "パーティーに来てね"),
        # A short piece said on and on (SmolLM2's interview answer): cut after its third time.
        ("no, no, no, no, no, no, no, no, no, no, no, no,", "no, no, no"),
        ("うん、うん、うん、うん、うん、うん", "うん、うん、うん"),
        # Speech, not loops: short repeats and lines that say nothing twice stay whole.
        ("No, no, no! I said seven.", "No, no, no! I said seven."),
        ("Yes, yes, I know.", "Yes, yes, I know."),
        ("うん、うん、そうだね。", "うん、うん、そうだね。"),
        ("Hi Ben! Mia is hosting a party at the Corner Cafe tomorrow at 7pm. Want to come?",
         "Hi Ben! Mia is hosting a party at the Corner Cafe tomorrow at 7pm. Want to come?"),
        ("ねえねえ、聞いて。明日の19時に喫茶ひだまりでパーティーがあるんだ。", "ねえねえ、聞いて。明日の19時に喫茶ひだまりでパーティーがあるんだ。"),
    ],
)  # fmt: skip
def test_a_loop_is_cut_where_it_starts(text: str, kept: str) -> None:
    assert unlooped(text) == kept


def _reply(dialogue: str) -> str:
    return json.dumps({"dialogue": dialogue, "emotion": "happy", "is_conversation_end": False})


def test_a_looping_line_is_repaired() -> None:
    schema = turn_reply_for(None, actions=False)
    messages = [{"role": "user", "content": "Now: day 1, 08:28, at Oak Bakery. Greet Ben."}]
    options = GenerateOptions(purpose="dialogue")
    looped = _reply("Good morning, Ben. Good morning, Ben. Good morning, Ben. Good")
    assert checked_reply(looped, schema, messages, options).dialogue == "Good morning, Ben."
    # A clock said on and on is cut to one clock, which is no line: refused (re-asked by the stack).
    with pytest.raises(LLMReplyError, match="has no words"):
        checked_reply(_reply("08:28, 08:28, 08:28, 08:28"), schema, messages, options)
    for debris in ("}{", "2014-01-07 07:33:22"):  # what SmolLM2 said as lines in the party scenario
        with pytest.raises(LLMReplyError, match="has no words"):
            checked_reply(_reply(debris), schema, messages, options)


def test_only_what_is_said_aloud_must_hold_words() -> None:
    """A background reflection of numbers is not refused (its job would retry to failure, as SmolLM2's did
    in CI); a council opinion or an interview answer of numbers is."""
    messages = [{"role": "user", "content": "Reflect on these memories: 1. went to the cafe"}]
    options = GenerateOptions(purpose="reflection")
    insight = '{"insights": [{"content": "1, 2, 3", "evidence_ids": [1], "importance": 4}]}'
    assert checked_reply(insight, InsightList, messages, options).insights[0].content == "1, 2, 3"
    with pytest.raises(LLMReplyError, match="has no words"):
        checked_reply('{"answer": "19:00"}', InterviewReply, messages, options)
    with pytest.raises(LLMReplyError, match="has no words"):
        checked_reply('{"stance": "for", "opinion": "1, 2, 3"}', MemberOpinion, messages, options)
    assert checked_reply('{"answer": "19時から！"}', InterviewReply, messages, options).answer == "19時から！"
