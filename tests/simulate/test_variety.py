"""The scripted-town targets measured on sentences (variety.py): repetition in a conversation and over a
day, a speaker naming itself in the third person, small talk passed on as news."""

from __future__ import annotations

from typing import Any

from backend.intention.appointment import Place
from backend.simulate import scenario
from backend.simulate.variety import (
    measure,
    names_itself,
    sentence_figures,
    sentences,
    small_talk_passed_on,
)

PLACES = [Place("cafe", "Corner Cafe"), Place("park", "公園")]
PEOPLE = {"mia": "Mia", "grace": "Grace", "oliver": "Oliver", "ren": "蓮", "aoi": "葵"}


def test_lines_are_split_into_sentences_in_japanese_and_english() -> None:
    assert sentences("おはよう！今日はいい天気だね。散歩した？うん") == [
        "おはよう！",
        "今日はいい天気だね。",
        "散歩した？",
        "うん",
    ]
    assert sentences("「楽しかった。」って言ってた。") == ["「楽しかった。」って言ってた。"]
    assert sentences("Good morning, Oliver. It's 7.30 already! Coffee?") == [
        "Good morning, Oliver.", "It's 7.30 already!", "Coffee?"
    ]  # fmt: skip


def test_a_sentence_said_three_times_in_one_conversation_is_counted() -> None:
    talk = ["Nice weather. How are you?", "Fine. Nice weather.", "Nice weather. See you."]
    other = ["いい天気だね。", "うん、いい天気だね。", "いい天気だね。"]  # twice: allowed
    figures = sentence_figures([(1, talk), (1, other)])
    assert figures["over_twice_in_a_conversation"] == 1
    assert figures["over_twice_examples"] == ["Nice weather."]
    # Day 1: 9 sentences, 6 distinct: 3 repeat one said earlier that day.
    assert figures["days"][1]["sentences"] == 9 and figures["days"][1]["repeated_share"] == 3 / 9


def test_repeats_are_counted_per_day() -> None:
    figures = sentence_figures([(1, ["Hello there."]), (2, ["Hello there."])])
    assert figures["days"][1]["repeated_share"] == 0.0 and figures["days"][2]["repeated_share"] == 0.0


def test_a_speaker_naming_itself_in_the_third_person_is_counted() -> None:
    assert names_itself("蓮は蓮の家に着いたって", "蓮")
    assert names_itself("葵が公園に行くよ", "葵")
    assert names_itself("Mia arrived at the cafe.", "Mia")
    assert names_itself("Guess what, Mia is tired.", "Mia")


def test_a_possessive_a_self_introduction_or_another_name_is_not_self_reference() -> None:
    assert not names_itself("Come to Mia's party tonight!", "Mia")
    assert not names_itself("Hi, I'm Mia. Nice to meet you.", "Mia")
    assert not names_itself("Amia said hello.", "Mia")
    assert not names_itself("蓮の家に来てね。", "蓮")  # a possessive の is not the speaker as subject
    assert not names_itself("葵は元気？", "蓮")  # naming the partner


def test_small_talk_passed_on_is_counted_and_news_passed_on_is_not() -> None:
    rows = [
        {"teller_id": "grace", "origin_id": "oliver", "text": "Good morning, Oliver.", "day": 1},
        {"teller_id": "ren", "origin_id": "aoi", "text": "今日はいい天気だね。", "day": 1},
        {"teller_id": "grace", "origin_id": "mia", "day": 1,
         "text": "Tomorrow at 7pm I am throwing a party at the Corner Cafe. I want everyone to come."},
        {"teller_id": "ren", "origin_id": "aoi", "text": "明日の19時に公園でパーティーを開くから来てね", "day": 2},
        # Told by its origin: its own words, not passed on.
        {"teller_id": "oliver", "origin_id": "oliver", "text": "Good morning, Grace.", "day": 1},
    ]  # fmt: skip
    found = small_talk_passed_on(rows, PLACES, PEOPLE)
    assert [row["text"] for row in found] == ["Good morning, Oliver.", "今日はいい天気だね。"]


class Server:
    """The routes variety.measure reads: conversations with their turns, and each agent's tellings."""

    def _send(self, method: str, path: str, body: Any = None, *, params: Any = None) -> Any:
        if path == "/v1/conversations":
            return {"conversations": [{"session_id": "a"}]}
        if path == "/v1/agents/grace/told":
            return {"told": [{"teller_id": "grace", "listener_id": "ren", "origin_id": "oliver",
                              "text": "Good morning, Oliver.", "day": 1}]}  # fmt: skip
        return {"told": []}

    def conversation(self, session_id: str) -> dict[str, Any]:
        lines = [("ren", "蓮は蓮の家に着いたって。いい天気だね。"), ("grace", "Grace is here! Hello."),
                 ("ren", "いい天気だね。"), ("grace", "Hello."), ("ren", "いい天気だね。")]  # fmt: skip
        return {"turns": [{"speaker_id": who, "dialogue": line, "day": 1} for who, line in lines]}


def test_the_report_prints_the_measures_with_their_targets() -> None:
    agents = [
        {"id": "ren", "name": "蓮"},
        {"id": "grace", "name": "Grace"},
        {"id": "oliver", "name": "Oliver"},
    ]
    figures = measure(Server(), agents, PLACES)
    assert figures["sentences"]["over_twice_in_a_conversation"] == 1  # いい天気だね。 three times
    assert figures["self_reference"]["lines"] == 2
    assert figures["small_talk_passed_on"]["count"] == 1 and figures["small_talk_passed_on"]["passed_on"] == 1
    report = {
        "agents": 3, "host": "ren", "place": "公園", "days": 1, "first_hours": 18,
        "knew_day1": {"knew_by_memory": [], "knew_by_interview": None},
        "density": {"start": 0.0, "end": 0.5}, "turns": 5, "fallbacks": 0,
        "model": {"calls_per_agent_day": 3.0, "by_purpose": {}}, "variety": figures,
    }  # fmt: skip
    text = scenario.render(report)
    assert "sentences said more than twice in one conversation: 1" in text
    assert "names itself in the third person: 2   (target: 0)" in text
    assert "small talk passed on as news: 1 of 1 tellings passed on   (target: 0)" in text
    assert "(target: under 20%)" in text
