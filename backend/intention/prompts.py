"""The morning revision of an agent's intentions: what it is built from (facts) and how it is asked.

Like every prompt, the reply's field is described in words and never shown as an example (a small model
copies examples); the provider's grammar enforces the shape.
"""

from __future__ import annotations

from typing import Any

from backend.gametime import format_clock
from backend.llm.base import Message

LANGUAGES = {"ja": "Japanese (日本語)", "en": "English"}

SYSTEM = (
    "You keep track of what is on the mind of {name}, a character in a small town, at the start of day {day}.\n"
    "From what the character meant to do yesterday, the important things it remembers and the news it heard, "
    "write what it means to do today and soon: plans, appointments it will keep, people it wants to tell "
    "something, worries. Keep every time and place of an appointment it will keep, said from today "
    "(today, tomorrow, or day N). Drop what is over or no longer matters. First person, {language}.\n"
    "Reply with a JSON object with one field:\n"
    "- intentions: up to {max_lines} short items, the most important first, each one sentence in {language}; "
    "none when nothing in particular is on the character's mind"
)


def build_messages(facts: dict[str, Any]) -> list[Message]:
    language = LANGUAGES.get(facts["language"], facts["language"])
    system = SYSTEM.format(
        name=facts["name"], day=facts["day"], language=language, max_lines=facts["max_lines"]
    )
    lines = [f"Character: {facts['name']}. {facts['persona']}".strip(), f"Today is day {facts['day']}."]
    lines += _section("What the character meant to do until now", facts["previous"])
    lines += _section("Important memories", facts["important"])
    lines += _section("News the character heard", facts["heard"])
    lines.append(f"Write {facts['name']}'s intentions for day {facts['day']}.")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]


def dated(text: str, day: int, time_of_day: float) -> str:
    return f"(day {day}, {format_clock(time_of_day)}) {text}"


def _section(title: str, entries: list[str]) -> list[str]:
    return [f"{title}:", *[f"- {entry}" for entry in entries]] if entries else []
