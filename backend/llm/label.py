"""Field labels in a reply: a model that writes "Sam's line: Hi!" or "（葵のセリフ）こんにちは" labels its answer
with a field's name or its description in other words.

The rule, for a free-text value (llm/echo.py applies it to every scalar string it checks):
- a label at the start is cut off when a proper line follows it ("Answer: I went to the party." -> "I went
  to the party."), and the value is refused when nothing follows ("Sam's spoken reply to the question:");
- a label after a sentence of the reply ("Sure. Sam's reply: ...") is refused: the model is writing about
  the reply instead of writing it;
- a value that only says who speaks ("Ben says:", "Sam replied.") is refused; with words after it ("Tom
  said: come at seven!") it is a line, kept as said (passing on a quote names its source).

A label is, in English, "<field name>:", or a reply word ("reply", "answer", "line", "response", "words",
"dialogue", "speech") after an optional possessive ("Sam's", "the character's") and a few adjectives
("spoken", "next"), then at most a short "to/for/of/from ..." phrase, then a colon; in Japanese, the same
words (セリフ, 台詞, 返事, 返答, 回答, 答え, 発言, 応答) after an optional "〜の", then a colon; in either
language, such a phrase in brackets ("(Sam's reply)", "（葵のセリフ）"). A colon is needed outside brackets:
"My answer is yes" and "答えはまだ" are answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: What may come before a label (quotes, list marks, markdown emphasis).
_LEAD = r"[\s\"'`“‘「『*_#>\-•・]*"
_EN_NOUN = r"(?:reply|replies|answer|answers|line|lines|response|words|dialogue|dialog|speech|utterance)"
_EN_ADJ = r"(?:(?:spoken|in-character|next|short|own|final|actual|new|first)\s+)"
_EN_WHO = r"(?:(?:the\s+)?[\w\-]+(?:\s+[\w\-]+)?['’]s\s+)"
_EN_TAIL = r"(?:\s+(?:to|for|of|from|as|in)\b[^:：\n()（）\[\]]{0,60}?)?"
_EN = rf"{_EN_WHO}?{_EN_ADJ}*{_EN_NOUN}{_EN_TAIL}"
_JA_NOUN = r"(?:セリフ|せりふ|台詞|返事|返答|回答|答え|発言|応答|ひとこと|一言)"
_JA = rf"(?:[^\s:：「」『』（）()【】\[\]。、]{{1,30}}の)?{_JA_NOUN}(?:です|だよ|として)?"
_BRACKETED = rf"(?:[（(【\[]\s*(?:{_EN}|{_JA})\s*[）)】\]])"
#: A whole value that is a label without its colon: a possessive or "〜の" description, or a bare reply word.
_WHOLE = (
    rf"(?:{_BRACKETED}|{_EN_WHO}{_EN_ADJ}*{_EN_NOUN}{_EN_TAIL}|{_EN_ADJ}*{_EN_NOUN}"
    rf"|[^\s:：「」『』（）()【】\[\]。、]{{1,30}}の{_JA_NOUN}|{_JA_NOUN}"
    # Only who speaks, with nothing said: "Ben says:" (SmolLM2's whole interview answer).
    rf"|[\w\-]+(?:\s+[\w\-]+)?\s+(?:says|said|asks|asked|replies|replied|answers|answered))"
)
_COLON = r"\s*(?:[:：]|[-–—]{1,2}(?=\s))"


def _label(fields: tuple[str, ...]) -> str:
    names = "|".join(re.escape(f) for f in sorted(fields, key=len, reverse=True) if f)
    plain = rf"(?:{_EN}|{_JA}{'|' + names if names else ''})"
    return rf"(?:{_BRACKETED}(?:{_COLON})?|{plain}{_COLON})"


#: Where a sentence of the reply ends: a label after one is refused.
_SENTENCE_END = re.compile(r"[.!?。！？…\n]\s*")
_CACHE: dict[tuple[str, ...], tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]] = {}


def _patterns(fields: Iterable[str]) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(a label at the start and what follows it, a label here (for `match` at a position), a whole label)."""
    key = tuple(sorted({f.strip() for f in fields if f.strip()}))
    if key not in _CACHE:
        label = _label(key)
        flags = re.IGNORECASE
        _CACHE[key] = (
            re.compile(rf"^{_LEAD}{label}[\s*_\"'`”’」』]*", flags),
            re.compile(rf"{_LEAD}(?:{label})", flags),
            re.compile(rf"^{_LEAD}{_WHOLE}[\s\"'`”’」』*_.。:：]*$", flags),
        )
    return _CACHE[key]


def unlabelled(value: str, fields: Iterable[str] = ()) -> str | None:
    """`value` without its leading label; None when it has none. The result may be empty or a bare mark:
    then the value was only a label (see `label_problem`).

    Args:
        value: a reply's free-text value.
        fields: the reply schema's field names ("dialogue", "answer"), labels on their own with a colon.
    """
    start, _, whole = _patterns(fields)
    if whole.match(value):
        return ""
    found = start.match(value)
    if found is None:
        return None
    rest = value[found.end() :].strip()
    # "「こんにちは」" after a label: the quote marks were the label's, not the line's.
    if len(rest) >= 2 and rest[0] in '「『"“' and rest[-1] in '」』"”' and rest.count(rest[-1]) == 1:
        rest = rest[1:-1].strip()
    return rest


def label_problem(value: str, fields: Iterable[str] = ()) -> str | None:
    """Why `value` is not a line because of a label: only a label, or a label after its first sentence."""
    rest = unlabelled(value, fields)
    if rest is not None and len(rest.strip(" .。…!！?？\"'「」")) < 2:
        return "is only a label or a description of the field, not an answer"
    text = value if rest is None else rest
    _, here, _ = _patterns(fields)
    for end in _SENTENCE_END.finditer(text):
        if end.end() < len(text) and here.match(text, end.end()):
            return "labels its answer like a form (a field name or description), not a line said aloud"
    return None
