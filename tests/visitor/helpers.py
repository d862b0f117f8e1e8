"""Helpers for the visitor and group tests: a visitor's line, a third agent, the dialogue prompts."""

from __future__ import annotations

from typing import Any

from backend.conversation.prompts import HISTORY_CLOSE, HISTORY_OPEN
from backend.scripted import ScriptedLLM

REN = {
    "id": "ren",
    "name": "蓮",
    "language": "ja",
    "backstory": "花屋の店主。",
    "speaking_style": "静かで短い。",
}
YUKI = "player:yuki"


def visitor_line(
    session_id: str, text: str, history: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    body = {
        "session_id": session_id,
        "player_id": YUKI,
        "agent_id": "aoi",
        "text": text,
        "location_name": "中央カフェ",
        "history": history or [],
        "time_of_day": 10.0,
    }
    body.update(extra)
    return body


def say(text: str, *, end: bool = False, emotion: str = "neutral") -> dict[str, Any]:
    """A scripted dialogue reply."""
    return {"dialogue": text, "emotion": emotion, "is_conversation_end": end}


def dialogue_prompts(scripted: ScriptedLLM) -> list[list[dict[str, str]]]:
    """The messages of every dialogue call the model got, oldest first."""
    return [call.messages for call in scripted.calls("dialogue")]


def quoted_blocks(moment: str) -> tuple[list[str], str]:
    """The quoted blocks of a prompt in order, and the text outside them."""
    blocks, outside, rest = [], [], moment
    while HISTORY_OPEN in rest:
        before, rest = rest.split(HISTORY_OPEN, 1)
        block, rest = rest.split(HISTORY_CLOSE, 1)
        outside.append(before)
        blocks.append(block)
    return blocks, "".join([*outside, rest])
