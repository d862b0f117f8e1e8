"""The scripted interview writer answers by retelling the memory that holds what is asked, in words taken from
it, and claims nothing when no memory holds it (the benchmark counts who knows of the party this way)."""

from __future__ import annotations

import random

import pytest

from backend.interview.prompts import InterviewContext, Known, Remembered, build_facts, build_messages
from backend.interview.schemas import InterviewReply
from backend.llm.base import GenerateOptions, json_schema_for, parse_reply
from backend.llm.echo import echo_problem
from backend.scripted import ScriptedLLM
from backend.scripted.engine import WriterContext
from backend.scripted.writers.interview import cues_of, holds, write_interview
from backend.world.models import Agent

HIKARI = Agent(id="hikari", name="ひかり", language="ja", speaking_style="元気でくだけた話し方。")
AOI = Agent(id="aoi", name="葵", language="ja", speaking_style="丁寧でやわらかい口調。")
EMMA = Agent(id="emma", name="Emma", language="en", speaking_style="warm")
SMALL_TALK = ["ひかりと図書館で本の話をした", "中央カフェでコーヒーを淹れた"]


def context(
    agent: Agent, question: str, memories: list[str], people: list[Known] | None = None
) -> InterviewContext:
    remembered = [Remembered(i + 1, "observation", text) for i, text in enumerate(memories)]
    lang = "en" if agent.language == "en" else "ja"
    return InterviewContext(agent, lang, question, 2, 20.0, remembered, people or [])


def answer(ctx: InterviewContext) -> str:
    facts = build_facts(ctx)
    options = GenerateOptions(purpose="interview", language=ctx.language, facts=facts)
    writer = WriterContext(facts, random.Random(0), build_messages(ctx), options, None)
    return str(write_interview(writer)["answer"])


@pytest.mark.parametrize(
    ("question", "memory", "expected"),
    [
        ("パーティーのこと、何か知ってる？", "葵が「明日の19時に公園でパーティーをするんだけど、来ない？」と言った",
         "うん、葵が明日の19時に公園でパーティーをするって言ってたよ。"),
        ("花火って知ってる？", "蓮が「そうだ、明日の19時に公園で花火をするんだけど、来ない？」と言った",
         "うん、蓮が明日の19時に公園で花火をするって言ってたよ。"),
        ("花火の話、聞いた？", "蓮に「葵が花火をするんだって」と話した", "うん、蓮に葵が花火をするって話したよ。"),
        ("パーティーのこと知ってる？", "明日の19時に公園でパーティーを開く。みんなに来てほしい。",
         "うん、知ってるよ。明日の19時に公園でパーティーを開く。"),
        # a heard line followed by the news's facts (conversation/aftermath._with_facts); an opener goes
        ("パーティーのこと知ってる？",
         "美咲が「実はね、明日の18時に喫茶ひだまりでパーティーを開くんだけど、来ない？」と言った。"
         "美咲が喫茶ひだまりでパーティーを開く。明日（2日目）18:00。美咲から聞いた。",
         "うん、美咲が明日の18時に喫茶ひだまりでパーティーを開くって言ってたよ。"),
    ],
)  # fmt: skip
def test_a_japanese_answer_retells_the_memory(question: str, memory: str, expected: str) -> None:
    assert answer(context(HIKARI, question, [*SMALL_TALK, memory])) == expected


def test_a_polite_speaker_retells_it_politely() -> None:
    memory = "ひかりが「明日の19時に公園でパーティーをするんだけど、来ない？」と言った"
    assert answer(context(AOI, "パーティーのこと、何か知ってる？", [memory])) == (
        "はい、ひかりが明日の19時に公園でパーティーをするって言っていました。"
    )


@pytest.mark.parametrize(
    ("question", "memory", "expected"),
    [
        ("Do you know anything about a party?",
         'Liam told me: "Oh, I\'m having a party at the park at 7 tomorrow, want to come?"',
         'Yes, Liam told me: "I\'m having a party at the park at 7 tomorrow."'),
        ("Have you heard about any parties?", 'I told Noah: "Liam is throwing a party at the park!"',
         'Yes, I told Noah: "Liam is throwing a party at the park."'),
        ("What about the festival?", "The town festival is on day 3 at the square. I want to sell flowers there.",
         "Yes, I know. The town festival is on day 3 at the square."),
        ("Do you know anything about a party?",
         'Mia told me: "By the way, I\'m having a party at the Corner Cafe at 7pm tomorrow!" Mia is hosting: '
         "a party, at Corner Cafe, tomorrow (day 2) 19:00. Everyone is invited. You heard it from Mia.",
         'Yes, Mia told me: "I\'m having a party at the Corner Cafe at 7pm tomorrow."'),
    ],
)  # fmt: skip
def test_an_english_answer_retells_the_memory(question: str, memory: str, expected: str) -> None:
    assert answer(context(EMMA, question, ["I had lunch at the cafe.", memory])) == expected


@pytest.mark.parametrize(
    ("agent", "question", "memories", "words"),
    [
        (HIKARI, "パーティーのこと、何か知ってる？", SMALL_TALK, ["パーティー"]),
        (HIKARI, "パーティーのこと、何か知ってる？", [], ["パーティー"]),
        # A name the question shares with a memory is not the news it asks about.
        (HIKARI, "葵のパーティーについて知ってる？", ["葵と図書館で話した"], ["パーティー", "図書館"]),
        (EMMA, "Emma, have you heard about the party?", ["I talked with Emma about flowers."], ["party", "flower"]),
        (EMMA, "Do you know anything about the party?", [], ["party"]),
    ],
)  # fmt: skip
def test_no_memory_holding_it_means_no_claim(
    agent: Agent, question: str, memories: list[str], words: list[str]
) -> None:
    said = answer(context(agent, question, memories))
    assert not any(word.lower() in said.lower() for word in words), said
    assert not said.startswith(("うん", "はい", "Yes")), said


def test_what_the_agent_knows_of_a_named_person_answers_a_question_about_them() -> None:
    known = Known("aoi", "葵", "葵について(これまで2回話した。最後は1日目の10:00):\n葵は読書好きで丁寧な人。")
    said = answer(context(HIKARI, "葵ってどんな人？", SMALL_TALK, [known]))
    assert "読書好き" in said and said.startswith("うん")


def test_a_question_without_content_words_is_answered_from_the_best_memory() -> None:
    assert "図書館で本の話をした" in answer(context(HIKARI, "最近どう？", SMALL_TALK))
    assert "lunch at the cafe" in answer(
        context(EMMA, "What did you do today?", ["I had lunch at the cafe."])
    )


def test_cues_and_holding_them() -> None:
    assert cues_of("パーティーのこと、何か知ってる？", []).words == ("パーティー",)
    assert cues_of("Emma, do you know anything about the parties?", [], ("Emma", "emma")).words == (
        "parties",
    )
    assert cues_of("葵のこと知ってる？", ["葵", "蓮"]).names == ("葵",)
    assert holds("Liam is throwing a party.", "parties") and not holds("I like parks.", "party")
    assert holds("明日パーティーをする", "パーティ") and not holds("スーパーで買い物", "パーティー")


@pytest.mark.parametrize("seed", range(4))
async def test_the_scripted_answer_validates_and_passes_the_echo_check(seed: int) -> None:
    for ctx in (
        context(
            HIKARI, "パーティーのこと、何か知ってる？", [*SMALL_TALK, "葵が「パーティーをするよ」と言った"]
        ),
        context(HIKARI, "パーティーのこと、何か知ってる？", SMALL_TALK),
        context(EMMA, "Anything new?", ["I had lunch at the cafe."]),
    ):
        messages = build_messages(ctx)
        options = GenerateOptions(purpose="interview", language=ctx.language, facts=build_facts(ctx))
        completion = await ScriptedLLM(seed=seed).complete(
            messages, options=options, schema=json_schema_for(InterviewReply)
        )
        reply = parse_reply(completion.text, InterviewReply)
        assert echo_problem(reply, InterviewReply, messages, options.facts) is None, reply.answer


def test_of_two_memories_holding_the_news_the_one_that_says_more_is_retold() -> None:
    own_reply = "葵に「パーティー？いいね！」と話した"
    invitation = "葵が「明日の19時に公園でパーティーをするんだけど、来ない？」と言った"
    said = answer(context(HIKARI, "パーティーのこと、何か知ってる？", [own_reply, invitation]))
    assert said == "うん、葵が明日の19時に公園でパーティーをするって言ってたよ。"
