"""What a character says instead of a blocked line: a polite, in-character turn away from the topic.

The variant is chosen by agent id and attempt, not at random: the same character deflects the same way on
a replay, and a second deflection in a row (attempt 1) is worded differently from the first.
"""

from __future__ import annotations

import hashlib

DEFLECTIONS: dict[str, tuple[str, ...]] = {
    "ja": (
        "えっと…その話はちょっと。別のことを話しませんか？",
        "うーん、その話はやめておきましょう。最近、何か楽しいことはありました？",
        "ごめんなさい、その話題は苦手で…。よかったら別の話をしませんか？",
        "あはは…それはちょっと答えにくいですね。ほかの話をしましょう。",
        "その話はまた今度にしませんか？ それより、今日はどんな一日でしたか？",
        "んー、そういう話はちょっと…。何か別の話を聞かせてください。",
    ),
    "en": (
        "Hm, let's talk about something else, shall we?",
        "Oh, I'd rather not talk about that. How has your day been?",
        "Hmm, that's not something I want to get into. Tell me about something else?",
        "Let's leave that topic alone. What brings you here today?",
        "Ah, I'm not comfortable with that. Could we talk about something else?",
        "I'll pass on that one. Is there anything else on your mind?",
    ),
}


def deflection(agent_id: str, language: str, *, attempt: int = 0) -> str:
    """A deflecting line in `language` ("ja", else English), the same for the same agent and attempt."""
    lines = DEFLECTIONS["ja" if language.lower().startswith("ja") else "en"]
    start = int.from_bytes(hashlib.sha256(agent_id.encode("utf-8")).digest()[:4], "big")
    return lines[(start + attempt) % len(lines)]
