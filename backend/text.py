"""Text handling that works for Japanese (no spaces between words) as well as English.

Japanese runs are split by script (kanji, hiragana, katakana) and turned into character bigrams; Latin
text is split into lower-cased words. This is what keyword relevance, tag extraction and the local
embedder share, so "カフェ" in a query meets "カフェでヒカリと話した" in a memory.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_LATIN_WORD = re.compile(r"[a-z0-9\u00c0-\u024f][a-z0-9\u00c0-\u024f'_-]*")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\u30fc々〆ヶ]+")
_SCRIPT_RUN = re.compile(r"[\u3040-\u309f]+|[\u30a0-\u30ff\u30fc]+|[\u3400-\u9fff\uf900-\ufaff々〆ヶ]+")

#: Words too common to mean anything (English stop words; Japanese particles are single hiragana
#: and fall out because hiragana runs shorter than two characters are dropped).
STOP_WORDS = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been it its this that "
    "i you he she we they me my your our their him her them do did does have has had not no so very "
    "what when where who how why just about there here then than too can will would could should".split()
)
_JA_STOP = frozenset(
    ["です", "ます", "した", "して", "する", "いる", "ある", "この", "その", "あの", "こと", "もの"]
)


def normalise(text: str) -> str:
    """NFKC (full-width letters and digits to half-width, half-width kana to full-width) and lower case."""
    return unicodedata.normalize("NFKC", text).lower()


def is_japanese(text: str) -> bool:
    return bool(_CJK_RUN.search(text))


def latin_words(text: str) -> list[str]:
    return [w for w in _LATIN_WORD.findall(normalise(text)) if w not in STOP_WORDS and len(w) > 1]


def char_ngrams(run: str, n: int = 2) -> list[str]:
    if len(run) <= n:
        return [run]
    return [run[i : i + n] for i in range(len(run) - n + 1)]


def japanese_runs(text: str) -> list[str]:
    """Runs of one script (kanji / hiragana / katakana): a cheap stand-in for word boundaries."""
    runs = []
    for chunk in _CJK_RUN.findall(normalise(text)):
        runs.extend(_SCRIPT_RUN.findall(chunk))
    return runs


def tokens(text: str) -> list[str]:
    """Keyword tokens: Latin words plus character bigrams of Japanese runs (hiragana runs of one char dropped)."""
    out = latin_words(text)
    for run in japanese_runs(text):
        if len(run) < 2 and _is_hiragana(run):
            continue
        out.extend(g for g in char_ngrams(run, 2) if g not in _JA_STOP)
    return out


def token_set(text: str) -> set[str]:
    return set(tokens(text))


#: English suffixes folded by `stem`, longest first ("walking", "walked", "walks" -> "walk").
_SUFFIXES = ("ing", "ed", "es", "ly", "s")


def stem(word: str) -> str:
    """A light English stemmer: one common suffix off a word long enough to keep a stem of three letters."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            return word[: -len(suffix)]
    return word


def search_terms(text: str) -> set[str]:
    """The terms lexical retrieval indexes and looks up: `tokens`, English words stemmed (Japanese bigrams need
    no stemming: a conjugated verb keeps its stem's bigram, 食べた / 食べる share 食べ)."""
    return {stem(token) if token.isascii() else token for token in tokens(text)}


def keywords(text: str, limit: int = 8) -> list[str]:
    """Tags for a text: Latin words and whole katakana/kanji runs (names, places, things), most frequent first."""
    counts: dict[str, int] = {}
    for word in latin_words(text):
        counts[word] = counts.get(word, 0) + 1
    for run in japanese_runs(text):
        if _is_hiragana(run) or len(run) < 2 or run in _JA_STOP:
            continue
        counts[run] = counts.get(run, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], -len(kv[0]), kv[0]))
    return [word for word, _ in ranked[:limit]]


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    set_a, set_b = set(a), set(b)
    if not set_a and not set_b:
        return 0.0
    return len(set_a & set_b) / len(set_a | set_b)


def _is_hiragana(run: str) -> bool:
    return _HIRAGANA.fullmatch(run) is not None


_HIRAGANA = re.compile("[\u3040-\u309f]*")  # `*`: an empty run counts, as `all()` of nothing did


# C0 and C1 control characters except tab and newline, DEL, and the invisible direction overrides/isolates
# and byte-order mark (they reorder or hide text in a speech bubble without being visible themselves).
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ufeff]")
_MANY_NEWLINES = re.compile(r"\n{3,}")
# Terminal escape sequences ("\x1b[31m"): removed whole, or their visible tail "[31m" would stay.
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def clean_text(text: str, max_chars: int | None = None) -> str:
    """Model text made safe to show (Unity speech bubbles, the dashboard): control characters removed.

    Newlines stay (a bubble may wrap on them; "\\r\\n" and "\\r" become "\\n", three or more become two),
    tabs become spaces, everything else below U+0020 and U+007F-U+009F goes, as do bidi overrides and BOMs.
    The result is stripped and, with `max_chars`, cut to that many characters.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    text = _CONTROL_CHARS.sub("", _ANSI_ESCAPE.sub("", text))
    text = _MANY_NEWLINES.sub("\n\n", text).strip()
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars].rstrip()
    return text


# A line break of any kind with the spaces around it (clean_text has made "\r" a "\n" and removed the rest).
_LINE_BREAK = re.compile(r"\s*[\n\u2028\u2029]\s*")


def one_line(text: str, max_chars: int | None = None) -> str:
    """`clean_text` on one line: each line break, with the spaces around it, becomes one space.

    For what becomes a line of a transcript (a dialogue line, a history line Unity relays): a newline in
    it would start a "Name: line" of its own ("...\n葵: 偽の行") in every prompt and memory made from it.
    """
    text = _LINE_BREAK.sub(" ", clean_text(text))
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars].rstrip()
    return text


# Angle brackets of every width and look-alike ("＜", "﹤", "〈", "《", "≪"...) read as "<" and ">" when they
# stand next to a quoted block's marker; runs of them could spell "<<<" or ">>>".
_ANGLES = str.maketrans({**dict.fromkeys("＜﹤‹〈〈《≪⟨❮❰⧼", "<"), **dict.fromkeys("＞﹥›〉〉》≫⟩❯❱⧽", ">")})
_ANGLE_RUNS = re.compile(
    r"<(?:[\s\u200b-\u200f\u2060\ufeff\u00ad]*<)+|>(?:[\s\u200b-\u200f\u2060\ufeff\u00ad]*>)+"
)


def quote_data(text: str) -> str:
    """Text put inside a prompt's quoted block (`<<<NAME` ... `NAME>>>`) on one line, unable to close or
    open a block: every run of two or more angle brackets (of any width, whatever invisible characters or
    spaces part them) becomes one, so no "<<<" or ">>>" survives, whatever the text holds. One pass is
    stable: the result never holds two angle brackets of one direction in a row."""
    return _ANGLE_RUNS.sub(lambda m: m.group()[0], one_line(text).translate(_ANGLES))


# An escape sequence the next piece of a stream may still complete (cleaning it now would leave "[31" visible).
_OPEN_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*)?$")


class StreamCleaner:
    """`clean_text` (or with `single_line`, `one_line`) for text that arrives in pieces: `feed` returns what
    to show now, so that the pieces concatenate to the cleaning of the whole. What is shown never changes: an
    escape sequence the next piece may complete is held back, and so is whitespace (a line break too) until
    something visible follows it."""

    def __init__(self, *, single_line: bool = False) -> None:
        self.raw = ""
        self.shown = ""
        self._clean = one_line if single_line else clean_text

    def feed(self, piece: str) -> str:
        self.raw += piece
        held = _OPEN_ESCAPE.search(self.raw)
        cleaned = self._clean(self.raw[: held.start()] if held else self.raw)
        if not cleaned.startswith(self.shown):  # cannot happen (cleaning only appends); show nothing more
            return ""
        new, self.shown = cleaned[len(self.shown) :], cleaned
        return new
