"""News as facts: the slots of an invitation or appointment (what, who hosts, when, where, who is invited),
read by rule from a line in Japanese or English, said back as a third-person fact line, and checked in a
line that tells it. Pure functions.

`extract` reads "明日の19時に中央カフェでパーティーを開くから、みんな来てね" as what = party, when = day 2 at 19:00,
where = cafe, invited = everyone; it returns None for a line with no event or appointment in it (small talk
is no news: "Good morning, Oliver.", "いい天気だね"), and for one about the past ("昨日のパーティー楽しかった").
A line is news when it names an event (events.py) with a time, a place or an invitation, or invites to a
clock time and a place (an appointment: what is then a meet-up). The words: clock.py (time), who.py (host, invited),
appointment.py (place).

`carries` says which of what, when and where a spoken line carries, normalised: "7pm", "19時", "夜7時",
"19:00" and "seven in the evening" are all 19:00; 明日/tomorrow is read from the day the line is said; a place
by its id or any of its names; what by the event's word or one of its family's (party ~ パーティー ~
get-together ~ 集まり). Telling counts only when all the slots the news has are carried (telling.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from backend.intention import clock, events, who
from backend.intention.appointment import Place, find_place, fold, names_label
from backend.intention.fact import Slots
from backend.text import normalise

__all__ = ["CHECKED", "Slots", "carries", "extract", "missing"]

#: The slots `carries` checks (those a piece of news has must all be said for it to count as told).
CHECKED = ("what", "when", "where")
_PAST = re.compile(
    r"(?:た|だった|でした|ました)(?:よ|ね|な|わ|けど|し|の)*(?:[。！？!?」]|$)|\b(?:was|were|had|went|did|enjoyed|"
    r"loved|ago|last (?:night|week))\b"
)
_DECIDED = re.compile(r"ことになった|ことにした|決まった|決めた|\bdecided\b")


def _is_past(text: str, named_day: int | None, today: int) -> bool:
    """About the past: a day before today, or said in the past tense of no later day and inviting no one."""
    if named_day is not None and named_day != today:
        return named_day < today
    norm = normalise(text)
    return bool(_PAST.search(norm)) and not _DECIDED.search(norm) and not who.is_invitation(text)


def _hour(text: str, event: events.Event | None) -> tuple[float | None, str | None]:
    """The hour the text names and, where it is a part of the day's default hour, that part. A bare hour
    (7時, at 7) is after noon from 1 to 6 (nobody meets at 3 at night) and for an evening event up to 11."""
    found = clock.clocks(text)
    if found:
        first = found[0]
        late = first.hour < 7 or (event is not None and event.evening)
        bare_pm = not first.marked and 1 <= first.hour < 12 and late and "morning" not in clock.parts(text)
        return first.hour + 12 if bare_pm else first.hour, None
    said = clock.parts(text)
    return (clock.PART_HOURS[said[0]], said[0]) if said else (None, None)


def extract(
    text: str,
    *,
    language: str,
    today: int,
    places: Sequence[Place],
    people: Mapping[str, str],
    now: float = 0.0,
    day_one_weekday: int = 0,
) -> Slots | None:
    """The slots of the invitation or appointment in `text`, or None when it holds none.

    Args:
        text: an intention, a heard line, a line of news.
        language: the text's language ("ja", "en"): what an unnamed meet-up is called.
        today: the game day the text was said or written (明日 is the next).
        places: the world's places; `where` is the id of the one the text names.
        people: person id -> display name; `host` and named `invited` are ids from it.
        now: the hour it was said (a time with no day word is the next such hour: 19時 said at 21:00 is
            tomorrow's).
        day_one_weekday: the weekday of game day 1 (0 = Monday; RETRIEVAL_DAY_ONE_WEEKDAY) for 土曜日, Saturday.
    """
    named = events.main_event(text)
    named_day = clock.said_day(text, today, day_one_weekday)
    if _is_past(text, named_day, today):
        return None
    hour, part = _hour(text, named[1] if named else None)
    day = named_day if named_day is not None or hour is None else today if hour > now else today + 1
    place = find_place(text, places)
    has_clock = hour is not None and part is None
    if named is None and not (has_clock and place is not None and who.is_invitation(text)):
        return None
    if named is not None and not (hour is not None or day is not None or place or who.is_invitation(text)):
        return None
    if named is not None and named[1].kind == "meetup" and hour is None and day is None and place is None:
        return None
    event = named[1] if named else events.BY_KIND["meetup"]
    host = who.host(text, people)
    return Slots(
        what=event.kind,
        what_words=named[0] if named else (event.ja if language == "ja" else event.en),
        host=host,
        day=day,
        hour=hour,
        part=part,
        where=place.id if place else None,
        where_name=place.name if place else None,
        invited=who.invited(text, people, host),
        written_day=today,
        weekday=clock.weekday_of(day, day_one_weekday) if day is not None else None,
    )


def _what_carried(line: str, slots: Slots) -> bool:
    family = events.BY_KIND[slots.what].family if slots.what in events.BY_KIND else slots.what
    said = events.mentions(line)
    if any(event.kind == slots.what or event.family == family for _at, _words, event in said):
        return True
    return names_label(fold(line), fold(slots.what_words))


def _hour_carried(found: list[clock.Clock], parts: list[str], slots: Slots) -> bool:
    if slots.hour is None:
        return True
    if slots.part is not None:
        low, high = clock.PART_SPANS[slots.part]
        return slots.part in parts or any(low <= c.hour < high or low <= c.hour + 24 < high for c in found)
    want = slots.hour
    return any(
        abs(c.hour - want) < 0.01 or (not c.marked and abs(c.hour % 12 - want % 12) < 0.01) for c in found
    )


def _when_carried(line: str, slots: Slots, said_on: int, now: float) -> bool:
    found, parts = clock.clocks(line), clock.parts(line)
    day_one = (slots.weekday - (slots.day - 1)) % 7 if slots.weekday is not None and slots.day else 0
    named_day = clock.said_day(line, said_on, day_one)
    if not (found or parts or named_day is not None) or not _hour_carried(found, parts, slots):
        return False
    if slots.day is None:
        return True
    if named_day is not None:
        return named_day == slots.day
    # No day word: the first such hour after the line is said.
    return slots.hour is not None and slots.day == (said_on if slots.hour > now else said_on + 1)


def _where_carried(line: str, slots: Slots, places: Sequence[Place]) -> bool:
    assert slots.where is not None
    labels = [label for place in places if place.id == slots.where for label in place.labels()]
    labels += Place(slots.where, slots.where_name or slots.where).labels()
    norm = fold(line)
    return any(names_label(norm, label) for label in labels)


def carries(
    line: str,
    slots: Slots,
    *,
    language: str,
    places: Sequence[Place] = (),
    today: int | None = None,
    now: float = 0.0,
) -> set[str]:
    """Which of what, when and where (those `slots` has) `line` says.

    Args:
        line: a spoken line.
        slots: the news it may tell.
        language: the line's language (the words of both languages count either way: a teller may say a
            place's or an event's name in the other one).
        places: the world's places (every name of the news's place counts), else its own id and name.
        today: the day the line is said (default: the day the news was written); its 明日 is the next.
        now: the hour the line is said (a time with no day word is the next such hour).
    """
    del language  # both languages' words count
    said_on = slots.written_day if today is None else today
    out = set()
    if "what" in slots.present() and _what_carried(line, slots):
        out.add("what")
    if "when" in slots.present() and _when_carried(line, slots, said_on, now):
        out.add("when")
    if slots.where is not None and _where_carried(line, slots, places):
        out.add("where")
    return out


def missing(line: str, slots: Slots, **kwargs: Any) -> list[str]:
    """The checked slots `slots` has that `line` does not carry, in CHECKED order (kwargs: `carries`')."""
    said = carries(line, slots, **kwargs)
    return [name for name in CHECKED if name in slots.present() and name not in said]
