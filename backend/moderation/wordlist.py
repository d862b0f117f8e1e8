"""The operator's word list: entries read once from a file, matched against folded text.

Japanese has no spaces between words, so an entry with any non-ASCII character matches anywhere in the text,
a space between its characters ignored (「死 ね」). An ASCII entry matches only as a whole word, so "ass"
does not trip "class" or "assistant", with the common endings -s, -es, -ed, -d, -er, -ers and -ing; the
words of a phrase may be run together or parted by punctuation ("killyourself"). An entry of four or more
letters also matches spelled out, one to three spaces or punctuation marks between each two letters
(f.u.c.k, f u c k); parted only here and there ("let's hit") it does not.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from backend.errors import ConfigError

#: The category of an entry written without a `category:` prefix.
DEFAULT_CATEGORY = "other"
#: ASCII entries with at least this many letters and digits also match spelled out with separators.
SPACED_MIN_LETTERS = 4

_PREFIX = re.compile(r"^([a-z][a-z_]*)\s*:\s*(\S.*)$", re.IGNORECASE)
_KATAKANA = re.compile(r"[\u30a1-\u30f6]")
_SPACES = re.compile(r"\s+")
# Letters of a spelled-out word are parted by one to three non-word characters; a word character never.
_SEPARATOR = r"[\W_]{1,3}"
_ENDINGS = r"(?:s|es|ed|d|er|ers|ing)?"


class Hit(NamedTuple):
    """What matched: the entry's category and the entry as written in the list."""

    category: str
    word: str


def fold(text: str) -> str:
    """NFKC (full-width to half-width, half-width kana to full-width), casefold, katakana to hiragana,
    runs of whitespace to one space."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = _KATAKANA.sub(lambda m: chr(ord(m.group()) - 0x60), folded)
    return _SPACES.sub(" ", folded).strip()


def _pattern(entry: str) -> re.Pattern[str]:
    """A folded entry as a pattern over folded text: see the module docstring."""
    if not entry.isascii():
        return re.compile(" ?".join(re.escape(c) for c in entry.replace(" ", "")))
    # ASCII letters and digits are what a word boundary means here: 「fuckあいつ」 still matches.
    body = r"[\W_]*".join(re.escape(word) for word in entry.split())
    letters = [c for c in entry if c.isalnum()]
    if len(letters) >= SPACED_MIN_LETTERS:
        # Every letter parted, or none: "let's hit" is not s-hit spelled out.
        body = f"(?:{body}|{_SEPARATOR.join(re.escape(c) for c in letters)})"
    return re.compile(rf"(?<![a-z0-9]){body}{_ENDINGS}(?![a-z0-9])")


class _Entry(NamedTuple):
    hit: Hit
    pattern: re.Pattern[str]


class WordList:
    """Entries of (category, word), folded and compiled once; `find` gives the first one in a text."""

    def __init__(self, entries: Iterable[tuple[str, str]]) -> None:
        self._entries: list[_Entry] = []
        seen: set[str] = set()
        for category, word in entries:
            folded = fold(word)
            if not folded or folded in seen:
                continue
            seen.add(folded)
            self._entries.append(_Entry(Hit(category, word.strip()), _pattern(folded)))

    @classmethod
    def parse(cls, text: str) -> WordList:
        """A list as the file holds it: one entry a line, `#` comments, an optional `category:` prefix."""
        return cls(_parse_line(line) for line in text.splitlines() if line.split("#", 1)[0].strip())

    @classmethod
    def from_file(cls, path: Path) -> WordList:
        """Read and parse a list file (UTF-8).

        Raises:
            ConfigError: the file cannot be read as UTF-8 text (the message names MODERATION_WORDS_FILE).
        """
        try:
            return cls.parse(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"MODERATION_WORDS_FILE: cannot read the word list {str(path)!r}: {exc}"
            ) from exc

    def __len__(self) -> int:
        return len(self._entries)

    def find(self, text: str) -> Hit | None:
        """The entry found earliest in `text` (ties: the longer match, then the list's order), or None."""
        folded = fold(text)
        best: tuple[int, int, int, Hit] | None = None
        for order, entry in enumerate(self._entries):
            found = entry.pattern.search(folded)
            if found and (best is None or (found.start(), -len(found.group()), order) < best[:3]):
                best = (found.start(), -len(found.group()), order, entry.hit)
        return best[3] if best else None


def _parse_line(line: str) -> tuple[str, str]:
    entry = line.split("#", 1)[0].strip()
    prefixed = _PREFIX.match(entry)
    if prefixed:
        return prefixed.group(1).lower(), prefixed.group(2).strip()
    return DEFAULT_CATEGORY, entry
