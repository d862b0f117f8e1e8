"""Event words, Japanese and English: what a piece of news is about ("誕生日会", "get-together", "花火大会").

Each `Event` is one kind with its labels in both languages and the words that name it; kinds of one
`family` count as the same event when a teller says it in other words (a birthday party is a party, 集まり a
get-together). `evening` events are held in the evening as a rule ("party at 7" is 19:00). `hosted` events are held by someone ("Mia is hosting a party"); the others are planned
("Mia is planning a picnic"). Japanese words are matched inside the text, English ones as whole words (a
plural too: "parties"). Pure data and two lookups.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from backend.intention.appointment import fold


@dataclass(frozen=True)
class Event:
    kind: str
    en: str
    ja: str
    family: str
    hosted: bool
    words: tuple[str, ...]
    #: Held in the evening as a rule: a bare "7時" / "at 7" of it is 19:00.
    evening: bool = False


def _event(
    kind: str, en: str, ja: str, family: str, hosted: bool, words: str, evening: bool = False
) -> Event:
    split = tuple(w.strip() for w in words.split(",") if w.strip())
    return Event(kind, en, ja, family, hosted, split, evening)


EVENTS = (
    _event("party", "party", "パーティー", "party", True,
           "party, get-together, get together, gathering, bash, celebration, housewarming, "
           "パーティー, パーティ, 集まり, 集まろう, 集まる, 宴会, 祝賀会, お祝い, 打ち上げ", evening=True),
    _event("birthday", "birthday party", "誕生日会", "party", True,
           "birthday party, birthday, bday, 誕生日会, 誕生日パーティー, 誕生会, お誕生日会, 誕生日, バースデー", evening=True),
    _event("welcome", "welcome party", "歓迎会", "party", True, "welcome party, 歓迎会", evening=True),
    _event("farewell", "farewell party", "送別会", "party", True, "farewell party, leaving party, send-off, 送別会", evening=True),
    _event("drinks", "drinks", "飲み会", "party", True, "drinks, drinking party, 飲み会", evening=True),
    _event("dance", "dance", "ダンスパーティー", "party", True, "dance party, dance, ダンスパーティー, ダンス, 舞踏会, 盆踊り", evening=True),
    _event("karaoke", "karaoke night", "カラオケ", "party", False, "karaoke, カラオケ", evening=True),
    _event("wedding", "wedding", "結婚式", "party", True, "wedding, 結婚式"),
    _event("dinner", "dinner", "食事会", "meal", True,
           "dinner party, dinner, supper, potluck, 夕食会, 食事会, 夕食, 晩ご飯, 晩ごはん, ディナー, 夕飯, ご飯, ごはん, 持ち寄り", evening=True),
    _event("lunch", "lunch", "ランチ", "meal", False, "lunch, brunch, ランチ, 昼食, 昼ご飯, 昼ごはん"),
    _event("breakfast", "breakfast", "朝食", "meal", False, "breakfast, 朝食, 朝ご飯, 朝ごはん"),
    _event("tea", "tea party", "お茶会", "meal", True, "tea party, tea, お茶会, 茶会, お茶"),
    _event("barbecue", "barbecue", "バーベキュー", "meal", True, "barbecue, bbq, cookout, バーベキュー"),
    _event("picnic", "picnic", "ピクニック", "outing", False, "picnic, ピクニック"),
    _event("hanami", "cherry blossom viewing", "お花見", "outing", False,
           "cherry blossom viewing, hanami, お花見, 花見"),
    _event("walk", "walk", "散歩", "outing", False, "walk, stroll, hike, 散歩, 散策, ハイキング"),
    _event("fishing", "fishing trip", "釣り", "outing", False, "fishing, 釣り"),
    _event("fireworks", "fireworks display", "花火大会", "festival", True,
           "fireworks display, fireworks show, fireworks, firework, 花火大会, 花火", evening=True),
    _event("festival", "festival", "お祭り", "festival", True,
           "festival, carnival, お祭り, 夏祭り, 祭り, フェスティバル, 縁日, 祭"),
    _event("market", "market", "マルシェ", "festival", True,
           "flea market, market, bazaar, マルシェ, フリーマーケット, フリマ, バザー, 朝市"),
    _event("concert", "concert", "コンサート", "show", True,
           "concert, gig, recital, live music, performance, コンサート, ライブ, 演奏会, 発表会, リサイタル", evening=True),
    _event("movie", "movie night", "上映会", "show", True,
           "movie night, film screening, screening, movie, 映画鑑賞会, 上映会, 映画", evening=True),
    _event("game", "match", "試合", "game", True, "tournament, match, game night, 試合, ゲーム大会, 大会"),
    _event("meeting", "meeting", "会議", "meeting", True,
           "meeting, meet-up, meetup, assembly, council, 会議, ミーティング, 打ち合わせ, 集会, 寄り合い, 会合"),
    _event("study", "study group", "勉強会", "meeting", True, "study group, study session, 勉強会"),
    _event("book_club", "book club", "読書会", "meeting", True, "book club, reading group, 読書会"),
    _event("workshop", "workshop", "ワークショップ", "meeting", True,
           "workshop, class, lesson, ワークショップ, 教室, 講習会, 体験会"),
    _event("practice", "practice", "練習", "meeting", False, "rehearsal, practice, 練習, リハーサル"),
    _event("visit", "visit", "訪問", "visit", False, "come over, drop by, stop by, visit, 遊びに"),
    # An appointment with no event word ("明日の19時に公園で会おう"): meeting someone.
    _event("meetup", "meet-up", "待ち合わせ", "meetup", False,
           "meet up, hang out, meet, 待ち合わせ, 集合, 会おう, 会いましょう, 会わない, 会いに, 会う"),
)  # fmt: skip
BY_KIND = {event.kind: event for event in EVENTS}


def _pattern(word: str) -> re.Pattern[str]:
    folded = fold(word)
    if folded.isascii():
        return re.compile(rf"\b{re.escape(folded)}(?:s|es)?\b")
    return re.compile(re.escape(folded))


_WORDS = sorted(
    ((word, event, _pattern(word)) for event in EVENTS for word in event.words), key=lambda w: -len(w[0])
)


def mentions(text: str) -> list[tuple[int, str, Event]]:
    """Every event word in `text` as (position, the words as written, its event); longest words first at
    any one place, so "花火大会" is not also "花火" and "birthday party" not also "party"."""
    norm = fold(text)
    taken: list[tuple[int, int]] = []
    found = []
    for _word, event, pattern in _WORDS:
        for match in pattern.finditer(norm):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            taken.append(match.span())
            found.append((match.start(), match.group(0), event))
    return sorted(found, key=lambda f: f[0])


def main_event(text: str) -> tuple[str, Event] | None:
    """The event `text` is about: its most specific word (the longest; the first of equals), as written."""
    found = mentions(text)
    if not found:
        return None
    specific = [f for f in found if f[2].kind != "meetup"] or found
    _at, words, event = max(specific, key=lambda f: (len(f[1]), -f[0]))
    return words, event
