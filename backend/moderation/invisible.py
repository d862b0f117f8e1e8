"""Characters a reader cannot see, in text a visitor sends: what to keep of them, and whether anything is left.

`clean` is for text that will be stored and shown (a visitor's line, a display name): it drops control
characters but the line break and the tab, format characters (zero-width space, soft hyphen, bidi
controls, byte-order mark, tag characters) and lone surrogates, and keeps only what emoji and scripts need:
a zero-width joiner or non-joiner between two visible characters (👨‍👩‍👧), one variation selector after a
character (❤️, 葛󠄀), never a run of them (a run carries hidden text). `visible` and `is_blank` say whether
a text has anything to see at all ("\\u0000\\u200b" has not). Matching is `fold`'s business, not these.
"""

from __future__ import annotations

import re
import unicodedata

from backend.moderation.folding import BLANK_LETTERS

_JOINERS = "\u200c\u200d"
_SELECTORS = "\ufe00-\ufe0f\U000e0100-\U000e01ef\u180b-\u180d\u180f"
# A joiner at either end of the text or beside whitespace joins nothing.
_LOOSE_JOINER = re.compile(rf"(?<!\S)[{_JOINERS}]+|[{_JOINERS}]+(?!\S)")
_JOINER_RUN = re.compile(rf"([{_JOINERS}])[{_JOINERS}]+")
# A variation selector chooses the look of the character before it: one is enough, and it needs a character.
_SELECTOR_RUN = re.compile(rf"([{_SELECTORS}])[{_SELECTORS}]+")
_LOOSE_SELECTOR = re.compile(rf"(?:(?<!\S)|(?<=[{_JOINERS}]))[{_SELECTORS}]+")


def _stored(char: str) -> bool:
    category = unicodedata.category(char)
    if category == "Cc":
        return char in "\n\t"
    if category == "Cf":
        return char in _JOINERS
    return category != "Cs"


def clean(text: str) -> str:
    """`text` as it may be stored: invisible characters dropped, line breaks as "\\n" (see the module
    docstring). Spaces are left as they are (strip them where a field wants it)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = "".join(char for char in text if _stored(char))
    text = _SELECTOR_RUN.sub(r"\1", _JOINER_RUN.sub(r"\1", text))
    text = _LOOSE_SELECTOR.sub("", text)
    return _LOOSE_JOINER.sub("", text)


def _seen(char: str) -> bool:
    category = unicodedata.category(char)
    return not (
        char.isspace() or category[0] in "MZ" or category in ("Cc", "Cf", "Cs") or char in BLANK_LETTERS
    )


def visible(text: str) -> str:
    """The characters of `text` that show: without whitespace, control and format characters, combining
    marks and variation selectors, and blank-looking letters (U+3164 HANGUL FILLER, U+2800 the braille
    blank). For judging and counting a text, not for storing it (that is `clean`)."""
    return "".join(char for char in text if _seen(char))


def is_blank(text: str) -> bool:
    """Whether `text` shows nothing at all: only whitespace and invisible characters (see `visible`)."""
    return not any(_seen(char) for char in text)
