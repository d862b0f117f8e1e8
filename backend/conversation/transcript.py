"""The stored transcript is the server's: the history Unity sends is checked against it, never replaces it.

The rule (docs/mind.md, "A turn", and the protocol README state it for Unity):
- The lines a conversation already has are the stored transcript. A history line at one of those places that
  says something else (compared once speakers are written by display name, spaces collapsed and width folded)
  is answered from the stored line: the prompt and the stored transcript keep the server's line, the reply
  lists each such place in `history_fixes` (its index and the stored line, for Unity to copy), and the
  server logs it. Nothing Unity sends rewrites a line the conversation has.
- History lines past the stored transcript are Unity's own (an opener it scripted, a player's line): stored
  as sent, once, and from then on part of the stored transcript like the server's lines.
- A history shorter than the stored transcript is behind the conversation: 409 naming `history` (a retry of
  a stored turn is answered with the stored reply before this is checked).
So the transcript only grows, and `turn_count` is always its length.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from backend.errors import Conflict


@dataclass
class Checked:
    """A turn's history after the check: the stored lines in their places, and where Unity's differed."""

    history: list[str]
    fixes: list[dict[str, Any]] = field(default_factory=list)


def _key(line: str) -> str:
    return unicodedata.normalize("NFKC", " ".join(line.split()))


def check_history(history: Sequence[str], stored: Sequence[str]) -> Checked:
    """`history` with every line the conversation has stored in its place (see the module docstring)."""
    checked = Checked(list(history))
    for index, line in enumerate(stored[: len(history)]):
        if _key(line) != _key(history[index]):
            checked.fixes.append({"index": index, "line": line})
        checked.history[index] = line
    return checked


def check_not_behind(session_id: str, turn_index: int, stored_lines: int) -> None:
    """A new turn's history holds every stored line: one that stops short is a 409 naming `history`."""
    if stored_lines > turn_index:
        raise Conflict(
            f"history has {turn_index} lines but conversation {session_id!r} has {stored_lines}: send all of "
            f"them, oldest first (GET /v1/conversations/{session_id} has its transcript)",
            details={"field": "history", "turn_index": turn_index, "transcript_lines": stored_lines},
        )


def after_turn(stored: Sequence[str], history: Sequence[str], line: str) -> list[str]:
    """The transcript once a turn is stored: the stored lines, Unity's own lines past them, the turn's line."""
    return [*stored, *history[len(stored) :], line]
