"""Loops cut out of a model's free text: a sentence or phrase said again and again.

A small model sampled cool falls into loops until its token limit: "I'm going to spend time at Oak Bakery.
I'm going to spend time at Oak Bakery. ...", "08:28, 08:28, 08:28, ...", 「明日ね。明日ね。明日ね。」. The text
is cut where it first says again a piece it already said (a piece: what lies between sentence ends, commas
and 、), so the words before the loop are the reply; short pieces ("yes, yes", "うん、うん") are speech, not
loops, and stay, up to MAX_SHORT_REPEATS in a row ("no, no, no, no, ..." is cut after the third). The cut never refuses a reply (a refusal costs a small model a re-ask, and its background
jobs their retries): what is left is checked like any reply.
"""

from __future__ import annotations

import re

from backend.text import normalise

#: A piece repeated counts as a loop only when it weighs this much once normalised (a Latin letter or digit
#: 1, a kana or kanji 2: 明日ね weighs 6, うん 4, "yes" 3).
MIN_PIECE_WEIGHT = 5
#: A lighter piece said this many times in a row is kept: "no, no, no" is speech; SmolLM2's interview answer
#: "no, no, no, ..." to its token limit is a loop, cut after the third.
MAX_SHORT_REPEATS = 3
_PIECES = re.compile(r"[^,、，;；.!?。！？…]+[,、，;；.!?。！？…]*\s*")


def unlooped(text: str) -> str:
    """`text` cut before the first piece it says a second time (see the module docstring)."""
    seen: set[str] = set()
    kept, last, run = 0, None, 0
    for match in _PIECES.finditer(text):
        piece = normalise(match.group()).strip(" ,、，;；.!?。！？…")
        run = run + 1 if piece == last else 1
        if (_weight(piece) >= MIN_PIECE_WEIGHT and piece in seen) or (piece and run > MAX_SHORT_REPEATS):
            return text[:kept].rstrip(" ,、，;；")
        seen.add(piece)
        last, kept = piece, match.end()
    return text


def _weight(piece: str) -> int:
    return sum(2 if ord(ch) >= 0x3040 else 1 for ch in piece if not ch.isspace())
