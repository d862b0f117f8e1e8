"""Incremental text/event-stream parser (the Python twin of the C# `SseParser`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SseEvent:
    name: str
    data: str


class SseParser:
    """Feed text in any pieces; returns the events each piece completed (an event ends at a blank line)."""

    def __init__(self) -> None:
        self._line: list[str] = []
        self._data: list[str] = []
        self._event: str | None = None
        self._has_data = False
        self._last_cr = False

    def feed(self, text: str) -> list[SseEvent]:
        done: list[SseEvent] = []
        for ch in text:
            if ch == "\n" and self._last_cr:  # the "\n" of a "\r\n"
                self._last_cr = False
                continue
            self._last_cr = ch == "\r"
            if ch in "\r\n":
                self._end_line(done)
            else:
                self._line.append(ch)
        return done

    def _end_line(self, done: list[SseEvent]) -> None:
        line = "".join(self._line)
        self._line.clear()
        if not line:
            if self._has_data or self._event is not None:
                done.append(SseEvent(self._event or "message", "\n".join(self._data)))
            self._event, self._data, self._has_data = None, [], False
            return
        if line.startswith(":"):
            return  # comment / keep-alive
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
            self._has_data = True
