"""Game time: a day number (1-based) and hours into the day, as Unity reports them."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

MINUTES_PER_DAY = 24 * 60
#: A request's `time_of_day` in words (its schema's description).
HOURS_DOC = (
    'Hours into the game day as a number, e.g. 14.5 for 14:30 (an "HH:MM" string such as "14:30" is read '
    "the same)."
)
_CLOCK = re.compile(r"(\d{1,2}):([0-5]\d)(?::([0-5]\d))?")


def game_minutes(day: int, time_of_day: float) -> float:
    """Minutes since the start of day 1."""
    return (day - 1) * MINUTES_PER_DAY + time_of_day * 60.0


def from_game_minutes(minutes: float) -> tuple[int, float]:
    day = int(minutes // MINUTES_PER_DAY) + 1
    return day, (minutes - (day - 1) * MINUTES_PER_DAY) / 60.0


def format_clock(time_of_day: float) -> str:
    """14.5 -> '14:30'."""
    total = int(round(time_of_day * 60)) % MINUTES_PER_DAY
    return f"{total // 60:02d}:{total % 60:02d}"


def read_hours(value: Any) -> Any:
    """A game hour as sent: an "HH:MM" (or "HH:MM:SS") string is read as hours ("9:30" -> 9.5); another string
    that is no number is refused with the hint; anything else is left to the number's own validation."""
    if not isinstance(value, str):
        return value
    clock = _CLOCK.fullmatch(value.strip())
    if clock is not None:
        hours, minutes, seconds = clock.groups()
        return int(hours) + int(minutes) / 60 + int(seconds or 0) / 3600
    try:
        float(value)
    except ValueError:
        raise ValueError(
            f'{value[:40]!r} is no time of day: send hours as a number (9.5 for 9:30) or an "HH:MM" string'
        ) from None
    return value


#: A request's game hour, from 0 to under 24: a number of hours, or "HH:MM" (the bounds sit before the reading,
#: so the JSON Schema keeps them as `minimum`/`exclusiveMaximum`).
GameHour = Annotated[float, Field(ge=0, lt=24), BeforeValidator(read_hours)]
#: The same up to 24 itself, where a request has always taken the end of the day.
GameHourTo24 = Annotated[float, Field(ge=0, le=24), BeforeValidator(read_hours)]


def utcnow() -> datetime:
    """Aware UTC now (SQLModel stores aware datetimes; SQLite reads them back as UTC)."""
    return datetime.now(UTC)
