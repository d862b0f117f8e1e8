"""Tags of a memory: the words deduplication compares (Japanese without spaces as well as English).

`backend.text.keywords` gives names, places and things (Latin words, katakana and multi-kanji runs). On its
own that is too coarse to tell events apart: "カフェでヒカリがコーヒーを飲んでいる" and "カフェでヒカリが
ケーキを焼いている" share カフェ and ヒカリ, and Japanese verbs and adjectives (one kanji plus okurigana)
never appear. So a memory's tags add its content words:

- a single kanji with its first okurigana character (飲ん, 焼い, 食べ, 好き), or the kanji alone when a particle
  follows it (本を -> 本);
- a hiragana word that stands on its own after a boundary (「おはよう」, 、また);

and, when the memory quotes speech (「...」 or "..."), drop the reporting verb around the quote (言っ, 話し, told,
said ...): every conversation line carries one, and it would make any two lines of one speaker look alike.
"""

from __future__ import annotations

import re

from backend.text import STOP_WORDS, keywords, normalise

MAX_TAGS = 16
#: A tag's most characters (a memory's `tags` on the wire): a longer word is cut to it, still telling it apart.
MAX_TAG_CHARS = 100

#: One-character particles: a kanji followed by one of these is a noun, not a verb stem.
_PARTICLES = frozenset("をがはにでとのへもやかねよ")
#: Hiragana words too common to tell anything apart.
_HIRAGANA_STOP = frozenset(
    "です ます でした ました から まで より けど けれど ので のに って それ これ あれ どれ そして でも "
    "だけ など ない なかった いる ある する した して こと もの よう ため".split()
)
#: Verbs that only report speech or perception; every conversation line has one.
_REPORTING = frozenset(
    "言っ 言わ 言い 話し 話さ 聞い 聞か 見え 思っ told said says asked replied talked answered heard".split()
)
_QUOTE = re.compile(r"「[^」]*」|『[^』]*』|\"[^\"]*\"|“[^”]*”")
_KANJI = r"\u3400-\u9fff\uf900-\ufaff々"
_HIRAGANA = r"\u3041-\u309f"
_STEM = re.compile(rf"(?<![{_KANJI}])([{_KANJI}])(?=([{_HIRAGANA}]|$|[^{_KANJI}]))")
_WORD_AFTER_BOUNDARY = re.compile(rf"(?:^|(?<=[\s「『（(、。,.!?!?\"'“]))([{_HIRAGANA}ー]{{2,}})")


def memory_tags(content: str, limit: int = MAX_TAGS) -> list[str]:
    """Tags for a memory's content: keywords plus content words, reporting verbs left out; stable order."""
    text = normalise(content)
    skip = _REPORTING if _QUOTE.search(text) else frozenset()
    out: list[str] = []
    for found in [*keywords(content, limit=limit), *_stems(text), *_hiragana_words(text)]:
        word = found[:MAX_TAG_CHARS]
        if found not in skip and found not in STOP_WORDS and word not in out:
            out.append(word)
    return out[:limit]


def _stems(text: str) -> list[str]:
    """Single kanji with their first okurigana character (verb / adjective stems), or alone before a particle."""
    found = []
    for match in _STEM.finditer(text):
        follower = match.group(2) or ""
        if follower and re.match(f"[{_HIRAGANA}]", follower) and follower not in _PARTICLES:
            found.append(match.group(1) + follower)
        else:
            found.append(match.group(1))
    return found


def _hiragana_words(text: str) -> list[str]:
    words = []
    for match in _WORD_AFTER_BOUNDARY.finditer(text):
        word = match.group(1)
        if word not in _HIRAGANA_STOP and word[0] not in _PARTICLES:
            words.append(word)
    return words
