"""Appointments in words: "明日の19時に公園で花火をする" -> day 2, 19:00, the park. Pure functions.

An appointment is a time and a known place in a text an agent holds (an intention, a line it heard). The
day is resolved against the day the text was written: 今日/今夜/today/tonight that day, 明日/tomorrow the
next, 明後日 the one after, "3日目"/"day 3" that day, 土曜日/Saturday the next one; with no day word, the first such hour after the
text was written (an evening party heard in the morning is today's, one heard at night is tomorrow's).
Japanese first: 19時, 19時半, 午後7時, 夜7時, 19:30; English: 7pm, 7:30 pm, 19:00, at 7 in the evening (the
words themselves: clock.py). A place is one of the world's points of interest named in the text (its
display name, its id, or another name it goes by), compared width-, case- and accent-folded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from backend.intention.clock import RELATIVE, find_day, find_hour
from backend.text import normalise
from backend.world.places import Place, find_place, fold, names_label

__all__ = [
    "DEFAULT_HOURS", "Appointment", "Place", "find_appointment", "find_day", "find_hour", "find_place", "fold",
    "names_label",
]  # fmt: skip


#: How long an appointment lasts in a plan (hours) when the text says nothing of its end.
DEFAULT_HOURS = 2.0


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


def find_appointment(
    text: str, places: Iterable[Place], *, written_day: int, written_hour: float, day_one_weekday: int = 0
) -> Appointment | None:
    """The appointment in `text` (a clock time and a known place), or None when either is missing."""
    hour = find_hour(text)
    if hour is None:
        return None
    place = find_place(text, places)
    if place is None:
        return None
    day = find_day(text, written_day, written_hour, hour, day_one_weekday)
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
    for word, offset in RELATIVE:
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
