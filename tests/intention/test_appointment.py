"""Appointments read from words, Japanese first: time, day and a known place."""

from __future__ import annotations

import pytest

from backend.intention.appointment import Place, find_appointment, find_hour, rebase

PLACES = [Place("park", "公園"), Place("cafe", "中央カフェ"), Place("library", "Library")]


@pytest.mark.parametrize(
    ("text", "hour"),
    [
        ("明日の19時に公園で花火をする", 19.0),
        ("夜7時に集まろう", 19.0),
        ("午後3時半からお茶会", 15.5),
        ("１９時３０分に公園", 19.5),  # full-width digits
        ("18:15にカフェで", 18.25),
        ("Party at 7pm in the park", 19.0),
        ("come at 7:30 p.m.", 19.5),
        ("meet me at 8 in the evening", 20.0),
        ("今日は天気がいい", None),
    ],
)
def test_find_hour(text: str, hour: float | None) -> None:
    assert find_hour(text) == hour


def test_day_words_are_read_from_the_day_the_text_was_written() -> None:
    tomorrow = find_appointment("明日の19時に公園で花火をする", PLACES, written_day=1, written_hour=8)
    assert tomorrow is not None and (tomorrow.day, tomorrow.start, tomorrow.poi_id) == (2, 19.0, "park")
    day_n = find_appointment("3日目の10時に中央カフェ", PLACES, written_day=1, written_hour=8)
    assert day_n is not None and (day_n.day, day_n.poi_id) == (3, "cafe")
    english = find_appointment("Tomorrow at 6pm at the library", PLACES, written_day=4, written_hour=9)
    assert english is not None and (english.day, english.start, english.poi_id) == (5, 18.0, "library")
    # No day word: the next such hour (heard in the morning: tonight; heard at night: tomorrow).
    assert find_appointment("19時に公園", PLACES, written_day=1, written_hour=9).day == 1  # type: ignore[union-attr]
    assert find_appointment("19時に公園", PLACES, written_day=1, written_hour=21).day == 2  # type: ignore[union-attr]


def test_no_place_or_no_time_is_no_appointment() -> None:
    assert find_appointment("明日の19時に花火をする", PLACES, written_day=1, written_hour=8) is None
    assert find_appointment("明日公園で花火をする", PLACES, written_day=1, written_hour=8) is None
    # An id only counts as a whole word ("parking" is not the park).
    assert find_appointment("parking at 7pm", [Place("park", "Park")], written_day=1, written_hour=8) is None


def test_rebase_says_the_day_from_today() -> None:
    assert rebase("明日の19時に公園で花火をする", 1, 2, "ja") == "今日の19時に公園で花火をする"
    assert rebase("明日の19時に公園で花火をする", 1, 3, "ja") == "昨日の19時に公園で花火をする"
    assert rebase("Fireworks tomorrow at 7pm", 1, 2, "en") == "Fireworks today at 7pm"
    assert rebase("明日の19時", 2, 2, "ja") == "明日の19時"
