"""A world's places by name: how a text names one of them (its display name, its id, another name it goes by),
compared width-, case- and accent-folded. Pure functions, used wherever words name a place (an
appointment, a piece of news, the places a prompt offers).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from backend.text import normalise

_ACCENTS = re.compile("[\u0300-\u036f]")


def fold(text: str) -> str:
    """`normalise` and Latin accents off ("Café" -> "cafe"); Japanese is left whole (が stays が)."""
    decomposed = unicodedata.normalize("NFD", normalise(text))
    return unicodedata.normalize("NFC", _ACCENTS.sub("", decomposed))


@dataclass(frozen=True)
class Place:
    id: str
    name: str
    #: Other names the place goes by (its name in the other language, a short name).
    aliases: tuple[str, ...] = ()

    def labels(self) -> list[str]:
        """Its names and id as compared with a text ("corner_cafe" is also "corner cafe")."""
        spaced = re.sub(r"[_-]+", " ", self.id)
        return list(
            dict.fromkeys(fold(label).strip() for label in (self.name, *self.aliases, self.id, spaced))
        )


def names_label(text: str, label: str) -> bool:
    """Whether folded `text` says the folded `label` (a Latin label only as whole words: "parking" is no park)."""
    if len(label) < 2 or label not in text:
        return False
    return not label.isascii() or re.search(rf"\b{re.escape(label)}\b", text) is not None


def find_place(text: str, places: Iterable[Place]) -> Place | None:
    """The place `text` names: the longest of the places' names (or ids) found in it."""
    norm = fold(text)
    best: tuple[int, Place] | None = None
    for place in places:
        for label in place.labels():
            if names_label(norm, label) and (best is None or len(label) > best[0]):
                best = (len(label), place)
    return best[1] if best else None
