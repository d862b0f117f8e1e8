"""What a turn's speaker remembers of visitors' words: apart from its own memories, shown only as quoted data.

A memory that came from a visitor's words carries `VISITOR_TAG` and the visitors' ids (backend/memory). A
turn splits its recalled memories into the speaker's own and those (`Heard`); the prompt shows the latter in
a quoted block under the visitor rule, VISITOR_MENTIONS decides how visitors who are not in the conversation
appear in them (by name, as "a visitor", or not at all), and what the speaker says with them in view carries
the same marks (`marks`), so a visitor's words stay marked however often they are retold between characters.
A line to a visitor that repeats another visitor's words (`retold`) is never said.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from backend.ids import is_player
from backend.memory.models import VISITOR_TAG, Recalled

#: How an absent visitor is named where VISITOR_MENTIONS is "anonymous", per language.
ANONYMOUS = {"ja": "来場者", "en": "a visitor"}
#: A line repeats a visitor's words when it shares a run of this many letters with them (case, width,
#: spaces and punctuation ignored): longer than a shared phrase ("と言ってた", "told me that"), shorter
#: than any sentence worth retelling.
RETOLD_CHARS = 12
#: Visitors named in one memory's tags at most (a memory holds at most 32 tags).
MAX_NAMED = 12
#: A visitor's words inside a memory of them: what 「...」 or "..." quote (else the memory's whole text).
_QUOTED = re.compile(r"「([^」]+)」|\"([^\"]+)\"|“([^”]+)”")


@dataclass(frozen=True)
class Heard:
    """A recalled memory that came from visitors' words, as the prompt shows it, and whose words they are."""

    text: str
    visitors: tuple[str, ...]


@dataclass(frozen=True)
class Split:
    """A turn's recalled memories: the speaker's own, and those of visitors' words."""

    standing: list[Recalled]
    brought_up: list[Recalled]
    heard: list[Heard]

    def marks(self, members: Iterable[str]) -> list[str]:
        """The tags of what the speaker says now: `VISITOR_TAG` and the visitors' ids when a visitor takes
        part or their words are in view, else []."""
        visitors = {who for item in self.heard for who in item.visitors} | {
            m for m in members if is_player(m)
        }
        if not visitors and not self.heard:
            return []
        return [VISITOR_TAG, *sorted(visitors)[:MAX_NAMED]]


def visitors_in(tags: Sequence[str]) -> tuple[str, ...]:
    return tuple(sorted(tag for tag in tags if is_player(tag)))


def split(
    standing: Sequence[Recalled],
    brought_up: Sequence[Recalled],
    tags: dict[int, list[str]],
    names: dict[str, str],
    *,
    members: Sequence[str],
    mode: str,
    language: str,
) -> Split:
    """Sort the recalled memories (`tags`: those of the visitor-marked ones; `names`: visitors' display
    names by id) and word the visitor ones as VISITOR_MENTIONS (`mode`) allows."""
    present = set(members)
    heard: list[Heard] = []
    for item in [*standing, *brought_up]:
        if not item.visitor:
            continue
        visitors = visitors_in(tags.get(item.id, []))
        absent = [who for who in visitors if who not in present]
        if mode == "none" and (absent or not visitors):
            continue  # another visitor's words (or a visitor nobody can name): left out
        text = item.content if mode == "named" else anonymised(item.content, absent, names, language)
        heard.append(Heard(text, visitors))
    return Split(
        [item for item in standing if not item.visitor],
        [item for item in brought_up if not item.visitor],
        heard,
    )


def anonymised(text: str, visitors: Iterable[str], names: dict[str, str], language: str) -> str:
    """`text` with each of `visitors`' display names replaced by "a visitor" (来場者)."""
    label = ANONYMOUS.get(language, ANONYMOUS["en"])
    for who in visitors:
        for name in {names.get(who, ""), who.split(":", 1)[-1]}:
            if len(name) >= 2:
                text = _name_pattern(name).sub(label, text)
    return text


def _name_pattern(name: str) -> re.Pattern[str]:
    escaped = re.escape(name)
    # A Latin name is a whole word ("Eve" is not in "Evening"); a Japanese one is matched where it stands.
    ascii_word = rf"(?<![A-Za-z0-9]){escaped}(?![A-Za-z0-9])"  # "Malloryに" is the name, "Evening" not
    return re.compile(ascii_word if name.isascii() else escaped, re.IGNORECASE)


def retold(line: str, heard: Sequence[Heard], members: Sequence[str]) -> Heard | None:
    """The memory of another visitor's words that `line` repeats (RETOLD_CHARS letters of them in a row),
    or None. Words of the visitors taking part may be repeated back to them."""
    said = _letters(line)
    if len(said) < RETOLD_CHARS:
        return None
    present = set(members)
    grams = {said[i : i + RETOLD_CHARS] for i in range(len(said) - RETOLD_CHARS + 1)}
    for item in heard:
        if item.visitors and set(item.visitors) <= present:
            continue
        for words in _words_of(item.text):
            letters = _letters(words)
            if any(letters[i : i + RETOLD_CHARS] in grams for i in range(len(letters) - RETOLD_CHARS + 1)):
                return item
    return None


def _words_of(text: str) -> list[str]:
    quoted = ["".join(groups) for groups in _QUOTED.findall(text)]
    return quoted or [text]


def _letters(text: str) -> str:
    """Letters and digits only, folded (NFKC, case): what "the same words" compares."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(c for c in folded if c.isalnum())
