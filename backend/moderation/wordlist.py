"""The operator's word list: entries read once from a file, matched against folded text.

Both the entries and the text are folded first (`fold`: NFKC, case, katakana to hiragana, small kana to
full size, accents, invisible characters and look-alike letters off; see folding.py), so 死\u200bね, ＦＵＣＫ,
fück and fuсk (a Cyrillic с) are what they look like.

Japanese has no spaces between words, so an entry with any non-ASCII character matches anywhere in the text,
even inside a longer word. Up to four spaces, punctuation marks, symbols, emoji or long-vowel marks may
stand between its characters (死 ね, 死、ね, 死・ね, 死😀ね, 死ーね), but not a sentence end (。 ! ?). A
character in the middle of an entry of three or more may be hidden behind ○ ● 〇 × ＊ (ち○こ), and a kana
may be written with the kanji it looks like (コ口ス with 口 for ロ, 力 for カ, 二 for ニ).

An ASCII entry matches only as a whole word, so "ass" does not trip "class" or "assistant", with the common
endings -s, -es, -ed, -d, -er, -ers and -ing; the words of a phrase may be run together or parted by
punctuation ("killyourself"). Within a word a letter may be written as a digit or sign (1 ! | for i, 0 for
o, 3 for e, 4 @ for a, 5 $ for s, 7 + for t, v for u, 8 for b, 9 for g), though never with more digits
than letters ("53x" is a zoom, "5ex" is not); repeated (fuuuck); or hidden behind * (f*ck, fu*k, f**k):
never the first letter, and the last only in an entry of four letters or more (f*** is fuck, se* is
nothing). Up to three punctuation marks, symbols or emoji may stand between two letters (fu-ck, fu😀ck),
never a space. An entry of three or more letters also matches spelled out, one to three spaces or
punctuation marks between each two letters (f.u.c.k, f u c k, k y s); parted only here and there ("let's
hit") it does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from backend.errors import ConfigError
from backend.moderation.folding import fold

#: The category of an entry written without a `category:` prefix.
DEFAULT_CATEGORY = "other"
#: ASCII entries with at least this many letters and digits also match spelled out with separators.
SPACED_MIN_LETTERS = 3
#: ASCII entries with at least this many letters may have their last letter hidden too (f***).
HIDDEN_LAST_MIN_LETTERS = 4

_PREFIX = re.compile(r"^([a-z][a-z_]*)\s*:\s*(\S.*)$", re.IGNORECASE)
# Digits and signs written for a letter (after fold: full-width ＄ is already $).
_LEET = {
    "a": "4@",
    "b": "8",
    "e": "3",
    "g": "9",
    "i": "1!|l\u00a1",
    "l": "1|",
    "o": "0",
    "s": "5$",
    "t": "7+",
    "u": "v",
    "x": "\u00d7",
}
# A letter hidden behind a sign: f*ck. Never the first letter, so "***" is nothing in particular.
_HIDDEN = "*"
_HIDDEN_JA = "○●◯〇◎×✕☓*□■"
# Kanji that look like a kana (after fold, the entry's kana is hiragana): コ口ス, 力ス, 二.
_KANA_LOOKALIKE = {
    "ろ": "口", "か": "力", "え": "工", "に": "二", "と": "卜", "は": "八", "た": "夕", "ひ": "匕",
    "ち": "千", "お": "才", "ぬ": "又", "む": "厶",
}  # fmt: skip
# Between two letters of a word: a few signs, symbols or emoji, never a space or a letter; after a letter or
# digit only, and never beside a hidden letter (so `${hit` and `s*(.*` are not words).
_GLUE = r"(?:(?<=[a-z0-9])(?:[^\w\s*]|_){1,3}(?!\*))?"
# Letters of a spelled-out word are parted by one to three non-word characters; a word character never.
_SEPARATOR = r"[\W_]{1,3}"
# Between two characters of a Japanese entry: spaces, signs, emoji, long-vowel marks; not a sentence end.
_GAP_JA = r"(?:[^\w\s。!?]|[ ー_]){0,4}"
_ENDINGS = ("s", "es", "ed", "d", "er", "ers", "ing")


class Hit(NamedTuple):
    """What matched: the entry's category and the entry as written in the list."""

    category: str
    word: str


def _letter(char: str, *, hidden: bool = False) -> str:
    """A class of what may be written for one letter of an ASCII entry (`hidden`: * too)."""
    if not char.isalpha():
        return re.escape(char)
    chars = char + _LEET.get(char, "") + (_HIDDEN if hidden else "")
    return "[" + "".join(re.escape(c) for c in chars) + "]"


def _words(entry: str) -> list[list[str]]:
    """For each word of an ASCII entry, a pattern for each of its letters: what may be written, repeated."""
    count, seen, words = len(entry.replace(" ", "")), 0, []
    for word in entry.split():
        tokens = []
        for char in word:
            # Never the first letter hidden, nor the last of a short entry: "se*" and "5**" are not sex.
            hidden = 0 < seen and (seen < count - 1 or count >= HIDDEN_LAST_MIN_LETTERS)
            tokens.append(_letter(char, hidden=hidden) + (f"{re.escape(char)}*" if char.isalpha() else ""))
            seen += 1
        words.append(tokens)
    return words


def _japanese(entry: str) -> re.Pattern[str]:
    chars = [c for c in entry if c not in " ー"]
    hidden = len(chars) >= 3
    tokens = []
    for i, char in enumerate(chars):
        alternatives = char + _KANA_LOOKALIKE.get(char, "")
        if hidden and 0 < i < len(chars) - 1:
            alternatives += _HIDDEN_JA
        tokens.append(
            re.escape(char) if len(alternatives) == 1 else f"[{''.join(re.escape(c) for c in alternatives)}]"
        )
    return re.compile(_GAP_JA.join(tokens))


def _pattern(entry: str) -> re.Pattern[str]:
    """A folded entry as a pattern over folded text: see the module docstring."""
    if not entry.isascii():
        return _japanese(entry)
    words = _words(entry)
    # The first letter is matched before the pattern's alternatives (a search can skip to it quickly), and
    # only then is the character before it checked: ASCII letters and digits are what a word boundary
    # means here, so 「fuckあいつ」 still matches.
    lead = _letter(entry[0])
    words[0][0] = f"{re.escape(entry[0])}*" if entry[0].isalpha() else ""
    body = r"[\W_]*".join(_GLUE.join(tokens) for tokens in words)
    letters = [c for c in entry if c.isalnum()]
    if len(letters) >= SPACED_MIN_LETTERS and entry[0].isalnum():
        # Every letter parted, or none: "let's hit" is not s-hit spelled out.
        body += "|" + "".join(_SEPARATOR + _letter(c) for c in letters[1:])
    endings = "|".join("".join(_letter(c) for c in ending) for ending in _ENDINGS)
    return re.compile(rf"{lead}(?<![a-z0-9][\s\S])(?:{body})(?:{endings})?(?![a-z0-9])")


class _Entry(NamedTuple):
    hit: Hit
    pattern: re.Pattern[str]
    #: Digits a match may have beyond its letters: the entry's own (911), or any for a Japanese entry.
    digits: int


class WordList:
    """Entries of (category, word), folded and compiled once; `find` gives the first one in a text."""

    def __init__(self, entries: Iterable[tuple[str, str]]) -> None:
        self._entries: list[_Entry] = []
        seen: set[str] = set()
        for category, word in entries:
            folded = fold(word)
            # A long-vowel mark is skipped between characters: an entry of nothing else would match anything.
            if not folded.strip(" ー") or folded in seen:
                continue
            seen.add(folded)
            digits = sum(c.isdigit() for c in folded) if folded.isascii() else len(folded)
            self._entries.append(_Entry(Hit(category, word.strip()), _pattern(folded), digits))

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
            found = _search(entry, folded)
            if found and (best is None or (found.start(), -len(found.group()), order) < best[:3]):
                best = (found.start(), -len(found.group()), order, entry.hit)
        return best[3] if best else None


def _search(entry: _Entry, text: str) -> re.Match[str] | None:
    """The entry's first match in which digits for letters do not outnumber letters: "53x" is a zoom."""
    found = entry.pattern.search(text)
    while found and _digits_for_letters(found.group()) - entry.digits > 0:
        found = entry.pattern.search(text, found.start() + 1)
    return found


def _digits_for_letters(said: str) -> int:
    return sum(c.isdigit() for c in said) - sum(c.isalpha() for c in said)


def _parse_line(line: str) -> tuple[str, str]:
    entry = line.split("#", 1)[0].strip()
    prefixed = _PREFIX.match(entry)
    if prefixed:
        return prefixed.group(1).lower(), prefixed.group(2).strip()
    return DEFAULT_CATEGORY, entry
