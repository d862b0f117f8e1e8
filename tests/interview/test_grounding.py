"""An interview answer about news the agent remembers is asked for again until it tells who hosts it, what,
when and where as the memory holds them (interview/grounding.py): the ask names what to add with the
memory's values said from the interview's day, never the refused answer; the answer that lacks the least is
kept; questions about something else, and news in a visitor's words, are answered once. Japanese and
English, on the scripted engine and a real database."""

from __future__ import annotations

from fastapi.testclient import TestClient

from backend.config import Settings
from backend.intention.appointment import Place
from backend.interview import grounding
from backend.interview.prompts import InterviewContext, Remembered
from backend.scripted import ScriptedLLM
from tests.conftest import make_client
from tests.interview.helpers import (
    AOI,
    EMMA,
    HIKARI,
    LIAM,
    PARTY_EN,
    PARTY_JA,
    SMALL_TALK_EN,
    add_agents,
    ask,
    remember,
)

JA_QUESTION = "パーティーのこと、何か聞いてる？誰が、いつ、どこで開くの？"
EN_QUESTION = "Have you heard about a party? Who is hosting it, and when and where is it?"
JA_WHOLE = "うん、明日の19時に葵が公園でパーティーを開くって聞いたよ。"
EN_WHOLE = "Yes, Liam is throwing a party at the park tomorrow at 7pm."


def test_an_answer_without_host_and_time_is_asked_again_and_the_whole_one_kept(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client, AOI, HIKARI)
    remember(client, "hikari", PARTY_JA)
    scripted.enqueue(
        {"answer": "公園でパーティーがあるらしいよ。"}, {"answer": JA_WHOLE}, purpose="interview"
    )
    reply = ask(client, "hikari", JA_QUESTION, day=1, time_of_day=12.0)
    assert reply["answer"] == JA_WHOLE and not reply["fallback"]
    assert reply["asked_again"] == ["who", "when"] and reply["tries"] == 2
    first, second = scripted.calls("interview")
    assert second.messages[:-1] == first.messages  # the prompt plus one sentence
    ask_line = second.messages[-1]["content"]
    assert "誰が開くか（葵）" in ask_line and "いつ（明日の19時）" in ask_line
    assert "公園でパーティーがあるらしい" not in ask_line  # the refused answer is never shown back


def test_the_ask_says_the_time_from_the_interview_day(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client, LIAM, EMMA)
    remember(client, "emma", PARTY_EN, day=1)
    scripted.enqueue({"answer": "There is a party at the park, I think."}, {"answer": "Liam's party is today at 7pm at the park."},
                     purpose="interview")  # fmt: skip
    reply = ask(client, "emma", EN_QUESTION, day=2, time_of_day=10.0)
    assert reply["asked_again"] == ["who", "when"]
    ask_line = scripted.calls("interview")[1].messages[-1]["content"]
    assert "who is hosting it (Liam)" in ask_line and "when (today at 7pm)" in ask_line
    assert "tomorrow" not in ask_line
    assert reply["answer"] == "Liam's party is today at 7pm at the park."


def test_the_answer_that_lacks_the_least_is_kept_within_telling_tries(
    settings: Settings, scripted: ScriptedLLM
) -> None:
    with make_client(settings, scripted, telling_tries=3) as client:
        add_agents(client, LIAM, EMMA)
        remember(client, "emma", PARTY_EN)
        scripted.enqueue(
            {"answer": "I heard something about a party."},
            {"answer": "Liam is having a party at the park."},
            {"answer": "I don't know."},
            {"answer": EN_WHOLE},
            purpose="interview",
        )
        reply = ask(client, "emma", EN_QUESTION, day=1, time_of_day=12.0)
    assert reply["tries"] == 3 and len(scripted.calls("interview")) == 3
    assert reply["answer"] == "Liam is having a party at the park."  # lacks only the time
    assert reply["asked_again"] == ["who", "when"]  # (this world has no places: where is not checked)


def test_a_question_about_something_else_is_answered_once(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client, LIAM, EMMA)
    remember(client, "emma", PARTY_EN, *SMALL_TALK_EN)
    scripted.enqueue({"answer": "Lunch at the cafe, a sandwich."}, purpose="interview")
    reply = ask(client, "emma", "What did you have for lunch?", day=1, time_of_day=14.0)
    assert reply["answer"] == "Lunch at the cafe, a sandwich." and reply["asked_again"] is None
    assert reply["tries"] == 1 and len(scripted.calls("interview")) == 1


def test_where_is_asked_for_by_any_of_the_places_names() -> None:
    places, people = [Place("corner_cafe", "Corner Cafe")], {"mia": "Mia", "ben": "Ben"}
    memory = 'Ben told me: "Mia is throwing a party at the Corner Cafe tomorrow at 7pm." '
    ctx = InterviewContext(agent=_agent("lily"), language="en", question="Who is hosting the party at corner_cafe?",
                           day=2, time_of_day=9.0)  # fmt: skip
    ctx.memories = [Remembered(3, "observation", memory, day=1)]
    asked = grounding.news_asked(ctx, places, people)
    assert asked is not None and asked.slots.where == "corner_cafe" and asked.host_id == "mia"
    assert grounding.lacks("Mia's party is tonight at 7pm.", asked, ctx, places, people) == ("where",)
    assert grounding.lacks("Mia's party, today at 7pm at the Corner Cafe.", asked, ctx, places, people) == ()
    line = grounding.ask(asked, ("who", "where"), ctx)["content"]
    assert (
        line
        == "Answer again from what you remember, so that it also tells who is hosting it (Mia) and where (Corner Cafe)."
    )


def test_news_in_a_visitors_words_is_not_insisted_on() -> None:
    ctx = InterviewContext(agent=_agent("emma"), language="en", question=EN_QUESTION, day=1, time_of_day=12.0)
    ctx.memories = [Remembered(1, "observation", PARTY_EN, visitor=True, day=1)]
    places, people = [Place("park", "Park")], {"liam": "Liam", "emma": "Emma"}
    assert grounding.news_asked(ctx, places, people) is None
    ctx.memories = [Remembered(1, "observation", PARTY_EN, visitor=False, day=1)]
    asked = grounding.news_asked(ctx, places, people)
    assert asked is not None and asked.host_id == "liam" and asked.slots.hour == 19.0


def test_the_hosts_own_answer_is_not_asked_who_hosts_it() -> None:
    own = "I am throwing a party at the park tomorrow at 7pm. I want everyone in town to come."
    ctx = InterviewContext(agent=_agent("liam"), language="en", question=EN_QUESTION, day=1, time_of_day=12.0)
    ctx.memories = [Remembered(1, "plan", own, day=1)]
    asked = grounding.news_asked(ctx, [Place("park", "Park")], {"liam": "Liam"})
    assert asked is not None and asked.host_id is None
    assert grounding.lacks("My party is at the park tomorrow at 7pm.", asked, ctx, [Place("park", "Park")],
                           {"liam": "Liam"}) == ()  # fmt: skip


def test_an_answer_copying_the_ask_never_reaches_the_interviewer(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client, LIAM, EMMA)
    remember(client, "emma", PARTY_EN)
    copied = "Answer again from what you remember, so that it also tells who is hosting it (Liam) and when (tomorrow at 7pm)."
    scripted.enqueue({"answer": "A party at the park."}, {"answer": copied}, {"answer": copied},
                     purpose="interview")  # fmt: skip
    reply = ask(client, "emma", EN_QUESTION, day=1, time_of_day=12.0)
    # The copy is refused as a line of the prompt, re-asked with the reason and refused again: that try
    # fails, and the first answer stands. The interviewer never hears the instruction.
    assert reply["answer"] == "A party at the park." and reply["tries"] == 2 and not reply["fallback"]
    reasked = scripted.calls("interview")[2].messages[-1]["content"]
    assert "repeats a line of the prompt" in reasked


def _agent(agent_id: str):  # type: ignore[no-untyped-def]
    from backend.world.models import Agent

    return Agent(id=agent_id, world_id="w", name=agent_id.title(), language="en")
