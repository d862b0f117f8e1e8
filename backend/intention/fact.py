"""The facts of a piece of news (`Slots`: what, who hosts, when, where, who is invited; read from words by
slots.py), and the news said as a fact line for a prompt, in the third person: what the speaker knows, for it
to say in its own words, never a sentence to copy. Pure functions.

    Mia is hosting a party at Corner Cafe, tomorrow (day 2) at 7pm; everyone is invited. You heard it from Ben.
    ミアが中央カフェでパーティーを開く。明日（2日目）の19時。みんな招待されている。ベンから聞いた。
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from backend.intention import events


@dataclass(frozen=True)
class Slots:
    """What a piece of news is about. Days are game days; hours decimal (19.5 = 19:30)."""

    #: The event's kind (events.BY_KIND): "party", "birthday", "meetup" (an appointment with no event word).
    what: str
    #: The event's words as written ("誕生日会", "get-together"), or its label when none were.
    what_words: str
    #: The host's person id when the text names one; None: whoever said it (the speaker, the news's origin).
    host: str | None = None
    day: int | None = None
    hour: float | None = None
    #: The part of the day ("evening") when no clock time was said: `hour` is then its default (PART_HOURS).
    part: str | None = None
    #: The place's id and display name.
    where: str | None = None
    where_name: str | None = None
    #: "everyone", "you" (the one it is said to) and named people's ids.
    invited: tuple[str, ...] = ()
    #: The day the words were said (what their 明日 was read against), and the weekday of `day` (0 = Monday).
    written_day: int = 1
    weekday: int | None = None

    def present(self) -> set[str]:
        """The checked slots this news has (a meet-up's "what" is the appointment itself, so not checked)."""
        has = {"what"} if self.what != "meetup" else set()
        if self.day is not None or self.hour is not None:
            has.add("when")
        if self.where is not None:
            has.add("where")
        return has

    def invites(self, person_id: str) -> bool:
        """Whether the news invites `person_id`: everyone, the one it is said to ("you"), or by name."""
        return bool({"everyone", "you", person_id} & set(self.invited))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "invited": list(self.invited)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Slots:
        return cls(**{**data, "invited": tuple(data.get("invited") or ())})

    def describe(
        self,
        language: str,
        *,
        host_name: str,
        stance: Literal["host", "heard", "remembered"] | None = None,
        today: int | None = None,
        heard_from: str | None = None,
        names: Mapping[str, str] | None = None,
    ) -> str:
        """The news as a third-person fact line for a prompt, its day said from `today` (default: the day it
        was written): "Mia is hosting a party at Corner Cafe, tomorrow (day 2) at 7pm; everyone is invited."
        / 「ミアが中央カフェでパーティーを開く。明日（2日目）の19時。みんな招待されている。」. `stance`: the reader is
        the host, or heard it (from `heard_from`): for a prompt, in the second person ("You heard it from
        Ben."); `remembered`: the listener's own memory of hearing it, in the first ("I heard it from Ben.",
        "I am invited"). Never the host's first person; not a sentence to say as it is."""
        return line(
            self, language, host_name=host_name, stance=stance, today=today, heard_from=heard_from,
            names=names or {},
        )  # fmt: skip


_PART_EN = {"morning": "in the morning", "noon": "at noon", "afternoon": "in the afternoon",
            "evening": "in the evening", "night": "at night"}  # fmt: skip
_PART_JA = {"morning": "朝", "noon": "昼", "afternoon": "午後", "evening": "夕方", "night": "夜"}
_DAY_EN = {-1: "yesterday", 0: "today", 1: "tomorrow", 2: "the day after tomorrow"}
_DAY_JA = {-1: "昨日", 0: "今日", 1: "明日", 2: "明後日"}


def _clock(hour: float) -> str:
    minutes = round(hour * 60) % (24 * 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _clock_en(hour: float) -> str:
    """The hour as people say it, and as a small model will copy it: 7pm, 7:30pm, 12pm, 9am."""
    minutes = round(hour * 60) % (24 * 60)
    h, m = divmod(minutes, 60)
    return f"{(h % 12) or 12}{f':{m:02d}' if m else ''}{'am' if h < 12 else 'pm'}"


def _clock_ja(hour: float) -> str:
    minutes = round(hour * 60) % (24 * 60)
    h, m = divmod(minutes, 60)
    return f"{h}時{f'{m}分' if m else ''}"


def _when_en(slots: Slots, today: int) -> str:
    said = []
    if slots.day is not None:
        word = _DAY_EN.get(slots.day - today)
        said.append(f"{word} (day {slots.day})" if word else f"on day {slots.day}")
    if slots.hour is not None and slots.part is not None:
        said.append(f"{_PART_EN[slots.part]} (around {_clock_en(slots.hour)})")
    elif slots.hour is not None:
        said.append(f"at {_clock_en(slots.hour)}")
    return " ".join(said)


def _when_ja(slots: Slots, today: int) -> str:
    said = ""
    if slots.day is not None:
        word = _DAY_JA.get(slots.day - today)
        said = f"{word}（{slots.day}日目）" if word else f"{slots.day}日目"
    if slots.hour is not None and slots.part is not None:
        said += f"の{_PART_JA[slots.part]}（{int(slots.hour)}時ごろ）"
    elif slots.hour is not None:
        said += "の" + _clock_ja(slots.hour) if said else _clock_ja(slots.hour)
    return said


def slot_words(slots: Slots, slot: str, language: str, today: int) -> str:
    """One slot as a person would say it, without the day number: "tomorrow at 7pm" / 「明日の19時」,
    "Corner Cafe", "a party" / 「パーティー」 (what a line that left it out must add)."""
    ja = language == "ja"
    if slot == "where":
        return slots.where_name or slots.where or ""
    if slot == "what":
        event = events.BY_KIND.get(slots.what)
        return (event.ja if ja else event.en) if event else slots.what_words
    day = _DAY_JA.get(slots.day - today) if ja and slots.day is not None else None
    if not ja and slots.day is not None:
        day = _DAY_EN.get(slots.day - today)
    if day is None and slots.day is not None:
        day = f"{slots.day}日目" if ja else f"day {slots.day}"
    if slots.hour is None:
        return day or ""
    if ja:
        return f"{day}の{_clock_ja(slots.hour)}" if day else _clock_ja(slots.hour)
    return f"{day} at {_clock_en(slots.hour)}" if day else f"at {_clock_en(slots.hour)}"


def listing(names: Sequence[str], language: str) -> str:
    """Names joined as a sentence lists them: 「AとB」, "A, B and C"."""
    if language == "ja":
        return "と".join(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


#: How a request in Japanese names a slot it asks for.
_SLOT_JA = {"what": "何を", "when": "いつ", "where": "どこで"}


def asked_for(slots: Slots, wanted: Sequence[str], language: str, today: int, *, who: str) -> str:
    """The slots `wanted` ("who", "what", "when", "where") as a request to say them names them, each with its
    value said from `today`: "who (...), when (tomorrow at 7pm) and where (Corner Cafe)" / 「…といつ（明日の19時）」;
    `who` is how the request puts the host (it differs between a teller and someone interviewed)."""
    ja = language == "ja"
    parts = [
        who if name == "who"
        else f"{_SLOT_JA[name]}（{slot_words(slots, name, 'ja', today)}）" if ja
        else f"{name} ({slot_words(slots, name, 'en', today)})"
        for name in wanted
    ]  # fmt: skip
    return listing(parts, "ja" if ja else "en")


def _invited(
    slots: Slots, language: str, host_name: str, stance: str | None, names: Mapping[str, str]
) -> str:
    """Who is invited, said from the reader's side ("you" in the host's own words is whoever it tells)."""
    named = [names.get(i, i) for i in slots.invited if i not in ("you", "everyone")]
    ja = language == "ja"
    if "everyone" in slots.invited:
        return "みんな招待されている" if ja else "everyone is invited"
    said = []
    if "you" in slots.invited:
        if stance == "heard":
            said.append("あなたも招待されている" if ja else "you are invited")
        elif stance == "remembered":
            said.append("自分も招待されている" if ja else "I am invited")
        else:
            said.append(
                f"{host_name}が話す相手を誘っている" if ja else f"whoever {host_name} tells is invited"
            )
    if named:
        said.append(f"{listing(named, language)}が招待されている" if ja else
                    f"{listing(named, language)} {'is' if len(named) == 1 else 'are'} invited")  # fmt: skip
    return ("。" if ja else "; ").join(said)


def _what_en(slots: Slots, host_name: str, where: str) -> str:
    event = events.BY_KIND.get(slots.what)
    label = event.en if event else slots.what_words
    at = f" at {where}" if where else ""
    if slots.what == "meetup":
        return f"{host_name} is meeting someone{at}"
    article = "an" if label[:1] in "aeiou" else "a"
    verb = "is hosting" if event is None or event.hosted else "is planning"
    return f"{host_name} {verb} {article} {label}{at}"


def _what_ja(slots: Slots, host_name: str, where: str) -> str:
    event = events.BY_KIND.get(slots.what)
    label = event.ja if event else slots.what_words
    at = f"{where}で" if where else ""
    if slots.what == "meetup":
        return f"{host_name}が{at}人と会う約束をしている"
    return f"{host_name}が{at}{label}を{'開く' if event is None or event.hosted else '予定している'}"


def line(
    slots: Slots,
    language: str,
    *,
    host_name: str,
    stance: Literal["host", "heard", "remembered"] | None,
    today: int | None,
    heard_from: str | None,
    names: Mapping[str, str],
) -> str:
    """See `Slots.describe`."""
    today = slots.written_day if today is None else today
    where = slots.where_name or slots.where or ""
    if language == "ja":
        parts = [_what_ja(slots, host_name, where), _when_ja(slots, today), _invited(slots, "ja", host_name,
                 stance, names)]  # fmt: skip
        if stance == "host":
            parts.append("あなたが主催者")
        elif stance in ("heard", "remembered") and heard_from:
            parts.append(f"{heard_from}から聞いた")
        return "".join(f"{part}。" for part in parts if part)
    head = _what_en(slots, host_name, where)
    when = _when_en(slots, today)
    invited = _invited(slots, "en", host_name, stance, names)
    text = head + (f", {when}" if when else "") + (f"; {invited}" if invited else "") + "."
    if stance == "host":
        text += " You are the host."
    elif stance == "heard" and heard_from:
        text += f" You heard it from {heard_from}."
    elif stance == "remembered" and heard_from:
        text += f" I heard it from {heard_from}."
    return text
