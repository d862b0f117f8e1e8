"""Banned openings as a logit bias, for providers that tokenize in process (llama.cpp).

A re-ask bans the openings of the text it refused (`GenerateOptions.banned_openings`, llm/reask.py). A logit
bias holds for every position of the reply, not only its start, so one token per opening is banned: the
first of its first few tokens that is a word (two characters or more, starting with a letter or digit, or
one ideograph), as written at the start of a text and after a space. Never a punctuation mark, a space, a one
letter word ("I") or a byte of a character: banning one of those would ban a part of every other reply too.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Protocol

#: The bias of a banned token: -100 is "never" in practice (OpenAI's convention, llama.cpp's too).
BANNED_BIAS = -100.0
#: Tokens at the start of an opening looked at for the one to ban.
LOOKAHEAD_TOKENS = 3


class Tokenizer(Protocol):
    """What `logit_bias` needs of a model: llama-cpp-python's `Llama` has it."""

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]: ...

    def detokenize(self, tokens: list[int]) -> bytes: ...


def logit_bias(model: Tokenizer, openings: Iterable[str]) -> dict[int, float]:
    """Token id -> BANNED_BIAS for the first word token of each opening, written alone and after a space."""
    banned: dict[int, float] = {}
    for text in openings:
        text = text.strip()
        for variant in (text, " " + text) if text else ():
            token = first_word_token(model, variant)
            if token is not None:
                banned[token] = BANNED_BIAS
    return banned


def first_word_token(model: Tokenizer, text: str) -> int | None:
    """The first of the first LOOKAHEAD_TOKENS tokens of `text` that is a word (see the module), or None."""
    for token in model.tokenize(text.encode("utf-8"), add_bos=False, special=False)[:LOOKAHEAD_TOKENS]:
        try:
            piece = model.detokenize([token]).decode("utf-8").strip()
        except UnicodeDecodeError:
            return None  # a byte of a character: the tokens after it are parts of characters too
        if _is_word(piece):
            return token
    return None


def _is_word(piece: str) -> bool:
    if len(piece) == 1:
        return unicodedata.name(piece, "").startswith("CJK UNIFIED IDEOGRAPH")
    return bool(piece) and piece[0].isalnum()  # not "'m" nor "-ing": the rest of some other word
