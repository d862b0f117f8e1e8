"""What an agent wants to tell a partner it has not told yet, and whether a line told it. Pure functions.

An item is one of the speaker's own intention lines, or news it heard (a `Told` row where it was the
listener) within `fresh_days`. Each item has a key from whose news it is and its words, so that an agent
tells each person once, nobody is told their own news, and a listener who already heard it (from anyone)
is not told again.

Told means the slots were said: an item that is an invitation or appointment (its `slots`, slots.py) counts
as told only by a line that carries its what, when and where (normalised: "7pm" is "19時"); a line that
drops one is a partial telling, not recorded, so the item is offered again on the next line or talk. An
item with no slots (other news) counts by its words: TOLD_COVERAGE of them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from backend.intention import appointment as appt
from backend.intention import slots as news
from backend.text import is_japanese, normalise, token_set

#: Share of an item's words a line must say for the item to count as told.
TOLD_COVERAGE = 0.4


@dataclass(frozen=True)
class Tellable:
    """Something the speaker may tell: its own intention (`origin_id` is the speaker) or heard news."""

    key: str
    text: str
    origin_id: str
    origin_name: str
    written_day: int
    #: Who the speaker heard it from (None for its own intention).
    heard_from: str | None = None
    #: What, when, where... when it is an invitation or appointment (`with_slots`), else None.
    slots: news.Slots | None = None

    @property
    def own(self) -> bool:
        return self.heard_from is None

    def facts(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "text": self.text,
            "origin_id": self.origin_id,
            "origin_name": self.origin_name,
            "written_day": self.written_day,
            "own": self.own,
            "heard_from": self.heard_from,
            "slots": self.slots.to_dict() if self.slots else None,
        }


def item_key(origin_id: str, text: str, places: Sequence[appt.Place] = (), *, written_day: int = 1) -> str:
    """The same news has the same key, whoever passes it on and whatever the day: an event is keyed by its
    day, hour and place alone (明日の19時 on day 1 is 今日の19時 on day 2, and a guest who invites a friend
    to the host's party tells of the same event); other news by whose it is and its words."""
    found = appt.find_appointment(text, places, written_day=written_day, written_hour=0.0) if places else None
    what = (
        f"event|{found.day}|{found.start:g}|{found.poi_id}"
        if found
        else f"{origin_id}\n{normalise(text).strip()}"
    )
    return hashlib.sha1(what.encode()).hexdigest()[:24]


def candidates(
    speaker_id: str,
    speaker_name: str,
    intention_lines: Sequence[dict[str, Any]],
    heard: Iterable[Any],
    names: dict[str, str],
    *,
    places: Sequence[appt.Place] = (),
    today: int,
    fresh_days: int,
) -> list[Tellable]:
    """The speaker's items, own intentions first (newest first), then news heard within `fresh_days`."""
    out: list[Tellable] = []
    for line in intention_lines:
        text = str(line.get("text") or "").strip()
        if text:
            day = int(line.get("day") or today)
            key = item_key(speaker_id, text, places, written_day=day)
            out.append(Tellable(key, text, speaker_id, speaker_name, day))
    for row in sorted(heard, key=lambda r: (-r.day, -r.time_of_day)):
        if today - row.day > fresh_days or row.origin_id == speaker_id:
            continue
        origin = names.get(row.origin_id, row.origin_id)
        teller = names.get(row.teller_id, row.teller_id)
        out.append(Tellable(row.item_key, row.text, row.origin_id, origin, row.written_day, teller))
    seen: set[str] = set()
    return [t for t in out if not (t.key in seen or seen.add(t.key))]  # type: ignore[func-returns-value]


def untold(items: Sequence[Tellable], partner_id: str, known_keys: set[str]) -> list[Tellable]:
    """Items the partner has not heard (from this speaker or anyone) and that are not its own news."""
    return [t for t in items if t.origin_id != partner_id and t.key not in known_keys]


def with_slots(
    item: Tellable,
    places: Sequence[appt.Place],
    people: Mapping[str, str],
    *,
    day_one_weekday: int = 0,
) -> Tellable:
    """`item` with the slots of its words (read on the day they were written), when they hold an event."""
    language = "ja" if is_japanese(item.text) else "en"
    found = news.extract(
        item.text, language=language, today=item.written_day, places=places, people=people,
        day_one_weekday=day_one_weekday,
    )  # fmt: skip
    return replace(item, slots=found)


@dataclass(frozen=True)
class Telling:
    """Whether a line told an item, and the slots it left out (what, when, where; empty when told)."""

    told: bool
    missing: tuple[str, ...] = ()


def check(
    line: str, item: Tellable, *, day: int | None = None, hour: float = 0.0, places: Sequence[appt.Place] = ()
) -> Telling:
    """Whether `line`, said on `day` at `hour`, tells `item`: every slot it has carried, or (an item with no
    slots) TOLD_COVERAGE of its words (Japanese by character bigrams)."""
    if item.slots is not None and item.slots.present():
        left = news.missing(
            line, item.slots, language="ja" if is_japanese(line) else "en", places=places, today=day, now=hour
        )
        return Telling(not left, tuple(left))
    want = token_set(item.text)
    if not want:
        return Telling(False)
    return Telling(len(want & token_set(line)) / len(want) >= TOLD_COVERAGE)


def told_in(
    line: str, item: Tellable, *, day: int | None = None, hour: float = 0.0, places: Sequence[appt.Place] = ()
) -> bool:
    """Whether `line` counts as telling `item` (`check`)."""
    return check(line, item, day=day, hour=hour, places=places).told
