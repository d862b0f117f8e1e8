"""The party's news checked slot by slot (party_news.py), and the party scenario on the small English and
Japanese towns through the real code path: the CLI, an in-process server, the scripted engine, HTTP as Unity
would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from backend.cli import main
from backend.config import Settings
from backend.conversation import farewell
from backend.simulate import party_minds, party_news, scenario
from backend.simulate.scenario_cli import PARTY_TOWNS
from backend.transfer.demo import bundled_town

EN_AGENTS = [{"id": "mia", "name": "Mia", "language": "en"}, {"id": "ben", "name": "Ben", "language": "en"},
             {"id": "tom", "name": "Tom", "language": "en"}]  # fmt: skip
EN_POIS = [{"id": "corner_cafe", "name": "Corner Cafe"}, {"id": "park", "name": "Riverside Park"}]
JA_AGENTS = [
    {"id": "misaki", "name": "美咲", "language": "ja"},
    {"id": "kenta", "name": "健太", "language": "ja"},
]
JA_POIS = [{"id": "hidamari", "name": "喫茶ひだまり"}, {"id": "park", "name": "川沿い公園"}]


def _en() -> party_news.PartyNews:
    text = scenario.party_for("town5_en").text
    return party_news.news_of(text, "mia", written_day=1, agents=EN_AGENTS, pois=EN_POIS)


def _ja() -> party_news.PartyNews:
    text = scenario.party_for("town5_ja").text
    return party_news.news_of(text, "misaki", written_day=1, agents=JA_AGENTS, pois=JA_POIS)


@pytest.mark.parametrize(
    ("memory", "want"),
    [
        # The host's own words, remembered with who said them: all four arrived, "7pm" read as 19:00.
        (
            'Mia told me: "I\'m having a party at the Corner Cafe tomorrow at 7pm, come along!"',
            {"who": True, "what": True, "when": True, "where": True},
        ),
        # Passed on in other words: the host is the one the line names, not the teller.
        (
            'Ben told me: "Mia is throwing a get-together at the Corner Cafe tomorrow evening at seven."',
            {"who": True, "what": True, "when": True, "where": True},
        ),
        # Garbled: the teller made it his party, and the time is gone.
        (
            'Tom told me: "I\'m throwing a party at the Corner Cafe, come!"',
            {"who": False, "what": True, "when": False, "where": True},
        ),
        # The wrong hour and the wrong place.
        (
            'Mia told me: "Party tomorrow at 9pm in Riverside Park!"',
            {"who": True, "what": True, "when": False, "where": False},
        ),
    ],
)
def test_what_arrived_in_an_english_memory(memory: str, want: dict[str, bool]) -> None:
    assert party_news.arrived(memory, _en(), day=1, hour=9.0) == want


def test_what_arrived_in_a_japanese_memory() -> None:
    news = _ja()
    passed_on = "健太が「美咲さんが明日の夕方6時に喫茶ひだまりでパーティーするって」と言った"
    assert party_news.arrived(passed_on, news, day=1, hour=10.0) == dict.fromkeys(party_news.SLOTS, True)
    own = "美咲が「明日パーティーやるから来てね！」と言った"  # no hour, no place
    assert party_news.arrived(own, news, day=1, hour=10.0) == {"who": True, "what": True, "when": False,
                                                               "where": False}  # fmt: skip
    assert party_news.wrong_host("健太が「明日18時に喫茶ひだまりでパーティーを開くよ」と言った", news)


def test_an_interview_names_the_host_and_the_time_read_from_the_day_it_is_given() -> None:
    news = _en()
    before = "Yes! Mia's party is tomorrow at 7pm at the Corner Cafe."
    assert party_news.interview_check(before, news, day=1, hour=23.0) == {"host": True, "time": True}
    # The same words on the party's night are a day late; "tonight at seven" is right.
    assert party_news.interview_check(before, news, day=2, hour=23.5) == {"host": True, "time": False}
    after = "Mia threw a party at the Corner Cafe tonight at seven."
    assert party_news.interview_check(after, news, day=2, hour=23.5)["time"]
    # Naming the café and a party is not naming the host.
    assert party_news.interview_check("There is a party at the Corner Cafe at 7pm tomorrow.", news,
                                      day=1, hour=20.0) == {"host": False, "time": True}  # fmt: skip


def test_the_listeners_memory_of_a_line_is_the_one_that_heard_it() -> None:
    line = "Party at the Corner Cafe tomorrow at 7pm!"
    memories = [
        {"session_id": "s1", "content": f'I told Mia: "{line} Sounds fun."'},  # the listener's own line
        {"session_id": "s0", "content": f'Mia told me: "{line}"'},  # another conversation
        {"session_id": "s1", "content": f'Mia told me: "{line}"'},
    ]
    assert party_news._memory_of(memories, "s1", line, "Mia") == memories[2]["content"]
    assert party_news._memory_of(memories[:2], "s1", line, "Mia") is None


def test_a_whisper_without_an_event_is_refused() -> None:
    with pytest.raises(ValueError, match="no event"):
        party_news.news_of("I like the park.", "mia", written_day=1, agents=EN_AGENTS, pois=EN_POIS)


def test_every_party_town_is_bundled_small_towns_have_4_to_6_agents_and_the_host_is_cast() -> None:
    assert set(PARTY_TOWNS) == set(scenario.PARTIES)
    for name, language in (("town5_en", "en"), ("town5_ja", "ja")):
        town, party = bundled_town(name), scenario.party_for(name)
        assert 4 <= len(town.agents) <= 6 and {a.language for a in town.agents} == {language}
        assert town.cast["party_host"] == party.host and party.poi in {p.id for p in town.pois}
        agents = [a.model_dump() | {"id": a.id} for a in town.agents]
        pois = [{"id": p.id, "name": p.name} for p in town.pois]
        news = party_news.news_of(party.text, party.host, written_day=1, agents=agents, pois=pois)
        assert (news.slots.day, news.slots.hour, news.slots.where) == (2, party.start, party.poi)


@pytest.mark.slow
@pytest.mark.parametrize("town", ["town5_en", "town5_ja"])
def test_the_party_on_a_small_town_through_the_cli(
    town: str, settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    out_file = tmp_path / "party.json"
    argv = ["scenario", "party", "--town", town, "--days", "1", "--hours", "4", "--json", str(out_file)]
    assert main(argv) == 0
    printed, report = capsys.readouterr().out, json.loads(out_file.read_text(encoding="utf-8"))
    host = scenario.party_for(town).host
    own = [row for row in report["tellings"] if not row["passed_on"] and row["told"]]
    assert own, "the host told no one in the first four hours"
    for row in own:  # the host's own telling: every slot reached the listener's memory
        assert row["teller"] == host and row["arrived"] == dict.fromkeys(party_news.SLOTS, True)
    answers = report["knew_day1"]["answers"]
    assert set(answers) == {a.id for a in bundled_town(town).agents} - {host}
    assert all(answers[row["listener"]]["host"] and answers[row["listener"]]["time"] for row in own)
    counts = report["telling_counts"]
    assert counts["tellings"] == len(report["tellings"]) and counts["wrong_host"] == 0
    assert f"tellings of the party: {counts['tellings']}" in printed
    assert f"{host} -> " in printed and "seconds per turn" in printed and "interviews after day 1" in printed
    # The minds besides the news: plans by source, farewell endings, the council's opinions.
    assert sum(report["plans"]["counts"].values()) == len(bundled_town(town).agents)
    assert report["farewells"]["inside_an_invitation"] == []
    opinions = report["council"]["opinions"]
    assert report["council"]["status"] == "done" and len(opinions) == 3
    assert all(o["model"] and o["sentence"] for o in opinions)
    assert (
        "day plans by source" in printed
        and "talks ended by a farewell" in printed
        and "council (done" in printed
    )


def test_a_council_opinion_is_a_real_sentence_only_with_words() -> None:
    assert party_minds.real_sentence("I think a monthly party would bring the town together.")
    assert party_minds.real_sentence("毎月のパーティーは町のためになると思う。")
    assert not party_minds.real_sentence("")
    assert not party_minds.real_sentence("1. Today")
    assert not party_minds.real_sentence("いいね")


def test_an_invitation_is_told_apart_from_a_goodbye() -> None:
    assert farewell.invites("I'm really excited to see you soon. Would you like to come to my party?")
    assert farewell.invites("明日の19時にパーティーするから、来てね！")
    assert not farewell.invites("Bye, see you tomorrow!")
    assert not farewell.invites("じゃあ、またね！")
    assert not farewell.invites('He said "come to the party" to everyone.')  # quoted words are not the line's
