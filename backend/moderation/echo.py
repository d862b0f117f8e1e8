"""Whether a model's reply repeats its prompt: the prompt's own text, quoted back.

A visitor may ask a character to recite its instructions; a small model may also just paste its persona.
Three signs, each enough:
- a run of the prompt: Japanese compared by characters (at least `min_run` in a row, spaces removed),
  English by words (at least `min_words` in a row, at least three of them not common words);
- a whole English sentence of the prompt (five words or more, three of them not common) said as a sentence
  of its own: "Stay in character at all times." is a recital; "I must stay in character at all times" is
  not told from a character's own words, any more than "I'm a barista at the central cafe" is;
- a field name or delimiter of the prompt (is_conversation_end, <<<TRANSCRIPT).

The speaker's names are left out of both sides ("I'm Aoi" neither lengthens nor breaks a run) and stock
Japanese phrases break runs. The Japanese run is longer than a persona's clauses: a character that says
町の古い言い伝えを調べているんだ (13 characters of its backstory) is introducing itself, not leaking a prompt.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import NamedTuple

#: Characters of the prompt a Japanese reply must repeat in a row to count as an echo.
DEFAULT_MIN_RUN = 20
#: Words of the prompt an English reply must repeat in a row to count as an echo.
DEFAULT_MIN_WORDS = 8
#: Words of an English run or sentence that must not be common ones.
MIN_CONTENT_WORDS = 3
#: The shortest English prompt sentence whose recital counts, in words.
MIN_SENTENCE_WORDS = 5

# Neither side's break character can meet the other's, so nothing matches across a removed phrase.
_REPLY_BREAK, _PROMPT_BREAK = "\ue000", "\ue001"
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
# Sentence ends, and quotation marks and dashes: a quotation is a sentence of its own.
_SENTENCE_END = re.compile(r"[.!?:;。！？：；\n\"“”「」『』—–]+|\s-+\s|^\s*[-*・]\s+", re.MULTILINE)
# What only a prompt's machinery says: a field name (is_conversation_end) or a delimiter (<<<transcript).
_MARKER = re.compile(r"<<<\w+|\w+>>>|\b[a-z]+(?:_[a-z]+)+\b")
_SPACES = re.compile(r"[^\S\n]+")
_COMMON_WORDS = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being it its this "
    "that these those i you he she we they me my your our their him her them do did does have has had not no "
    "so very what when where who how why just about there here then than too can will would could should "
    "i'm you're it's that's don't let's all some any one more like well oh yes yeah okay ok really".split()
)
_COMMON_JA = (
    "ありがとうございます",
    "よろしくお願いします",
    "おはようございます",
    "こんにちは",
    "こんばんは",
    "すみません",
    "ごめんなさい",
    "そうですね",
    "なるほど",
)


class _Shape(NamedTuple):
    """A text as the comparison sees it."""

    text: str
    chars: frozenset[str]
    words: frozenset[tuple[str, ...]]
    sentences: frozenset[tuple[str, ...]]


def echoes_prompt(
    reply: str,
    prompt_texts: Sequence[str],
    *,
    min_run: int = DEFAULT_MIN_RUN,
    min_words: int = DEFAULT_MIN_WORDS,
    names: Iterable[str] = (),
) -> bool:
    """Whether `reply` recites any of `prompt_texts` (see the module docstring).

    Args:
        reply: the model's reply (the line a character would say).
        prompt_texts: what the model was given and must not recite: the system message, the persona. Never
            the quoted transcript: a character may repeat what the visitor said.
        min_run: characters in a row that make a Japanese echo (spaces removed).
        min_words: words in a row that make an English echo.
        names: the speaker's names, left out of both sides.

    Returns:
        True when the reply shares a run, a whole sentence or a field name with one of the prompts.
    """
    folded_names = tuple(sorted({_fold(n) for n in names if n.strip()}, key=len, reverse=True))
    said = _shape(reply, folded_names, _REPLY_BREAK, min_run, min_words)
    for prompt in prompt_texts:
        given = _prompt_shape(prompt, folded_names, min_run, min_words)
        if not said.chars.isdisjoint(given.chars) or not said.words.isdisjoint(given.words):
            return True
        if not said.sentences.isdisjoint(given.sentences):
            return True
        if any(marker in said.text for marker in _MARKER.findall(given.text)):
            return True
    return False


@lru_cache(maxsize=128)
def _prompt_shape(prompt: str, names: tuple[str, ...], min_run: int, min_words: int) -> _Shape:
    # A speaker's system message is the same every turn: its shape is worth keeping.
    return _shape(prompt, names, _PROMPT_BREAK, min_run, min_words)


def _shape(text: str, names: tuple[str, ...], brk: str, min_run: int, min_words: int) -> _Shape:
    text = _clean(text, names, brk)
    return _Shape(
        text, frozenset(_char_grams(text, min_run)), frozenset(_word_grams(text, min_words)), _sentences(text)
    )


def _fold(text: str) -> str:
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _clean(text: str, names: tuple[str, ...], brk: str) -> str:
    """Folded, the names gone (as if never written), stock phrases turned into a break."""
    text = _fold(text)
    for name in names:
        # An English name only as a word: "Ken" must not eat "spoken".
        text = (
            re.sub(rf"(?<![a-z0-9]){re.escape(name)}(?![a-z0-9])", "", text)
            if name.isascii()
            else text.replace(name, "")
        )
    for phrase in _COMMON_JA:
        text = text.replace(phrase, brk)
    return text


def _japanese(run: str) -> bool:
    return sum(not c.isascii() for c in run) * 2 >= len(run)


def _char_grams(text: str, n: int) -> set[str]:
    """Runs of `n` characters, spaces and line breaks removed, at least half of them not ASCII (Japanese)."""
    joined = re.sub(r"\s", "", text)
    return {joined[i : i + n] for i in range(len(joined) - n + 1) if _japanese(joined[i : i + n])}


def _word_grams(text: str, n: int) -> set[tuple[str, ...]]:
    """Runs of `n` English words not parted by Japanese text, with enough words that are not common."""
    grams: set[tuple[str, ...]] = set()
    for segment in re.split(r"[^\x00-\x7f]+", text):
        words = _WORD.findall(segment)
        for i in range(len(words) - n + 1):
            gram = tuple(words[i : i + n])
            if _content_words(gram) >= MIN_CONTENT_WORDS:
                grams.add(gram)
    return grams


def _sentences(text: str) -> frozenset[tuple[str, ...]]:
    """Each English sentence long enough to count, as its words (Japanese is left to the runs: a persona's
    short clauses are what a character says of itself)."""
    found: set[tuple[str, ...]] = set()
    for sentence in _SENTENCE_END.split(text):
        # English quoted in Japanese (ルールは「Stay in character at all times」) is a sentence of its own.
        for segment in re.split(r"[^\x00-\x7f]+", sentence):
            words = tuple(_WORD.findall(segment))
            if len(words) >= MIN_SENTENCE_WORDS and _content_words(words) >= MIN_CONTENT_WORDS:
                found.add(words)
    return frozenset(found)


def _content_words(words: tuple[str, ...]) -> int:
    return sum(w not in _COMMON_WORDS for w in words)
