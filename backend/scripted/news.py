"""What the scripted writers share about news and invitations: spotting an invitation in a line, saying
one's own news or passing another's on, and whether a character likes an event (decided the same way by
the dialogue writer that answers the invitation and the intention writer that plans for it next morning).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence

from backend.intention import events
from backend.intention.appointment import find_hour
from backend.intention.fact import Slots
from backend.text import normalise

#: Words that make a line with a clock time an invitation or an event worth remembering.
INVITE_WORDS = (
    "来ない", "来て", "おいで", "一緒に", "誘", "招待", "参加", "パーティ", "祭", "花火", "集ま", "開く",
    "come", "join", "invite", "party", "festival", "gather", "celebrat",
)  # fmt: skip
#: Share of characters who like a given event (and accept the invitation, and plan for it).
LIKE_SHARE = 0.75
_SENTENCE_END = re.compile(r"(?<=[。！？!?])\s*|(?<=\.)\s+")
_VERB_END = tuple("るうくすつぬむぶぐ")


def is_invitation(text: str) -> bool:
    """A line or memory that names a clock time and an invitation or event word."""
    norm = normalise(text)
    return find_hour(text) is not None and any(word in norm for word in INVITE_WORDS)


def likes(seed: int, agent_id: str, event: str) -> bool:
    """Whether this character likes the event at the time `event` names (stable per seed, agent, hour)."""
    hour = find_hour(event)
    digest = hashlib.sha1(f"{seed}|{agent_id}|{hour}".encode()).digest()
    return digest[0] / 256 < LIKE_SHARE


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text.strip()) if part.strip()]


def own_news(text: str, partner: str, ja: bool) -> str:
    """Telling one's own intention: an event becomes an invitation ("...するんだけど、来ない？")."""
    parts = sentences(text)
    if not parts:
        return ""
    first, rest = parts[0].rstrip("。.!！"), " ".join(parts[1:])
    invite = is_invitation(text)
    if ja:
        if invite and first.endswith(_VERB_END):
            head = f"そうだ、{first}んだけど、{partner}も来ない？"
        elif invite:
            head = f"そうだ、聞いて。{first}。{partner}も来ない？"
        else:
            head = f"そうだ、{partner}に話したいことがあって。{first}。"
        return head + (f"{rest}" if rest else "")
    head = f"Oh, {partner}, there's something I wanted to tell you. {first}."
    return head + (f" {rest}" if rest else "") + (" Would you like to come?" if invite else "")


def passed_on(text: str, origin: str, ja: bool) -> str:
    """Passing on someone else's news, saying whose it is ("葵が「...」って言ってたよ")."""
    said = ("" if ja else " ").join(sentences(text)).rstrip("。.") or text
    if ja:
        return f"ねえ、聞いた？{origin}が「{said}」って言ってたよ。"
    return f'Did you hear? {origin} says "{said}."'


# --- news told from its slots (what, when said from today, where, who hosts), in the speaker's language ---
_DAY_JA = {0: "今日", 1: "明日", 2: "明後日"}
_DAY_EN = {0: "today", 1: "tomorrow", 2: "the day after tomorrow"}
_PART_JA = {"morning": "朝", "noon": "お昼", "afternoon": "午後", "evening": "夕方", "night": "夜"}


def when_said(slots: Slots, today: int, ja: bool) -> str:
    """The news's day and hour as a speaker says them on `today`: "明日の19時", "tomorrow at 7pm"."""
    day = ""
    if slots.day is not None:
        gap = slots.day - today
        day = (_DAY_JA if ja else _DAY_EN).get(gap) or (f"{slots.day}日目" if ja else f"on day {slots.day}")
    if slots.hour is None:
        return day
    if slots.part is not None:
        if ja:
            return f"{day}の{_PART_JA[slots.part]}" if day else _PART_JA[slots.part]
        if day == "today":  # "today evening" is not English; "tonight" alone would read as the evening
            if slots.part in ("night", "noon"):
                return "at noon today" if slots.part == "noon" else f"tonight around {_twelve(slots.hour)}"
            return f"this {slots.part}"
        return f"{day} {slots.part}" if day else f"in the {slots.part}"
    whole, minutes = int(slots.hour) % 24, round((slots.hour % 1) * 60)
    if ja:
        clock = f"{whole}時" + ("半" if minutes == 30 else f"{minutes}分" if minutes else "")
        return f"{day}の{clock}" if day else clock
    return f"{day} at {_twelve(slots.hour)}" if day else f"at {_twelve(slots.hour)}"


def _twelve(hour: float) -> str:
    """An hour on the English clock: 19.5 -> "7:30pm"."""
    whole, minutes = int(hour) % 24, round((hour % 1) * 60)
    return f"{whole % 12 or 12}{f':{minutes:02d}' if minutes else ''}{'pm' if whole >= 12 else 'am'}"


def label(slots: Slots, ja: bool) -> tuple[str, bool]:
    """What the news is about in the speaker's language, and whether someone hosts it."""
    event = events.BY_KIND.get(slots.what)
    if event is None:
        return slots.what_words, True
    return (event.ja if ja else event.en), event.hosted


def tell_slots(slots: Slots, *, ja: bool, today: int, partner: str, host: str, source: str,
               own: bool, pick: Callable[[Sequence[str]], str]) -> str:  # fmt: skip
    """The news said from its slots, never from its raw words: one's own as an invitation, another's passed
    on saying whose it is (and from whom it was heard when that is someone else)."""
    when, where = when_said(slots, today, ja), slots.where_name or slots.where or ""
    what, hosted = label(slots, ja)
    if ja:
        at = f"{where}で" if where else ""
        time = f"{when}に" if when else ""
        if slots.what == "meetup" and own:
            return pick([f"{partner}、{time}{at}会わない？", f"よかったら{time}{at}会おうよ。"])
        if slots.what == "meetup":
            body = f"{host}が{time}{at}人と会う約束をしてるんだって"
        elif own:
            verb = "開くんだけど" if hosted else "行くんだけど"
            return pick([f"{time}{at}{what}を{verb}、{partner}も来ない？",
                         f"実はね、{time}{at}{what}を{verb}、よかったら{partner}も来ない？"])  # fmt: skip
        else:
            body = f"{host}が{time}{at}{what}を{'開く' if hosted else '予定してる'}んだって"
        heard = "" if own or source in ("", host) else f"{source}から聞いたんだけど、"
        # The ask names the partner and the event, so a teller's lines differ from one listener to the next.
        ask = pick(
            [f"{partner}も一緒に行かない？", f"{what}、{partner}も一緒に行こうよ。", f"{partner}はどうする？"]
        )
        return (
            pick([f"ねえ{partner}、", f"{partner}、聞いて、", f"そうだ{partner}、"]) + f"{heard}{body}。{ask}"
        )
    at = f" at {where}" if where else ""
    time = f" {when}" if when else ""
    a = "an" if what[:1].lower() in "aeiou" else "a"
    if slots.what == "meetup" and own:
        return pick([f"Shall we meet{at}{time}, {partner}?", f"Let's meet{at}{time}, {partner}."])
    if slots.what == "meetup":
        body = f"{host} is meeting someone{at}{time}"
    elif own:
        verb = "I'm hosting" if hosted else "I'm going to"
        return pick([f"{verb} {a} {what}{at}{time}. Would you like to come, {partner}?",
                     f"Guess what, {partner}? {verb} {a} {what}{at}{time}. Want to come?"])  # fmt: skip
    else:
        body = f"{host} is {'hosting' if hosted else 'going to'} {a} {what}{at}{time}"
    ask = pick([f"Want to come along, {partner}?", f"Shall we go to the {what} together, {partner}?",
                f"What do you say, {partner}?"])  # fmt: skip
    if not own and source not in ("", host):
        return (
            pick(
                [
                    f"{partner}, {source} told me that {body}.",
                    f"I heard from {source} that {body}, {partner}.",
                ]
            )
            + " "
            + ask
        )
    return pick([f"Listen, {partner}, {body}.", f"{partner}, {body}."]) + " " + ask
