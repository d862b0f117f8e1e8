"""Clock and calendar words: "明日の19時", "夜7時", "7 p.m.", "seven in the evening", "土曜日", "3日目" -> a game
day and an hour of the day (decimal: 19.5 = 19:30). Pure functions; text is NFKC-normalised and lower-cased.

Hours, Japanese first: 19時, 19時半, 19時30分, 七時, 午後7時, 夜7時, 今夜7時, 正午, 19:30 ("2時間", a duration, is
no hour); English: 7pm, 7 p.m., 7:30pm, 19:00, seven o'clock, at seven, half past six, noon, midnight. A bare
hour (7時, at 7) is read after noon when the text has an afternoon or evening word and no morning word (今夜,
夕方, tonight, "in the evening"); otherwise it is unmarked (`Clock.marked` False): 7 may be 7:00 or 19:00.

Days are read from the day the words were said: 今日/今夜/today/tonight that day, 明日/tomorrow the next, 明後日
the one after, "3日目"/"day 3" that day, 土曜日/on Saturday the next such weekday (that day itself when it is
one), 来週の土曜日/"Saturday next week" the one in the next week, 来週/next week the next Monday, 週末/weekend the
next Saturday. Weekdays need the weekday of game day 1 (`day_one_weekday`, 0 = Monday: the
RETRIEVAL_DAY_ONE_WEEKDAY setting); weeks start on Monday as in memory/timewords.py.

A part of the day said without a clock time stands for a default hour (PART_HOURS: "tomorrow evening" is
18:00, 明日の朝 9:00).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from backend.memory.timewords import WEEKDAYS_EN, WEEKDAYS_JA
from backend.text import normalise

#: The hour a part of the day stands for when no clock time is said with it.
PART_HOURS = {"morning": 9.0, "noon": 12.0, "afternoon": 15.0, "evening": 18.0, "night": 20.0}
#: The clock hours [from, to) each part of the day covers (19:00 says "evening" and "night").
PART_SPANS = {
    "morning": (5.0, 11.0),
    "noon": (11.0, 14.0),
    "afternoon": (12.0, 18.0),
    "evening": (16.0, 22.0),
    "night": (18.0, 29.0),
}
_PARTS = (
    ("morning", r"今朝|朝|午前|(?<!good )\bmorning\b"),
    ("noon", r"正午|昼|\bnoon\b|\bmidday\b|\blunchtime\b"),
    ("afternoon", r"午後|\bafternoon\b"),
    ("evening", r"夕方|今夜|今晩|晩|\bevening\b|\btonight\b"),
    ("night", r"夜|\bnight\b"),
)
_PART_RES = tuple((name, re.compile(pattern)) for name, pattern in _PARTS)
_PM_PARTS = ("afternoon", "evening", "night")

#: Day words read from the day the words were said (longest first: 明後日 before 明日).
RELATIVE = (
    ("明後日", 2),
    ("あさって", 2),
    ("day after tomorrow", 2),
    ("明日", 1),
    ("あした", 1),
    ("tomorrow", 1),
    ("今日", 0),
    ("本日", 0),
    ("今夜", 0),
    ("今晩", 0),
    ("今朝", 0),
    ("today", 0),
    ("tonight", 0),
    ("this evening", 0),
    ("this morning", 0),
    ("this afternoon", 0),
)
#: Past day words: news about them is over (only `said_day` reads them; `rebase` keeps them as they are).
PAST = (("一昨日", -2), ("おととい", -2), ("昨日", -1), ("昨夜", -1), ("昨晩", -1), ("yesterday", -1),
        ("last night", -1))  # fmt: skip

_KANJI = {c: i for i, c in enumerate("〇一二三四五六七八九")}
_EN_NUMBERS = ("one two three four five six seven eight nine ten eleven twelve").split()
_EN_WORD = "|".join(_EN_NUMBERS)
_AMPM = r"(?P<ampm>am|pm|a\.m\.|p\.m\.)(?![a-z])"
_JA_HOUR = re.compile(
    r"(?P<pre>午前|午後|朝|昼|夕方|今夜|今晩|夜|晩)?の?\s*(?P<h>\d{1,2}|[〇一二三四五六七八九十]{1,3})\s*時(?!間|的|期|代)"
    r"\s*(?:(?P<half>半)|(?P<m>\d{1,2})\s*分)?"
)
_HOUR_RES = (
    re.compile(rf"(?<![\d:])(?P<h>\d{{1,2}}):(?P<m>\d{{2}})(?!\d)\s*(?:{_AMPM})?"),
    re.compile(rf"(?<![\d:.])(?P<h>\d{{1,2}})\s*(?:{_AMPM}|(?P<oclock>o'clock))"),
    re.compile(
        rf"\b(?P<h>{_EN_WORD})(?:[ -](?P<m>fifteen|thirty|forty-five))?\s*(?:{_AMPM}|(?P<oclock>o'clock))"
    ),
    re.compile(rf"\bhalf past (?P<h>{_EN_WORD}|\d{{1,2}})\b(?P<half>)"),
    re.compile(
        rf"\b(?:at|around|about|by|from|until|till|before|after)\s+(?P<h>{_EN_WORD}|\d{{1,2}})"
        r"(?:[ -](?P<m>fifteen|thirty|forty-five))?(?![\d:%/a-z])(?!\s*(?:people|of|years|days|minutes|hours)\b)"
    ),
    re.compile(
        rf"\b(?P<h>{_EN_WORD}|\d{{1,2}})(?:[ -](?P<m>fifteen|thirty|forty-five))?"
        r"(?=\s+(?:in the (?:morning|afternoon|evening)|at night|tonight|this (?:morning|afternoon|evening)))"
    ),
    re.compile(r"\b(?P<noon>noon|midday|midnight)\b|(?P<jnoon>正午)"),
)
_MINUTES = {"fifteen": 15, "thirty": 30, "forty-five": 45}
_PM_PRE = ("午後", "夕方", "今夜", "今晩", "夜", "晩")
_DAY_N = re.compile(r"(?P<n>\d{1,4})\s*日目|\bday\s+(?P<en>\d{1,4})\b")
_WEEKDAY = re.compile(
    r"(?P<next>来週の?|再来週の?)?(?P<ja>[月火水木金土日])曜"
    r"|\b(?P<enext>next |this |on )?(?P<en>" + "|".join(WEEKDAYS_EN) + r")\b(?P<after> next week)?"
)
_NEXT_WEEK = re.compile(r"来週|\bnext week\b")
_WEEKEND = re.compile(r"週末|\b(?:this |the )?weekend\b")


@dataclass(frozen=True)
class Clock:
    """A clock time in a text: where it starts, the hour (19.5 = 19:30), whether it is known to be am or pm."""

    at: int
    hour: float
    marked: bool


def _number(text: str) -> int:
    """7, 七, 十九, seven -> int."""
    if text.isdigit():
        return int(text)
    if text in _EN_NUMBERS:
        return _EN_NUMBERS.index(text) + 1
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_KANJI.get(tens, 1) if tens else 1) * 10 + (_KANJI.get(ones, 0) if ones else 0)
    return _KANJI.get(text, 0)


def _ja_clocks(norm: str) -> list[Clock]:
    out = []
    for match in _JA_HOUR.finditer(norm):
        hour = _number(match["h"])
        if hour > 24:
            continue
        pre = match["pre"] or ""
        pm = pre in _PM_PRE or (pre == "昼" and hour < 7)
        if pm and hour < 12:
            hour += 12
        minutes = 30 if match["half"] else min(int(match["m"] or 0), 59)
        out.append(Clock(match.start(), hour % 24 + minutes / 60, bool(pre) or hour >= 12 or hour == 0))
    return out


def _en_clock(match: re.Match[str]) -> Clock | None:
    groups = match.groupdict()
    if groups.get("noon") or groups.get("jnoon"):
        return Clock(match.start(), 0.0 if groups.get("noon") == "midnight" else 12.0, True)
    hour = _number(match["h"])
    if hour > 24 or (groups.get("ampm") and not 1 <= hour <= 12):
        return None
    minutes_said = groups.get("m") or ""
    minutes = 30 if groups.get("half") is not None else _MINUTES.get(minutes_said) or int(minutes_said or 0)
    ampm = groups.get("ampm")
    if ampm in ("pm", "p.m.") and hour < 12:
        hour += 12
    if ampm in ("am", "a.m.") and hour == 12:
        hour = 0
    leading_zero = match["h"].startswith("0")
    marked = bool(ampm) or hour >= 13 or hour == 0 or leading_zero
    return Clock(match.start(), hour % 24 + min(minutes, 59) / 60, marked)


def clocks(text: str) -> list[Clock]:
    """Every clock time in `text`, first first; bare hours read after noon where the text says so."""
    norm = normalise(text)
    found = _ja_clocks(norm)
    taken: list[tuple[int, int]] = []
    for pattern in _HOUR_RES:
        for match in pattern.finditer(norm):
            clock = _en_clock(match)
            overlaps = any(match.start() < end and start < match.end() for start, end in taken)
            if clock is not None and not overlaps:
                found.append(clock)
                taken.append(match.span())
    words = parts(norm)
    pm = any(p in _PM_PARTS for p in words) and "morning" not in words
    return sorted(
        ((Clock(c.at, c.hour + 12, True) if pm and not c.marked and 1 <= c.hour < 12 else c) for c in found),
        key=lambda c: c.at,
    )


def find_hour(text: str) -> float | None:
    """The first clock time in `text` as hours of the day (19.5 = 19:30), or None."""
    found = clocks(text)
    return found[0].hour if found else None


def parts(text: str) -> list[str]:
    """The parts of the day `text` names (morning, noon, afternoon, evening, night), first said first."""
    norm = normalise(text)
    found: dict[str, int] = {}
    for name, pattern in _PART_RES:
        match = pattern.search(norm)
        if match:
            found[name] = match.start()
    # 今夜 is the evening, not also the night: a night word inside an evening word does not count.
    if "night" in found and "evening" in found and found["night"] <= found["evening"] + 1:
        night = _PART_RES[-1][1].search(norm, found["evening"] + 2)
        del found["night"]
        if night is not None:
            found["night"] = night.start()
    return sorted(found, key=lambda name: found[name])


def _week_start(day: int, day_one_weekday: int) -> int:
    return day - (day - 1 + day_one_weekday) % 7


def weekday_of(day: int, day_one_weekday: int) -> int:
    """The weekday of game day `day` (0 = Monday)."""
    return (day - 1 + day_one_weekday) % 7


def _weekday_day(match: re.Match[str], today: int, day_one_weekday: int) -> int:
    index = WEEKDAYS_JA.index(match["ja"]) if match["ja"] else WEEKDAYS_EN.index(match["en"])
    if match["next"] or match["after"]:
        weeks = 2 if (match["next"] or "").startswith("再") else 1
        return _week_start(today, day_one_weekday) + 7 * weeks + index
    ahead = (index - weekday_of(today, day_one_weekday)) % 7
    if ahead == 0 and (match["enext"] or "") == "next ":
        ahead = 7
    return today + ahead


def said_day(text: str, today: int, day_one_weekday: int = 0) -> int | None:
    """The game day `text` names, read from `today` (see the module docstring), or None when it names none."""
    norm = normalise(text)
    explicit = _DAY_N.search(norm)
    if explicit:
        return int(explicit["n"] or explicit["en"])
    for word, offset in (*PAST[:2], *RELATIVE, *PAST[2:]):
        if word in norm:
            return today + offset
    weekday = _WEEKDAY.search(norm)
    if weekday:
        return _weekday_day(weekday, today, day_one_weekday)
    if _NEXT_WEEK.search(norm):
        return _week_start(today, day_one_weekday) + 7
    if _WEEKEND.search(norm):
        return today + (5 - weekday_of(today, day_one_weekday)) % 7
    return None


def find_day(text: str, written_day: int, written_hour: float, hour: float, day_one_weekday: int = 0) -> int:
    """The day `text` means for an event at `hour`, read on `written_day` at `written_hour`: the day it names,
    else the first such hour after it was written (heard in the morning: today; at night: tomorrow)."""
    named = said_day(text, written_day, day_one_weekday)
    if named is not None:
        return named
    return written_day if hour > written_hour else written_day + 1
