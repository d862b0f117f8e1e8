"""`fold`: a text as the word list compares it, with the disguises a visitor can type taken off.

In order: the spacing voiced marks (゛ ゜ ﾞ ﾟ) become the combining ones; NFKC (full-width to half-width,
half-width kana to full-width, 𝐟𝐮𝐜𝐤 and ⓕⓤⓒⓚ to fuck); NFD, then every combining mark dropped except the
kana voicing marks (fück to fuck, zalgo text to plain text, but が stays が and never becomes か), and
NFC again; control and format characters dropped (zero-width spaces and joiners, soft hyphens, bidi
controls, tag characters), and variation selectors, private-use and blank-looking filler characters
(U+3164); look-alike letters to the ASCII letter they imitate (Cyrillic с, Greek ο: `lookalikes.txt`);
case folded; katakana to hiragana and small kana to full size (セツクス = セックス); runs of whitespace to
one space. Punctuation, symbols, emoji, digit and symbol substitutions are left in place: the word list's
patterns decide where they may stand for a letter or be skipped (wordlist.py).

This is for matching only; what is stored is cleaned by `invisible.clean`, never folded.
"""

from __future__ import annotations

import re
import unicodedata

from backend.moderation.lookalikes import lookalikes

_VOICING = re.compile("[\u309b\u309c\uff9e\uff9f]")
_COMBINING_VOICING = {"\u309b": "\u3099", "\u309c": "\u309a", "\uff9e": "\u3099", "\uff9f": "\u309a"}
_KANA_VOICING = frozenset("\u3099\u309a")
#: Letters that show as nothing: Hangul fillers, the braille blank, the Khmer inherent vowels.
BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u17b4\u17b5")
# Small kana to full size: ぁ to あ, っ to つ, ゕ to か.
_SMALL_KANA = dict(zip("ぁぃぅぇぉっゃゅょゎゕゖ", "あいうえおつやゆよわかけ", strict=True))
_SPACES = re.compile(r"\s+")
# Below this code point a decision is kept; above it, worked out again each time (the table stays small).
_CACHED_BELOW = 0x10000


def _decide(code: int) -> str | None:
    """What the folding table makes of one code point (None: dropped)."""
    char = chr(code)
    if char in _LOOKALIKE:
        return _LOOKALIKE[char]
    if 0x30A1 <= code <= 0x30F6:  # katakana, then the small ones to full size
        char = chr(code - 0x60)
        return _SMALL_KANA.get(char, char)
    if char in _SMALL_KANA:
        return _SMALL_KANA[char]
    category = unicodedata.category(char)
    if category == "Cc":
        return " " if char.isspace() else None
    if category in ("Cf", "Co", "Cs") or char in BLANK_LETTERS:
        return None
    if category[0] == "M" and char not in _KANA_VOICING:
        return None
    return char


class _Table(dict[int, str | None]):
    """`str.translate`'s table, filled in as characters are first seen (C-speed lookups after that)."""

    def __missing__(self, code: int) -> str | None:
        decided = _decide(code)
        if code < _CACHED_BELOW:
            self[code] = decided
        return decided


_LOOKALIKE = lookalikes()
_TABLE = _Table()


def fold(text: str) -> str:
    """`text` as the word list compares it (see the module docstring)."""
    if _VOICING.search(text):
        text = _VOICING.sub(lambda mark: _COMBINING_VOICING[mark.group()], text)
    text = unicodedata.normalize("NFKC", text)
    text = unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).translate(_TABLE))
    folded = text.casefold()
    if folded != text and not folded.isascii():
        # Casefolding made new characters (İ to i and a combining dot): they go through the table too.
        folded = folded.translate(_TABLE)
    return _SPACES.sub(" ", folded).strip()
