"""Who hosts an event and who is invited, read from a line of news in Japanese or English. Pure functions.

`people` maps person ids to display names (the town's agents); a person is named by either. The host is the
person the text says holds the event ("蓮が…パーティーを開く", "Mia is hosting", "Mia's party", "葵が「…」って
言ってた"); None means the text does not say, so it is whoever said it (the speaker of an intention, the
origin of heard news). The invited are "you" (the one it is said to: "来ない？", "would you like to come"),
"everyone" (みんな, everyone) and named people ("ベンも誘った", "invite Ben").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from backend.intention import events
from backend.intention.appointment import fold

_HONORIFIC = r"(?:さん|くん|君|ちゃん|様|さま)?"
#: Verbs that make the one named before them the host, strongest first (a party's host over the house's owner).
_STRONG_JA = r"開く|開き|開こう|開催|主催|企画|招待|誘"
_WEAK_JA = r"する|します|しよう|やる|やります|計画"
_STRONG_EN = (
    r"(?:is |are |will |'s |was )?(?:be )?(?:throwing|hosting|holding|organi[sz]ing|putting on|running|"
    r"throws|hosts|holds|organi[sz]es|throw|host|hold|organi[sz]e)\b"
)
_WEAK_EN = (
    r"(?:is |are |will |'s |was )?(?:be )?(?:having|giving|planning|inviting|invites|plans|have|give|plan)\b"
)
_SOURCE_JA = r"(?:が|から)(?:ね、?)?「"
_SOURCE_EN = r"(?:says|said|told (?:me|us)|mentioned|is saying)\b"
#: The rank of a person named only as the source of the words ("Mia says", "葵が「…」").
_SOURCE_RANK = 3
_OWN_PLACE = r"(?:家|うち|お店|店|部屋)"
_EN_OWN_PLACE = r"(?:place|house|home|shop|cafe|bakery|garden|room)\b"

EVERYONE = re.compile(
    r"みんな|皆さん|皆|全員|誰でも|どなたでも|町の人|\b(?:everyone|everybody|anyone|anybody|all of you|all welcome|"
    r"all are welcome|the whole (?:town|village|street))\b"
)
_YOU = re.compile(
    r"来ない|来ません|来てね|(?:来る|来れる|行く)[？?]|来て(?:ください|ほしい|欲しい|くれ)|おいで|一緒に|いっしょに|参加しない|参加して|来られ|来れ|"
    r"行かない|行こう|行きませんか|しない[？?]|しよう|しましょう|ませんか|どう[？?]|どうかな|よかったら|ぜひ|"
    r"(?:[^だで]ろう|よう)(?:よ|ね|か)?(?:[。！？!?、]|$)|"
    r"\byou(?:'re| are) (?:invited|welcome)\b|\b(?:would|will|do|can|could|won't|wouldn't|don't) you "
    r"(?:like to |want to |wanna )?(?:come|join)\b|\bjoin (?:us|me)\b|\bcome (?:along|over|by|with)\b|"
    r"\byou (?:should|can|could|must|have to) (?:come|join)\b|\b(?:want|like) to (?:come|join)\b|"
    r"\bhope (?:to see you|you can come|you'll come)\b|\bhow about (?:coming|joining)\b|\blet's\b|\bshall we\b|"
    r"\bare you free\b|\bwanna come\b|\bwe (?:could|should)\b"
)
_CUE = re.compile(r"招待|誘|参加|\binvit\w*|\bwelcome\b|\bcome\b|\bjoin\b")


def _labels(person_id: str, name: str) -> list[str]:
    return [label for label in dict.fromkeys((fold(name).strip(), fold(person_id).strip())) if label]


def _bound(label: str) -> tuple[str, str]:
    """Word boundaries around a Latin name; none around a Japanese one (there are no spaces)."""
    return (r"\b", r"\b") if label.isascii() else ("", "")


def _owns_event(norm: str, end: int) -> bool:
    """Whether an event word starts right after `end` (the possessive before it: "蓮の誕生日会", "Mia's party")."""
    return any(end <= at <= end + 12 for at, _words, _event in events.mentions(norm))


def _host_rank(norm: str, label: str) -> tuple[int, int] | None:
    """How surely `label` names the host (0 surest) and where, or None."""
    left, right = _bound(label)
    name = left + re.escape(label) + right
    ranked = (
        (
            0,
            rf"{name}{_HONORIFIC}(?:が|は)[^。！？!?「]*?(?:{_STRONG_JA})|{name}\s*{_STRONG_EN}|hosted by {name}",
        ),
        (1, rf"{name}{_HONORIFIC}の{_OWN_PLACE}|{name}'s\s+{_EN_OWN_PLACE}"),
        (1, rf"{name}{_HONORIFIC}の|{name}'s"),
        (2, rf"{name}{_HONORIFIC}(?:が|は)[^。！？!?「]*?(?:{_WEAK_JA})|{name}\s*{_WEAK_EN}"),
        (_SOURCE_RANK, rf"{name}{_HONORIFIC}{_SOURCE_JA}|{name}\s+{_SOURCE_EN}"),
    )
    for index, (rank, pattern) in enumerate(ranked):
        for match in re.finditer(pattern, norm):
            # A bare possessive names the host only right before the event ("蓮の誕生日会", "Mia's party").
            if index != 2 or _owns_event(norm, match.end()):
                return rank, match.start()
    return None


def host(text: str, people: Mapping[str, str]) -> str | None:
    """The id of the person `text` says hosts its event, or None when it names none. Of several people named
    only as a source ("Tom told me: 'Mia says ...'"), the innermost, the last named, is whose news it is."""
    norm = fold(text)
    best: tuple[tuple[int, int], str] | None = None
    for person_id, name in people.items():
        for label in _labels(person_id, name):
            found = _host_rank(norm, label)
            rank = None if found is None else (found[0], -found[1] if found[0] == _SOURCE_RANK else found[1])
            if rank is not None and (best is None or rank < best[0]):
                best = (rank, person_id)
    return best[1] if best else None


def _named_invited(norm: str, label: str) -> bool:
    left, right = _bound(label)
    name = left + re.escape(label) + right
    pattern = (
        rf"{name}{_HONORIFIC}(?:も|を|に|と)[^。！？!?]{{0,10}}?(?:誘|招待|呼|来|参加|おいで)"
        rf"|\b(?:invit\w*|ask\w*|bring|tell) (?:\w+,? (?:and )?){{0,3}}{name}"
        rf"|{name}(?:,? and \w+)? (?:is|are) (?:invited|coming|welcome)\b"
        rf"|{name},? (?:would|will|do|can|could|want|are) you\b"
    )
    return re.search(pattern, norm) is not None


def invited(text: str, people: Mapping[str, str], host_id: str | None = None) -> tuple[str, ...]:
    """Who `text` invites: "everyone" or "you" first (everyone includes you), then named people by id."""
    norm = fold(text)
    named = [
        person_id
        for person_id, name in people.items()
        if person_id != host_id and any(_named_invited(norm, label) for label in _labels(person_id, name))
    ]
    if EVERYONE.search(norm):
        return ("everyone", *named)
    return ("you", *named) if _YOU.search(norm) else tuple(named)


def is_invitation(text: str) -> bool:
    """Whether `text` invites anyone (to come, to join, everyone welcome)."""
    norm = fold(text)
    return bool(_YOU.search(norm) or _CUE.search(norm) or EVERYONE.search(norm))
