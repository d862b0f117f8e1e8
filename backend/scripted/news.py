"""What the scripted writers share about news and invitations: spotting an invitation in a line, saying
one's own news or passing another's on, and whether a character likes an event (decided the same way by
the dialogue writer that answers the invitation and the intention writer that plans for it next morning).
"""

from __future__ import annotations

import hashlib
import re

from backend.intention.appointment import find_hour
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
