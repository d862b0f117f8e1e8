"""What keeps the scripted engine's lines honest: a speaker never names itself in the third person ("蓮は
蓮の家に着いた" said by 蓮, "Emma said..." by Emma), never says a sentence the conversation already holds,
and passes on only what was news, in its own language (a greeting heard is no news: 'Grace told me "Good
morning, Oliver."' is never said). Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from backend.text import keywords, normalise

_SPEAKER = re.compile(r"^[^:：「」\n]{1,64}[:：]\s*")  # a history entry's "Name: "
_SENTENCE = re.compile(r"(?<=[。！？!?…])\s*|(?<=\.)\s+")
#: Greetings, farewells and reactions: a heard line made only of these says nothing to pass on.
_SMALL_TALK = re.compile(
    r"^(?:おはよう|こんにちは|こんばんは|やあ|じゃあ|またね|また明日|ありがとう|うんうん|うん|そうだね|そうなんだ|へえ|えっ|"
    r"いいね|わかる|話せて|会えて|good (?:morning|evening|night|afternoon)|hi\b|hello|hey|bye|see you|thanks|"
    r"thank you|nice to|yeah|oh\b|wow|sounds|tell me more|i know what you mean|really\b|alright|huh)",
    re.I,
)
#: Weather and the day: what anyone says anywhere, not news.
_IDLE = ("天気", "空気", "日差し", "夕焼け", "寝坊", "お昼", "冷え", "あっという間", "いい日", "のんびり", "weather", "sunset", "lunch",
         "overslept", "chilly", "the day went", "good day", "slow afternoon", "sun is")  # fmt: skip
#: A goodbye anywhere in a sentence ("…の時間だから、またね！"): leaving is no news.
_FAREWELL = re.compile(r"またね|じゃあね|また明日|また話そう|see you|bye\b|goodbye", re.I)


def split(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE.split(text.strip()) if part.strip()]


def _key(sentence: str) -> str:
    return normalise(sentence).strip(" .。,、!！?？…")


def names_self(sentence: str, name: str, ja: bool) -> bool:
    """Whether the sentence speaks of `name` in the third person ("蓮は…", "蓮が…", "Emma said"); a place
    named after the speaker ("蓮の家", "Emma's place") and being addressed by name are not that."""
    if not name:
        return False
    if ja:
        return re.search(re.escape(name) + r"(?:は|が|も|って|に「)", sentence) is not None
    return re.search(r"\b" + re.escape(name) + r"\b(?!'s|’s|,)", sentence) is not None


def without_self(text: str, name: str, ja: bool) -> str:
    """The text less its sentences that speak of the speaker in the third person."""
    return ("" if ja else " ").join(s for s in split(text) if not names_self(s, name, ja))


def fresh(text: str, history: Iterable[str], ja: bool) -> str:
    """The text less the sentences the conversation already holds (so none is said more than once more)."""
    said = {_key(s) for line in history for s in split(_SPEAKER.sub("", line, count=1))}
    kept = [s for s in split(text) if _key(s) not in said]
    return ("" if ja else " ").join(kept)


def in_language(text: str, ja: bool) -> bool:
    """Whether `text` is in the speaker's language: Japanese holds kana or kanji; English holds none."""
    has_ja = re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", text) is not None
    return has_ja == ja


def is_news(line: str, skip: Iterable[str] = ()) -> bool:
    """Whether a heard line says something worth passing on: not only greetings, farewells, reactions or
    talk of the weather, and holding at least two words of substance besides the names in `skip`."""
    skipped = {normalise(word) for word in skip if word}
    substance: list[str] = []
    for sentence in split(line):
        bare = normalise(sentence).lstrip("「『\"' ")
        if _SMALL_TALK.match(bare) or _FAREWELL.search(bare) or any(word in bare for word in _IDLE):
            continue
        words = [w for w in keywords(sentence, limit=12) if normalise(w) not in skipped]
        substance.extend(w for w in words if not w.isascii() or len(w) >= 4)
    return len(set(substance)) >= 2
