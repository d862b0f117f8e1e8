"""Visitors' display names: chosen by a stranger and shown in every prompt, so checked like what they say.

A name is what the characters call the visitor, nothing more: at most `MAX_NAME_CHARS` characters (after
NFKC) of letters, digits, combining marks, spaces and `NAME_PUNCTUATION`; no quotes, brackets, colons or
line breaks (a transcript line is "Name: line", and prompts quote a visitor's name), no invisible characters.
A name moderation holds back, or one that is (or impersonates) a character of the world, is refused.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from backend.errors import InvalidInput

#: The longest display name (characters, after NFKC): a name, not a sentence.
MAX_NAME_CHARS = 24
#: Punctuation a name may hold besides letters, digits, marks and spaces.
NAME_PUNCTUATION = "・ー-_.'&"
NAME_RULE = (
    f"1-{MAX_NAME_CHARS} characters of letters (any script), digits, spaces and {' '.join(NAME_PUNCTUATION)}"
)
#: Honorifics a name may wear and still be the same person's ("ひかりちゃん" is ひかり).
_HONORIFICS = re.compile(r"(さん|ちゃん|くん|君|様|さま|殿|氏|先生|-?san|-?chan|-?kun|-?sama)$")
_KATAKANA = re.compile(r"[\u30a1-\u30f6]")


def clean_name(name: str) -> str:
    """The name as stored: NFKC, runs of spaces made one, stripped.

    Raises:
        InvalidInput: the name breaks NAME_RULE (field `display_name`, what to send instead).
    """
    text = " ".join(unicodedata.normalize("NFKC", name).split())
    bad = sorted({c for c in text if not _allowed(c)})
    if bad:
        shown = ", ".join(repr(c) if c.isprintable() else f"U+{ord(c):04X}" for c in bad[:5])
        raise _refused(f"display_name may not hold {shown}: a display name is {NAME_RULE}")
    if not text or len(text) > MAX_NAME_CHARS:
        raise _refused(f"display_name has {len(text)} characters: a display name is {NAME_RULE}")
    if not any(c.isalnum() for c in text):
        raise _refused(f"display_name has no letter or digit: a display name is {NAME_RULE}")
    return text


def _allowed(c: str) -> bool:
    category = unicodedata.category(c)
    return c == " " or c in NAME_PUNCTUATION or category[0] in "LN" or category in ("Mn", "Mc")


def impersonated(name: str, characters: Iterable[str]) -> str | None:
    """The character's name that `name` is or imitates (case, width, kana, spaces and an honorific aside),
    or None."""
    mine = _skeleton(name)
    for character in characters:
        if mine and mine == _skeleton(character):
            return character
    return None


def _skeleton(name: str) -> str:
    folded = unicodedata.normalize("NFKC", name).casefold()
    folded = _KATAKANA.sub(lambda m: chr(ord(m.group()) - 0x60), folded)
    folded = "".join(c for c in folded if c.isalnum())
    return _HONORIFICS.sub("", folded) or folded


def check_name(name: str, characters: Iterable[str], blocked: bool) -> str:
    """The name as stored, after every rule (`blocked`: moderation held it back).

    Raises:
        InvalidInput: the name breaks a rule; the message says which and what to send instead.
    """
    text = clean_name(name)
    if blocked:
        raise _refused("display_name is not allowed at this booth: choose another name")
    same = impersonated(text, characters)
    if same is not None:
        raise _refused(
            f"display_name {text!r} is the name of the character {same!r} in this world: a visitor's name "
            "must not be a character's; choose another"
        )
    return text


def _refused(message: str) -> InvalidInput:
    return InvalidInput(message, details={"field": "display_name", "rule": NAME_RULE})
