"""End rules, farewells, emotion presets and fallback lines: the server's decisions about a turn.

End-rule precedence (when several apply, the reported `end_reason` is the first that holds). The order is
"most binding first": the rule that would have ended the conversation whatever the model wrote wins.
  1. "max_turns" - the hard limit: history lines plus this one reached MAX_TURNS (content-independent);
  2. "farewell"  - the new line or the partner's last line says goodbye (a social close: a farewell phrase
                   that closes the line and no invitation or question; on an opening line, nothing but a
                   goodbye: backend/conversation/farewell.py);
  3. "model"     - the model set `is_conversation_end` without a goodbye (its own choice), from the second line
                   on: a first line opens a conversation (small models set the flag on 8 of 10 openers).
Any of them ends the conversation; the order only decides which reason is reported.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from backend.conversation.farewell import ends_with_farewell, has_farewell
from backend.conversation.schemas import EMOTIONS

#: The model's own end flag counts from this line of a conversation on (1 = the opening line).
MODEL_END_FROM_LINE = 2

#: Labels a model may use instead of a preset (Plutchik names, synonyms, Japanese words) -> preset.
EMOTION_SYNONYMS = {
    "joy": "happy", "joyful": "happy", "glad": "happy", "excited": "happy", "cheerful": "happy",
    "amused": "happy", "trust": "relaxed", "calm": "relaxed", "content": "relaxed", "peaceful": "relaxed",
    "relieved": "relaxed", "anger": "angry", "annoyed": "angry", "irritated": "angry", "mad": "angry",
    "disgust": "angry", "frustrated": "angry", "sadness": "sad", "lonely": "sad", "upset": "sad",
    "disappointed": "sad", "fear": "surprised", "afraid": "surprised", "surprise": "surprised",
    "shocked": "surprised", "astonished": "surprised", "anticipation": "happy", "curious": "neutral",
    "嬉しい": "happy", "うれしい": "happy", "喜び": "happy", "楽しい": "happy", "怒り": "angry",
    "悲しい": "sad", "悲しみ": "sad", "驚き": "surprised", "穏やか": "relaxed", "安心": "relaxed",
}  # fmt: skip

FALLBACK_LINES = {
    "ja": [
        "ごめん、ちょっと考えごとしてた…",
        "えっと…なんだっけ、ちょっとぼーっとしてた。",
        "あ、ごめん、聞き逃しちゃった。",
    ],
    "en": [
        "Sorry, I lost my train of thought...",
        "Hm? Sorry, my mind wandered for a second.",
        "Oh, sorry, I didn't quite catch that.",
    ],
}
FAREWELL_LINES = {
    "ja": ["じゃあね、またね！", "うん、またね。", "また話そうね、バイバイ！"],
    "en": ["See you!", "Bye for now!", "Take care, see you soon!"],
}
FALLBACK_FAREWELLS = {
    "ja": ["あ、もう行くの？うん、またね。", "ごめん、ぼーっとしてた。じゃあね、またね！"],
    "en": ["Oh, you're off? Bye for now!", "Sorry, I was miles away. See you!"],
}

_SPEAKER_PREFIX = re.compile(r"^\s*[^:：\n]{1,64}[:：]\s*")


def preset_emotion(label: str | None, default: str | None = None) -> str:
    """Map the model's emotion word onto one of the six VRM presets.

    A preset or a known synonym (joy -> happy ...) is kept. When the model gave none, or a word that maps
    to nothing, `default` is used: the preset the speaker's Plutchik state shows (backend/emotion/plutchik
    `vrm_preset`), so the face agrees with the state; without a state, neutral.
    """
    fallback = default if default in EMOTIONS else "neutral"
    if not label:
        return fallback
    key = unicodedata.normalize("NFKC", label).strip().lower()
    if key in EMOTIONS:
        return key
    return EMOTION_SYNONYMS.get(key, fallback)


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def named_lines(history: Sequence[str], people: Sequence[Any]) -> list[str]:
    """History lines with each speaker written by display name: Unity may put an agent's id or its name
    before the colon ("hikari: ..." or "ひかり: ..."), matched without regard to case or width. A line whose
    prefix names neither of `people` (objects with `.id` and `.name`) is kept as it came."""
    names = {_norm(key).strip(): person.name for person in people for key in (person.id, person.name)}
    named = []
    for line in history:
        prefix = _SPEAKER_PREFIX.match(line)
        who = names.get(_norm(prefix.group(0).rstrip().rstrip(":：")).strip()) if prefix else None
        named.append(f"{who}: {line[prefix.end() :]}" if prefix and who else line)
    return named


def line_text(history_line: str) -> str:
    """The spoken part of a `"Name: line"` history entry."""
    return _SPEAKER_PREFIX.sub("", history_line, count=1)


def decide_end(
    *,
    model_flag: bool,
    new_line: str,
    partner_last: str | None,
    turn_count: int,
    max_turns: int,
    phrases: Sequence[str],
) -> str | None:
    """The end reason for a turn (see the module docstring for precedence), or None to go on.

    `turn_count` counts the lines of the conversation including this one (1 for the opening line).
    """
    if turn_count >= max_turns:
        return "max_turns"
    # Each line is weighed as the line it was: the partner's last line opened the talk when this is the second.
    said = has_farewell(new_line, phrases, opening=turn_count == 1)
    if said or (partner_last and has_farewell(partner_last, phrases, opening=turn_count == 2)):
        return "farewell"
    if model_flag and turn_count >= MODEL_END_FROM_LINE:
        return "model"
    return None


def _stable_index(key: str, count: int) -> int:
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:4], "big") % count


def lang_key(language: str | None) -> str:
    return "en" if str(language or "ja").lower().startswith("en") else "ja"


def fallback_line(agent_id: str, language: str | None, *, farewell: bool = False) -> str:
    """An in-character line for when the model failed: deterministic per agent and language."""
    lines = (FALLBACK_FAREWELLS if farewell else FALLBACK_LINES)[lang_key(language)]
    return lines[_stable_index(agent_id, len(lines))]


def ensure_farewell(line: str, agent_id: str, language: str | None, phrases: Sequence[str]) -> str:
    """The line, with a goodbye appended when it does not close with one (the partner said goodbye)."""
    if ends_with_farewell(line, phrases):
        return line
    lang = lang_key(language)
    goodbye = FAREWELL_LINES[lang][_stable_index(agent_id, len(FAREWELL_LINES[lang]))]
    if not line:
        return goodbye
    if lang == "ja":
        return f"{line}{goodbye}" if line[-1] in "。！？!?…、" else f"{line}。{goodbye}"
    return f"{line} {goodbye}" if line[-1] in ".!?" else f"{line}. {goodbye}"
