"""Time words in a query: "昨日", "先週", "3日目", "yesterday", "last week", "月曜日" name game days.

`window(text, today, day_one_weekday)` gives the first and last game day a query is about, or None when it
names no time. Fused retrieval then ranks the memories formed inside that window first (the `time`
component, fused.py). Days are game days (1-based); weeks start on Monday, and `day_one_weekday` says which
weekday game day 1 was (0 = Monday, the RETRIEVAL_DAY_ONE_WEEKDAY setting). Months are taken as 30 days.

Text is NFKC-normalised and lower-cased first. The first pattern that matches (in the order below) decides,
so "一昨日" is the day before yesterday, not yesterday.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from backend.text import normalise

Window = tuple[int, int]
WEEKDAYS_EN = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WEEKDAYS_JA = ("月", "火", "水", "木", "金", "土", "日")
_KANJI_DIGITS = {c: i for i, c in enumerate("〇一二三四五六七八九")}
_NUMBER = r"(\d+|[一二三四五六七八九十]+)"
#: After a time word written in hiragana: a particle, punctuation or the end, so that "きょう" is today but
#: "きょうだい" (siblings) and "きょうみ" (interest) are not.
_KANA_END = r"(?=[はもにでのとってからまでねよ、。,.!?！？\s]|$)"
_WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "a couple of": 2}


def _number(text: str) -> int:
    """3, 三, 十二 -> int (kanji numbers up to 99)."""
    if text.isdigit():
        return int(text)
    if text in _WORD_NUMBERS:
        return _WORD_NUMBERS[text]
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_KANJI_DIGITS.get(tens, 1) if tens else 1) * 10 + (_KANJI_DIGITS.get(ones, 0) if ones else 0)
    return _KANJI_DIGITS.get(text, 0)


def _week_start(today: int, day_one_weekday: int) -> int:
    """The game day of this week's Monday (may be before day 1)."""
    return today - (today - 1 + day_one_weekday) % 7


def _weekday(index: int) -> Callable[[re.Match[str], int, int], Window]:
    """The latest such weekday on or before today."""

    def days(_: re.Match[str], today: int, first: int) -> Window:
        back = ((today - 1 + first) % 7 - index) % 7
        return today - back, today - back

    return days


_Rule = tuple[re.Pattern[str], Callable[[re.Match[str], int, int], Window]]


def _rules() -> list[_Rule]:
    rules: list[tuple[str, Callable[[re.Match[str], int, int], Window]]] = [
        (rf"一昨日|(おととい|おとつい){_KANA_END}|\bday before yesterday\b", lambda m, t, f: (t - 2, t - 2)),
        (rf"昨日|昨夜|昨晩|(きのう|ゆうべ){_KANA_END}|\byesterday\b|\blast night\b", lambda m, t, f: (t - 1, t - 1)),
        (rf"今日|本日|今朝|今夜|今晩|(きょう|けさ|こんや){_KANA_END}|\btoday\b|\btonight\b|"
         r"\bthis (morning|afternoon|evening)\b",
         lambda m, t, f: (t, t)),
        (_NUMBER + r"日目|\bday (\d+)\b", lambda m, t, f: (_count(m), _count(m))),
        (_NUMBER + r"日前|\b(\d+|one|two|three|four|five|six|seven) days? ago\b",
         lambda m, t, f: (t - _count(m), t - _count(m))),
        (r"数日前|この数日|ここ数日|\b(a few|a couple of|several) days ago\b|\bthe last few days\b",
         lambda m, t, f: (t - 4, t - 1)),
        (r"先週|\blast week\b", lambda m, t, f: (_week_start(t, f) - 7, _week_start(t, f) - 1)),
        (r"今週|\bthis week\b", lambda m, t, f: (_week_start(t, f), t)),
        (r"先月|\blast month\b", lambda m, t, f: (t - 59, t - 30)),
        (r"今月|\bthis month\b", lambda m, t, f: (t - 29, t)),
    ]  # fmt: skip
    rules += [(rf"{ja}曜", _weekday(i)) for i, ja in enumerate(WEEKDAYS_JA)]
    rules += [(rf"\b(on |last )?{en}\b", _weekday(i)) for i, en in enumerate(WEEKDAYS_EN)]
    return [(re.compile(pattern), days) for pattern, days in rules]


def _count(match: re.Match[str]) -> int:
    """The number a rule's pattern caught (its first group that matched)."""
    return _number(next(group for group in match.groups() if group))


RULES = _rules()


def window(text: str, today: int, day_one_weekday: int = 0) -> Window | None:
    """The (first, last) game day the text names, clipped to days 1..today; None when it names none (or only
    days before day 1)."""
    normal = normalise(text)
    for pattern, days in RULES:
        match = pattern.search(normal)
        if match is None:
            continue
        first, last = days(match, today, day_one_weekday)
        first, last = max(first, 1), min(last, today)
        return (first, last) if first <= last else None
    return None
