"""The re-ask after an echo: one short sentence without the refused text, hotter, with the refused opening
banned; a reply that repeats the instruction (or a paraphrase of it) is refused, so it never becomes a line."""

from __future__ import annotations

import re

import pytest

from backend.conversation.schemas import TurnReply
from backend.errors import LLMReplyError
from backend.interview.schemas import InterviewReply
from backend.llm.base import GenerateOptions, Message
from backend.llm.reask import REASK, REASK_HEAT, leaks_instruction, reason_of
from backend.llm.retry import RepairingLLM
from backend.scripted import ScriptedLLM

PARTNER_EN = "Tomorrow at 7pm I am throwing a party at the Corner Cafe, want to come?"
PARTNER_JA = "明日の夜7時に角のカフェでパーティーをするんだけど、来ない？"
PROMPT_EN: list[Message] = [
    {"role": "system", "content": "You are Ben.\n- dialogue: what Ben says now, in English"},
    {"role": "user", "content": f"<<<TRANSCRIPT\nMia: {PARTNER_EN}\nTRANSCRIPT>>>"},
]
PROMPT_JA: list[Message] = [
    {"role": "system", "content": "You are 葵.\n- dialogue: what 葵 says now, in Japanese"},
    {"role": "user", "content": f"<<<TRANSCRIPT\nひかり: {PARTNER_JA}\nTRANSCRIPT>>>"},
]
GOOD_EN = {"dialogue": "A party? I'd love to come, Mia.", "emotion": "happy"}
GOOD_JA = {"dialogue": "パーティー？行きたい、誘ってくれてありがとう。", "emotion": "happy"}


def options(partner: str, temperature: float | None = None) -> GenerateOptions:
    facts = {"speaker": {"id": "ben", "name": "Ben"}, "partner_last_line": partner}
    return GenerateOptions(purpose="dialogue", temperature=temperature, facts=facts)


def sentences(text: str) -> int:
    return len([s for s in re.split(r"[.!?。！？]+(?:\s|$)", text) if s.strip()])


@pytest.mark.parametrize(
    ("prompt", "partner", "good"), [(PROMPT_EN, PARTNER_EN, GOOD_EN), (PROMPT_JA, PARTNER_JA, GOOD_JA)]
)
async def test_a_copy_of_the_partner_is_re_asked_in_one_sentence_without_the_copy(
    prompt: list[Message], partner: str, good: dict[str, str]
) -> None:
    scripted = ScriptedLLM()
    scripted.enqueue({"dialogue": partner, "emotion": "happy"}, good)
    reply = await RepairingLLM(scripted).generate_json(
        prompt, TurnReply, options=options(partner, temperature=0.5)
    )
    assert reply.dialogue == good["dialogue"]
    first, second = scripted.calls()
    reask = second.messages[-1]["content"]
    assert second.messages[:-1] == prompt  # the refused reply is not shown back
    assert partner not in reask and partner[:12] not in reask  # nor quoted
    assert sentences(reask) == 1 and len(reask) < 200
    assert "its dialogue repeats a line of the prompt" in reask
    # Hotter, and the copied opening is banned for providers that can (llama.cpp's logit bias).
    assert second.options.temperature == pytest.approx(0.5 + REASK_HEAT)
    assert second.options.banned_openings == [partner[:40].strip()]
    assert first.options.banned_openings == []


async def test_a_copy_under_the_partners_name_bans_both_openings() -> None:
    scripted = ScriptedLLM()
    scripted.enqueue({"dialogue": f"Mia: {PARTNER_EN}", "emotion": "happy"}, GOOD_EN)
    await RepairingLLM(scripted).generate_json(PROMPT_EN, TurnReply, options=options(PARTNER_EN))
    second = scripted.calls()[1]
    assert second.options.banned_openings == [f"Mia: {PARTNER_EN}"[:40].strip(), PARTNER_EN[:40].strip()]
    assert "Mia" not in second.messages[-1]["content"]


async def test_a_bare_label_is_re_asked_and_its_opening_banned() -> None:
    scripted = ScriptedLLM()
    scripted.enqueue({"dialogue": "Ben's line:", "emotion": "happy"}, GOOD_EN)
    await RepairingLLM(scripted).generate_json(PROMPT_EN, TurnReply, options=options(PARTNER_EN))
    second = scripted.calls()[1]
    assert second.options.banned_openings == ["Ben's line:"]  # a label is not a copy of the partner
    assert "Ben's line" not in second.messages[-1]["content"]
    assert "its dialogue is only a label" in second.messages[-1]["content"]


@pytest.mark.parametrize(
    "copied",
    [
        None,  # the re-ask word for word: filled in below
        "Your previous reply could not be used, but I went to the party with Mia.",
        "My last answer wasn't usable, sorry. The party is at seven.",
        "Sorry, let me write it anew: the party is at seven.",
        "前の返事は使えなかったみたい。パーティーは7時からだよ。",
        "さっきの回答は無効だったので、もう一度。明日の夜だよ。",
    ],
)
async def test_a_model_that_copies_the_instruction_on_the_re_ask_falls_back(copied: str | None) -> None:
    scripted = ScriptedLLM()
    exact = REASK.format(
        reason="its dialogue repeats a line of the prompt word for word: write it anew, in your own words"
    )
    scripted.enqueue(
        {"dialogue": PARTNER_EN, "emotion": "happy"}, {"dialogue": copied or exact, "emotion": "sad"}
    )
    with pytest.raises(LLMReplyError, match="dialogue repeats the instructions"):
        await RepairingLLM(scripted).generate_json(PROMPT_EN, TurnReply, options=options(PARTNER_EN))
    assert scripted.calls()[1].messages[-1]["content"] == exact  # what the copy copied


async def test_an_interview_answer_that_repeats_the_instruction_is_refused() -> None:
    scripted = ScriptedLLM()
    leaked = {"answer": "Your previous reply could not be used, Mia is hosting a party at 7."}
    scripted.enqueue({"answer": "<your answer>"}, leaked)
    prompt: list[Message] = [{"role": "user", "content": "What do you know about the party?"}]
    with pytest.raises(LLMReplyError, match="answer repeats the instructions"):
        await RepairingLLM(scripted).generate_json(
            prompt, InterviewReply, options=GenerateOptions(purpose="interview")
        )


@pytest.mark.parametrize(
    "line",
    [
        "My last answer was a joke, sorry!",
        "Thanks for your reply, Mia.",
        "I used the previous recipe again.",
        "Tell me in your own words what happened.",
        "前の返事、嬉しかったよ。",
        "さっきの答え、使えるかも！",
        "最後の答えは秘密だよ。",
        "自分の言葉で話してみて。",
        "The schema of the old town hall is on the wall.",
    ],
)
def test_lines_that_only_share_words_with_the_instruction_are_kept(line: str) -> None:
    assert not leaks_instruction(line)


def test_the_reason_loses_its_quotes_but_not_its_apostrophes() -> None:
    error = "the reply echoes the prompt: dialogue repeats a line of the prompt word for word ('Hi Mia, how are you?'): write it anew, in your own words"
    assert reason_of(error) == (
        "its dialogue repeats a line of the prompt word for word: write it anew, in your own words"
    )
    assert reason_of("the plan can't be used: item 'go to the cafe at noon' is late.") == (
        "the plan can't be used: item is late"
    )
