"""Game time: a day number (1-based) and hours into the day, as Unity reports them."""

from __future__ import annotations

from datetime import UTC, datetime

MINUTES_PER_DAY = 24 * 60


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


def utcnow() -> datetime:
    """Aware UTC now (SQLModel stores aware datetimes; SQLite reads them back as UTC)."""
    return datetime.now(UTC)
