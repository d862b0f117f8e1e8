"""Field labels in free text, Japanese and English: cut off when a proper line follows, refused when nothing
does or when the label comes after a sentence; lines that merely talk about answers are kept."""

from __future__ import annotations

import pytest

from backend.conversation.schemas import TurnReply
from backend.errors import LLMReplyError
from backend.interview.schemas import InterviewReply
from backend.llm.base import GenerateOptions, Message
from backend.llm.retry import checked_reply

PROMPT: list[Message] = [{"role": "user", "content": "Mia: Are you coming tonight?"}]
OPTIONS = GenerateOptions(facts={"speaker": {"id": "sam", "name": "Sam"}})


def turn(dialogue: str) -> TurnReply:
    text = TurnReply(dialogue=dialogue, emotion="happy").model_dump_json()
    return checked_reply(text, TurnReply, PROMPT, OPTIONS)


def answer(said: str) -> InterviewReply:
    text = InterviewReply(answer=said).model_dump_json()
    return checked_reply(text, InterviewReply, PROMPT, OPTIONS)


LABELLED = [
    (
        "Sam's spoken reply to the interviewer's question: Mia is hosting a party at 7.",
        "Mia is hosting a party at 7.",
    ),
    ("Sam's line: Sure, I'll be there!", "Sure, I'll be there!"),
    ("dialogue: Sure, I'll be there!", "Sure, I'll be there!"),
    ("Answer: Mia told me about it yesterday.", "Mia told me about it yesterday."),
    ("**Reply:** See you at seven!", "See you at seven!"),
    ("(Sam's reply) Sounds great!", "Sounds great!"),
    ("The character’s response - Not tonight, sorry.", "Not tonight, sorry."),
    ("（葵のセリフ）こんにちは、ひかり。", "こんにちは、ひかり。"),
    ("葵の返事: うん、行くよ！", "うん、行くよ！"),
    ("葵の返事：「うん、行くよ！」", "うん、行くよ！"),
    ("セリフ：今日はいい天気だね。", "今日はいい天気だね。"),
    ("回答：ミアが7時にパーティーをするって。", "ミアが7時にパーティーをするって。"),
    ("【葵の台詞】また明日ね。", "また明日ね。"),
]


@pytest.mark.parametrize(("said", "line"), LABELLED)
def test_a_label_before_a_proper_line_is_cut_off(said: str, line: str) -> None:
    assert turn(said).dialogue == line
    assert answer(said).answer == line


ONLY_LABELS = [
    "Sam's spoken reply to the interviewer's question:",
    "Sam's spoken reply to the interviewer's question",
    "Sam's line:",
    "dialogue:",
    "answer:",
    "Response from Sam:",
    "（葵のセリフ）",
    "葵の返事:",
    "葵の返事",
    "インタビュアーの質問への葵の答え：",
    "Ben says:",  # SmolLM2's whole interview answer: who speaks, nothing said
    "Sam replied.",
]


@pytest.mark.parametrize("said", ONLY_LABELS)
def test_a_label_with_nothing_after_it_is_refused(said: str) -> None:
    # (a bare field name is refused as the field's name, before it is looked at as a label)
    with pytest.raises(LLMReplyError, match="dialogue (is only a label|repeats the field's name)"):
        turn(said)
    with pytest.raises(LLMReplyError, match="answer (is only a label|repeats the field's name)"):
        answer(said)


@pytest.mark.parametrize(
    "said",
    [
        "Sure. Sam's reply: I'll come at seven.",
        "Okay! The character's answer: yes.",
        "はい。葵の返事：行きます。",
        "うーん…（葵のセリフ）明日ね。",
    ],
)
def test_a_label_after_a_sentence_is_refused(said: str) -> None:
    with pytest.raises(LLMReplyError, match="labels its answer like a form"):
        turn(said)
    with pytest.raises(LLMReplyError, match="labels its answer like a form"):
        answer(said)


@pytest.mark.parametrize(
    "said",
    [
        "My answer is yes, I'll come.",
        "Here's my answer: no.",
        "Mia's party is at 7pm: want to come?",
        "Hey, Ben's reply was funny.",
        "Line 3 of the song goes like this: la la la.",
        "Thanks for the reply!",
        "答えはまだ決めてないの。",
        "ひかりの返事が楽しみだな。",
        "明日の夜7時にパーティーするの、来ない？",
        "返事はあとでいいよ：ゆっくり考えて。",
        "Mia says the party is at 7pm.",
        "Tom said: come at seven!",
        "I said yes!",
    ],
)
def test_lines_about_answers_are_kept_as_said(said: str) -> None:
    assert turn(said).dialogue == said
    assert answer(said).answer == said
