"""Incremental extraction of one top-level string field ("dialogue") from JSON that is still streaming.

Models stream `{"dialogue": "...", "emotion": ...}` a few characters at a time; Unity wants the words as they
come. `FieldExtractor.feed(chunk)` returns the newly decoded characters of the field's value, handling
escapes (including `\\uXXXX` surrogate pairs) split across chunk boundaries. Text before the first `{`
(prose, code fences) is skipped, as the reply parser does.
"""

from __future__ import annotations

_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class FieldExtractor:
    """Feeds on raw JSON text pieces and yields the decoded value of `field` as it grows."""

    def __init__(self, field: str = "dialogue") -> None:
        self.field = field
        self.value = ""  # everything decoded so far
        self.done = False  # the value's closing quote was seen
        self._depth = 0
        self._started = False
        self._in_string = False
        self._expect_key = False
        self._string = ""  # the key being read (depth 1) or nothing
        self._last_key: str | None = None
        self._capturing = False
        self._escape: str | None = None  # pending escape text after a backslash
        self._high_surrogate: str | None = None

    def feed(self, chunk: str) -> str:
        """Consume a piece of the raw reply; return the field's characters decoded from it."""
        out: list[str] = []
        for ch in chunk:
            if self.done:
                break
            if self._in_string:
                self._string_char(ch, out)
            else:
                self._structural_char(ch)
        text = "".join(out)
        self.value += text
        return text

    def _structural_char(self, ch: str) -> None:
        if not self._started:
            # Like the reply parser, skip anything before the first "{" (prose, code fences).
            if ch == "{":
                self._started, self._depth, self._expect_key = True, 1, True
            return
        if ch in "{[":
            self._depth += 1
        elif ch in "}]":
            self._depth -= 1
        elif ch == "," and self._depth == 1:
            self._expect_key = True
        elif ch == '"':
            self._in_string = True
            self._string = ""
            # A string value right after the wanted key, at the top level, is the one we stream.
            is_value = self._depth == 1 and not self._expect_key
            self._capturing = is_value and self._last_key == self.field
        elif ch == ":" and self._depth == 1:
            self._expect_key = False

    def _string_char(self, ch: str, out: list[str]) -> None:
        if self._escape is not None:
            self._escape += ch
            decoded = self._finish_escape()
            if decoded is not None:
                self._emit(decoded, out)
            return
        if ch == "\\":
            self._escape = ""
        elif ch == '"':
            self._close_string(out)
        else:
            self._emit(ch, out)

    def _finish_escape(self) -> str | None:
        """The escape's text once complete, else None (wait for more characters)."""
        esc = self._escape or ""
        if esc[0] != "u":
            self._escape = None
            return _SIMPLE_ESCAPES.get(esc[0], esc[0])
        if len(esc) < 5:
            return None
        self._escape = None
        try:
            return chr(int(esc[1:5], 16))
        except ValueError:
            return ""  # malformed; the final parse will reject the reply anyway

    def _emit(self, ch: str, out: list[str]) -> None:
        if self._high_surrogate is not None:
            high, self._high_surrogate = self._high_surrogate, None
            if "\udc00" <= ch <= "\udfff":
                ch = chr(0x10000 + ((ord(high) - 0xD800) << 10) + (ord(ch) - 0xDC00))
            else:
                self._append(high, out)
        if "\ud800" <= ch <= "\udbff":
            self._high_surrogate = ch  # wait: the low half may come in the next chunk
            return
        self._append(ch, out)

    def _append(self, ch: str, out: list[str]) -> None:
        if self._capturing:
            out.append(ch)
        elif self._depth == 1 and self._expect_key:
            self._string += ch

    def _close_string(self, out: list[str]) -> None:
        if self._high_surrogate is not None:
            high, self._high_surrogate = self._high_surrogate, None
            self._append(high, out)
        self._in_string = False
        if self._capturing:
            self._capturing = False
            self.done = True
        elif self._depth == 1 and self._expect_key:
            self._last_key = self._string
            self._expect_key = False
