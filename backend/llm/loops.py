"""Loops cut out of a model's free text: a sentence or phrase said again and again.

A small model sampled cool falls into loops until its token limit: "I'm going to spend time at Oak Bakery.
I'm going to spend time at Oak Bakery. ...", "08:28, 08:28, 08:28, ...", 「明日ね。明日ね。明日ね。」. The text
is cut where it first says again a piece it already said (a piece: what lies between sentence ends, commas
and 、), so the words before the loop are the reply; short pieces ("yes, yes", "うん、うん") are speech, not
loops, and stay. The cut never refuses a reply (a refusal costs a small model a re-ask, and its background
jobs their retries): what is left is checked like any reply.
"""

from __future__ import annotations

import re

from backend.text import normalise

#: A piece repeated counts as a loop only when it weighs this much once normalised (a Latin letter or digit
#: 1, a kana or kanji 2: 明日ね weighs 6, うん 4, "yes" 3).
MIN_PIECE_WEIGHT = 5
_PIECES = re.compile(r"[^,、，;；.!?。！？…]+[,、，;；.!?。！？…]*\s*")


def unlooped(text: str) -> str:
    """`text` cut before the first piece it says a second time (see the module docstring)."""
    seen: set[str] = set()
    kept = 0
    for match in _PIECES.finditer(text):
        piece = normalise(match.group()).strip(" ,、，;；.!?。！？…")
        if _weight(piece) >= MIN_PIECE_WEIGHT and piece in seen:
            return text[:kept].rstrip(" ,、，;；")
        seen.add(piece)
        kept = match.end()
    return text


def _weight(piece: str) -> int:
    return sum(2 if ord(ch) >= 0x3040 else 1 for ch in piece if not ch.isspace())
