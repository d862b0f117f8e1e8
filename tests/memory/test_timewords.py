"""Time words name game days: "昨日", "先週", "3日目", "yesterday", "last week", a weekday."""

from __future__ import annotations

import pytest

from backend.memory.timewords import window


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("今日何した？", (12, 12)),
        ("今朝は何を食べた？", (12, 12)),
        ("昨日カフェで誰と話した？", (11, 11)),
        ("一昨日は雨だったっけ", (10, 10)),  # not "昨日", which it contains
        ("おとといのこと覚えてる？", (10, 10)),
        ("3日目に何があった？", (3, 3)),
        ("十日目", (10, 10)),
        ("三日前に会ったよね", (9, 9)),
        ("2日前", (10, 10)),
        ("ここ数日どうしてた？", (8, 11)),
        ("先週は忙しかった？", (1, 7)),  # day 1 is a Monday: days 8-14 are this week
        ("今週のこと", (8, 12)),
        ("月曜日に何した？", (8, 8)),
        ("金曜日", (12, 12)),  # day 12 is a Friday: today
        ("What did you do today?", (12, 12)),
        ("yesterday", (11, 11)),
        ("the day before yesterday", (10, 10)),
        ("two days ago", (10, 10)),
        ("3 days ago", (9, 9)),
        ("What happened on day 4?", (4, 4)),
        ("last week", (1, 7)),
        ("What did you do on Monday?", (8, 8)),
        ("ＹＥＳＴＥＲＤＡＹ", (11, 11)),  # full-width letters
        ("きょうはなにしたの？", (12, 12)),
        ("きのう、どこにいた？", (11, 11)),
    ],
)
def test_time_words_name_game_days(query: str, expected: tuple[int, int]) -> None:
    assert window(query, today=12, day_one_weekday=0) == expected


@pytest.mark.parametrize(
    "query",
    [
        "ひかりに何を渡した？",
        "When did Caroline go to the support group?",
        "yesterdays",
        "Sundayish",
        "ミナトのきょうだいにどんなお祝い事がある？",  # siblings, not today
        "きょうみのある本はある？",  # interest
    ],
)
def test_a_query_without_time_words_names_no_days(query: str) -> None:
    assert window(query, today=12) is None


def test_days_are_clipped_to_the_game() -> None:
    assert window("先週", today=3) is None  # the week before day 1
    assert window("ここ数日", today=2) == (1, 1)
    assert window("5日目", today=3) is None  # a day still to come


def test_the_weekday_of_day_one_is_a_setting() -> None:
    # Day 1 a Sunday (6): day 12 is a Thursday, so Monday is day 9.
    assert window("月曜日", today=12, day_one_weekday=6) == (9, 9)
