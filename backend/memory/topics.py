"""Topics of a conversation: the few things it was about, as whole words a person would write down.

Japanese has no spaces, and `backend.text.keywords` (what memory tags and retrieval use) takes whole
kanji runs, which cut across words: "この前話した" gives 前話 (この前 + 話した). A topic instead is

- a compound of kanji and katakana (カフェ, 図書館, 中央カフェ) with what follows it checked: a particle,
  punctuation or the end means a noun; any other hiragana is okurigana, so the last kanji is a verb or
  adjective stem and is dropped (前話し -> 前, 美味し -> 美), and what is left must still be two characters;
- お/ご before a single kanji noun (お茶, ご飯);
- not a counter (3日目, 2回), not a stop word (本当, 一息, 今日: true words that are never what a talk was
  about), not a name the caller excludes; Latin words of four letters or more that are not stop words.

Ranked by how often they occur, then by first appearance: deterministic, no dictionary. Memory scoring
does not use this (it keeps `keywords` and `tags.py`), so changing a topic never moves a retrieval score.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from backend.text import STOP_WORDS, latin_words, normalise

DEFAULT_LIMIT = 3

_KANJI = "\u3400-\u9fff\uf900-\ufaff々〆ヶ"
_KATAKANA = "\u30a1-\u30fa\u30fc"
_COMPOUND = re.compile(f"[{_KANJI}{_KATAKANA}]+")
_IS_KANJI = re.compile(f"[{_KANJI}]")
_IS_HIRAGANA = re.compile("[\u3041-\u309f]")
#: Hiragana that may follow a noun: case and topic particles, the copula (だ/です/じゃ/な), って.
_AFTER_NOUN = ("って", "から", "まで", "より", "だ", "で", "じゃ", "な", *"をがはにとのへもやかねよさ")
#: Words that are real but never what a conversation was about (greetings, time, filler, the self).
STOP_TOPICS = frozenset(
    "本当 一息 今日 明日 昨日 今朝 今夜 今晩 今度 最近 毎日 一緒 一番 時間 予定 自分 大丈夫 元気 大切 "
    "大変 素敵 不思議 全部 少々 何度 今回 前回 結局 普通 絶対 確か 本日 皆様 皆さん 楽しみ 話題 存在 用事 "
    "日差 寝坊 朝食 お昼 夕焼".split()
)
_EN_STOP = frozenset(
    "really something thing things lately today tomorrow yesterday morning evening hello think thinking "
    "sounds great nice remember talking planning about alright feels time stop good lot near love like want "
    "went know made make come came been into over tell told also much many more some such well even back "
    "only often sorry important part days spent keeps going".split()
)


def topics(text: str, limit: int = DEFAULT_LIMIT, exclude: Iterable[str] = ()) -> list[str]:
    """The topics of `text`, most frequent first (see the module docstring).

    Args:
        text: what was said (Japanese, English or both).
        limit: at most this many topics.
        exclude: words never to return, such as the speakers' names.

    Returns:
        Up to `limit` distinct topics; an empty list when nothing qualifies.
    """
    skip = {normalise(word) for word in exclude if word}
    counts: dict[str, int] = {}
    for word in [*_japanese_topics(normalise(text)), *_latin_topics(text)]:
        if word not in skip and not any(word in name for name in skip if len(name) > len(word)):
            counts[word] = counts.get(word, 0) + 1
    ranked = sorted(counts, key=lambda word: -counts[word])  # sorted() is stable: first seen wins a tie
    return ranked[:limit]


def _japanese_topics(text: str) -> list[str]:
    found = []
    for match in _COMPOUND.finditer(text):
        before = text[match.start() - 1] if match.start() else ""
        if before.isdigit():
            continue  # a counter: 3日目, 2回
        word = _noun_part(match.group(), text[match.end() : match.end() + 2])
        if len(word) == 1 and before in "おご" and _IS_KANJI.match(word):
            word = before + word
        if len(word) >= 2 and word not in STOP_TOPICS:
            found.append(word)
    return found


def _noun_part(compound: str, after: str) -> str:
    """The compound without a trailing verb/adjective stem (a last kanji followed by okurigana)."""
    if after and _IS_HIRAGANA.match(after[0]) and not after.startswith(_AFTER_NOUN):
        if _IS_KANJI.match(compound[-1]):
            return compound[:-1]
    return compound


def _latin_topics(text: str) -> list[str]:
    return [w for w in latin_words(text) if len(w) >= 4 and w not in STOP_WORDS and w not in _EN_STOP]
