"""Appointments in words: "明日の19時に公園で花火をする" -> day 2, 19:00, the park. Pure functions.

An appointment is a time and a known place in a text an agent holds (an intention, a line it heard). The
day is resolved against the day the text was written: 今日/今夜/today/tonight that day, 明日/tomorrow the
next, 明後日 the one after, "3日目"/"day 3" that day; with no day word, the first such hour after the text
was written (an evening party heard in the morning is today's, one heard at night is tomorrow's).
Japanese first: 19時, 19時半, 午後7時, 夜7時, 19:30; English: 7pm, 7:30 pm, 19:00, at 7 in the evening.
A place is one of the world's points of interest named in the text (its display name or its id).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from backend.text import normalise

#: How long an appointment lasts in a plan (hours) when the text says nothing of its end.
DEFAULT_HOURS = 2.0

_JA_HOUR = re.compile(
    r"(?P<ampm>午前|午後|朝|昼|夕方|夜|夜の)?\s*(?P<h>\d{1,2})\s*時\s*(?:(?P<half>半)|(?P<m>\d{1,2})\s*分)?"
)
_CLOCK = re.compile(r"(?<![\d:])(?P<h>\d{1,2}):(?P<m>\d{2})(?!\d)\s*(?P<ampm>am|pm|a\.m\.|p\.m\.)?")
_EN_HOUR = re.compile(r"(?<![\d:])(?P<h>\d{1,2})\s*(?P<ampm>am|pm|a\.m\.|p\.m\.|o'clock)")
_EN_AT = re.compile(r"\bat\s+(?P<h>\d{1,2})\b(?!\s*(?::|%|/))(?P<eve>[^.;]{0,24}\b(?:evening|night)\b)?")
_DAY_N = re.compile(r"(?P<n>\d{1,4})\s*日目|\bday\s+(?P<en>\d{1,4})\b")
_RELATIVE = (
    ("明後日", 2),
    ("あさって", 2),
    ("day after tomorrow", 2),
    ("明日", 1),
    ("あした", 1),
    ("tomorrow", 1),
    ("今日", 0),
    ("今夜", 0),
    ("今晩", 0),
    ("today", 0),
    ("tonight", 0),
    ("this evening", 0),
)
_PM_WORDS = ("午後", "夕方", "夜", "夜の", "pm", "p.m.")


@dataclass(frozen=True)
class Place:
    id: str
    name: str


@dataclass(frozen=True)
class Appointment:
    """A time and place an agent means to be at (or was invited to)."""

    day: int
    start: float
    poi_id: str
    what: str
    #: The day the words were written (what their 明日 is read against).
    written_day: int = 1

    @property
    def end(self) -> float:
        return min(24.0, self.start + DEFAULT_HOURS)

    def key(self) -> tuple[int, float, str]:
        return (self.day, self.start, self.poi_id)


def find_hour(text: str) -> float | None:
    """The first clock time in `text` as hours of the day (19.5 = 19:30), or None."""
    norm = normalise(text)
    found: list[tuple[int, float]] = []
    for match in _JA_HOUR.finditer(norm):
        hour = int(match["h"]) % 24 if int(match["h"]) <= 24 else None
        if hour is None:
            continue
        if match["ampm"] in _PM_WORDS and hour < 12:
            hour += 12
        minutes = 30 if match["half"] else int(match["m"] or 0)
        found.append((match.start(), hour + min(minutes, 59) / 60))
    for match in _CLOCK.finditer(norm):
        hour = int(match["h"])
        if hour > 24:
            continue
        if match["ampm"] in ("pm", "p.m.") and hour < 12:
            hour += 12
        found.append((match.start(), hour % 24 + min(int(match["m"]), 59) / 60))
    for match in _EN_HOUR.finditer(norm):
        hour = int(match["h"])
        if hour > 12 and match["ampm"] != "o'clock":
            continue
        if match["ampm"] in ("pm", "p.m.") and hour < 12:
            hour += 12
        found.append((match.start(), float(hour % 24)))
    for match in _EN_AT.finditer(norm):
        hour = int(match["h"])
        if hour > 24:
            continue
        if match["eve"] and hour < 12:
            hour += 12
        found.append((match.start(), float(hour % 24)))
    return min(found)[1] if found else None


def find_day(text: str, written_day: int, written_hour: float, hour: float) -> int:
    """The day `text` means for an event at `hour`, read on `written_day` at `written_hour`."""
    norm = normalise(text)
    explicit = _DAY_N.search(norm)
    if explicit:
        return int(explicit["n"] or explicit["en"])
    for word, offset in _RELATIVE:
        if word in norm:
            return written_day + offset
    return written_day if hour > written_hour else written_day + 1


def find_place(text: str, places: Iterable[Place]) -> Place | None:
    """The place `text` names: the longest display name (or id) found in it."""
    norm = normalise(text)
    best: tuple[int, Place] | None = None
    for place in places:
        for label in (place.name, place.id):
            label_norm = normalise(label).strip()
            if len(label_norm) < 2 or label_norm not in norm:
                continue
            if label_norm.isascii() and not re.search(rf"\b{re.escape(label_norm)}\b", norm):
                continue
            if best is None or len(label_norm) > best[0]:
                best = (len(label_norm), place)
    return best[1] if best else None


def find_appointment(
    text: str, places: Iterable[Place], *, written_day: int, written_hour: float
) -> Appointment | None:
    """The appointment in `text` (a clock time and a known place), or None when either is missing."""
    hour = find_hour(text)
    if hour is None:
        return None
    place = find_place(text, places)
    if place is None:
        return None
    day = find_day(text, written_day, written_hour, hour)
    return Appointment(day=day, start=hour, poi_id=place.id, what=text.strip(), written_day=written_day)


def when_words(appointment: Appointment, today: int, language: str) -> str:
    """The appointment's day and hour said from `today`: "明日の19時" / "tomorrow at 19:00"."""
    hours, minutes = int(appointment.start), round((appointment.start % 1) * 60)
    offset = appointment.day - today
    if language == "en":
        clock = f"{hours:02d}:{minutes:02d}"
        day = {0: "today", 1: "tomorrow", 2: "the day after tomorrow"}.get(
            offset, f"on day {appointment.day}"
        )
        return f"{day} at {clock}"
    clock = f"{hours}時" + (f"{minutes}分" if minutes else "")
    day = {0: "今日", 1: "明日", 2: "明後日"}.get(offset, f"{appointment.day}日目")
    return f"{day}の{clock}"


def rebase(text: str, written_day: int, today: int, language: str) -> str:
    """`text` written on `written_day` with its relative day word said from `today` (明日 -> 今日)."""
    if written_day == today:
        return text
    norm = normalise(text)
    for word, offset in _RELATIVE:
        at = norm.find(word)
        if at < 0 or len(normalise(text[:at])) != at:
            continue  # only where normalising kept the text's length (so the position maps back)
        day = written_day + offset
        gap = day - today
        if language == "en":
            said = {0: "today", 1: "tomorrow", -1: "yesterday"}.get(gap, f"on day {day}")
        else:
            said = {0: "今日", 1: "明日", 2: "明後日", -1: "昨日"}.get(gap, f"{day}日目")
        return text[:at] + said + text[at + len(word) :]
    return text
