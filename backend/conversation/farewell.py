"""Farewells: whether a line says goodbye, so that it ends a talk (the end rules: rules.py, group.py).

A line that merely holds a farewell phrase (FAREWELL_PHRASES) does not end a talk: "I'm really excited to
see you soon." or "明日の17時にパーティーするから、来てね！またね…じゃなくて、待ってるね" open one. A phrase counts
only when all of these hold:
  1. It stands as a farewell. A Japanese phrase ends an utterance (また明日ね! but not また明日も雨かな); a Latin
     one is a whole word that heads its clause: "Thanks, bye", "I'll see you", "hope to see you" count,
     "excited to see you", "I see you're busy", "we had a good night", "take care of it" do not. Nothing
     quoted inside the line counts ('彼女が「またね」って言ってた').
  2. The line extends no invitation (come to / join us / would you like to / are you coming / 来てね /
     来ない？ / おいでよ / 一緒に…しない / 行こうよ / 待ってるね ...): an invitation wants an answer.
  3. It is at the end of the line: what follows the last farewell asks nothing, turns to no new topic (by the
     way, ところで, じゃなくて ...) and weighs at most TAIL_WEIGHT ("Bye! Thanks for the chat." counts, "See you
     soon, and I'll bring the cake and the drinks and the chairs." does not).
  4. On a conversation's opening line the line is nothing but a goodbye: it asks nothing and the rest weighs
     at most OPENING_REST_WEIGHT ("あ、ひかり！またね！" counts; "Hi Liam! Mia's party is tomorrow at 7, see you
     there!" opens a talk). "See you at the party tomorrow!" later in a talk is a goodbye.
Weight: a Latin letter or digit 1, any other letter 2 (a Japanese character says about what two letters do).
Doubt goes to "not a farewell": a missed goodbye costs one line (the partner answers it with a goodbye, which
counts, and the model's own end flag counts from the second line), a false one ends a talk before it began.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

#: Most weight (see the module docstring) a line may carry after its last farewell: ~8 words or ~20 kana.
TAIL_WEIGHT = 40
#: Most weight an opening line may carry besides its farewells to end the talk at once.
OPENING_REST_WEIGHT = 16

#: What may follow a Japanese farewell within it (おやすみ*なさい*, また明日*ね*, じゃあね*ー*, バイバイ*っ*).
_JA_SOFTENERS = r"(?:なさい|なさーい|でした|です|ね|よ|な|っ|ー|~|〜|～|w)*"
#: Where a Japanese farewell must then stop: the end of the line or any character that is not part of a word
#: (punctuation, a space, a closing bracket, a symbol, an emoji), but not a question mark ("明日はおやすみ?"
#: asks about a day off).
_JA_STOP = r"(?=$|[^\w?？])"
#: A Latin phrase is no farewell before these ("take care of it", "see you're", "bye-bye" aside).
_LATIN_STOP = r"(?![\w'])(?!\s+(?:of|that)\b)"

#: Words after which a Latin phrase is part of another sentence, not a farewell: "to" (excited to see you),
#: a subject (I see you), an auxiliary (didn't see you), an article or possessive (a good night, my goodbye
#: party), reported speech (she said goodbye).
_EMBEDDERS = frozenset(
    "to i you u we they he she it who can could would should might may must will did do does didn't don't "
    "doesn't can't cannot couldn't won't wouldn't never not a an the my your his her our their had has "
    "saying said says without".split()
)
#: ... except after these two words ("hope to see you", "have a good night").
_LEADS = frozenset({"hope to", "hoping to", "have a"})
_BOUNDARY = re.compile(r"[.,!?;:…。、！？()\[\]~〜\-–—]")
_WORD = re.compile(r"[\w']+")

_QUOTED = re.compile(r"「[^「」]*」|『[^『』]*』|“[^“”]*”|\"[^\"]*\"")
_QUESTION = re.compile(r"[?？]|(?:ですか|ますか|ませんか|でしょうか)(?!\w)")
_MORE_TALK = re.compile(
    r"\b(?:by the way|btw|anyway|anyways|actually|wait|oh and|one more thing|i mean|speaking of|also|but)\b"
    r"|じゃなくて|ところで|そういえば|そうだ(?![ねよなっ])|待って|それより|あとね|あとさ"
)
_INVITATION = re.compile(
    "|".join(
        [
            # English: asking someone along, or telling them to come.
            r"\b(?:will|would|won't|can|could|do) (?:you|u) (?:come|join|make it|be there)\b",
            r"\bwould (?:you|u) like to\b",
            r"\b(?:you|u)(?:'d| would)? (?:want|wanna|like) to (?:come|join)\b",
            r"\b(?:are|r) (?:you|u) coming\b",
            r"\b(?:you're|you are|you're all|you are all) (?:invited|welcome to)\b",
            r"\b(?:invite|inviting) (?:you|u)\b",
            r"\bjoin (?:us|me)\b",
            r"\b(?:hope|hoping) (?:you|u) (?:can|could|will|'ll) (?:come|make it|join)\b",
            r"(?:^|[.,!?;:…]\s*|\b(?:please|do|you should|you must|you have to|you gotta|why don't you|why not)"
            r"\s+)come (?:to|over|along|by|with|and)\b",
            # Japanese: 来ない？ 来ませんか 来てね 遊びにきてよ おいでよ 待ってるね 一緒に行かない 行こうよ 招待
            r"(?:来|こ)(?:ない|ません)(?:か|[?？])",
            r"(?:来|にき)て(?:ね|よ|ください|下さい|ほしい|欲しい|くれ|もらえ)",
            r"おいで(?:よ|ね|$|[^\w])",
            r"いらして|いらっしゃいませんか",
            r"待って(?:る|ます|います)(?:ね|よ|から|$|[^\w])",
            r"一緒に[^。！？!?]{0,15}(?:ない|ませんか|ましょう|よう)",
            r"(?<!ありが)(?<=[\u3040-\u30ff\u4e00-\u9fff])[おこごそとのぼもろよ]う(?:よ|ぜ)|ましょうよ",
            r"招待|誘いに|誘いたく|参加(?:して(?:ね|よ|ください|ほしい)|しない|しませんか)",
        ]
    )
)


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().replace("’", "'").replace("‘", "'")


def _unquoted(text: str) -> str:
    """The line without what it quotes (a line that is one quotation is unwrapped instead)."""
    text = text.strip()
    if _QUOTED.fullmatch(text):
        text = text[1:-1]
    return _QUOTED.sub(" ", text)


def _weight(text: str) -> int:
    return sum(1 if char.isascii() else 2 for char in text if char.isalnum())


@lru_cache(maxsize=16)
def _farewell_pattern(phrases: tuple[str, ...]) -> re.Pattern[str] | None:
    # Longest first, so that at one place the whole phrase is found ("good night" before "night").
    parts = []
    for phrase in sorted({_fold(p).strip() for p in phrases} - {""}, key=len, reverse=True):
        escaped = re.escape(phrase)
        if phrase.isascii():
            parts.append(rf"(?<![\w']){escaped}{_LATIN_STOP}")
        else:
            parts.append(rf"{escaped}{_JA_SOFTENERS}{_JA_STOP}")
    return re.compile("|".join(parts)) if parts else None


def _embedded(before: str) -> bool:
    """Whether a Latin phrase after `before` is part of another sentence (see _EMBEDDERS)."""
    words = _WORD.findall(_BOUNDARY.split(before)[-1])
    if not words or " ".join(words[-2:]) in _LEADS:
        return False
    return words[-1] in _EMBEDDERS


def _farewells(line: str, phrases: Sequence[str]) -> list[re.Match[str]]:
    """The farewell phrases of a folded, unquoted line that stand as farewells (rule 1)."""
    pattern = _farewell_pattern(tuple(phrases))
    if pattern is None:
        return []
    return [
        match
        for match in pattern.finditer(line)
        if not match.group().isascii() or not _embedded(line[: match.start()])
    ]


def _closes(tail: str) -> bool:
    """Whether what follows the last farewell leaves it the line's close (rule 3)."""
    return not _QUESTION.search(tail) and not _MORE_TALK.search(tail) and _weight(tail) <= TAIL_WEIGHT


def ends_with_farewell(text: str, phrases: Sequence[str]) -> bool:
    """Whether the line closes with a goodbye (rules 1 and 3), whatever else it does: the test for "has the
    speaker already said goodbye back", where an invitation before the goodbye does not matter."""
    line = _unquoted(_fold(text))
    found = _farewells(line, phrases)
    return bool(found) and _closes(line[found[-1].end() :])


def invites(text: str) -> bool:
    """Whether the line extends an invitation (rule 2: come to / join us / 来てね / 来ない？ ...), quotes aside."""
    return _INVITATION.search(_unquoted(_fold(text))) is not None


def has_farewell(text: str, phrases: Sequence[str], *, opening: bool = False) -> bool:
    """Whether the line says goodbye, so that it ends a talk (see the module docstring).

    Args:
        text: the spoken line (no "Name:" prefix).
        phrases: the farewell phrases (FAREWELL_PHRASES), matched NFKC-normalised and without case.
        opening: the line is the conversation's first (rule 4 applies).
    """
    line = _unquoted(_fold(text))
    found = _farewells(line, phrases)
    if not found or _INVITATION.search(line) or not _closes(line[found[-1].end() :]):
        return False
    if not opening:
        return True
    rest = line
    for match in reversed(found):
        rest = f"{rest[: match.start()]} {rest[match.end() :]}"
    return not _QUESTION.search(line) and _weight(rest) <= OPENING_REST_WEIGHT
