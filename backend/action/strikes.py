"""Actions turned off for a conversation whose replies keep naming what the world lacks.

A model that wrote ACTIONS_OFF_AFTER_INVALID invalid action lists in a row (a list with a dropped action,
validate.py) in one conversation is asked without actions for the rest of it: the prompt and the reply are
shorter, and the line no longer shares its tokens with actions it cannot get right. Kept in memory, per
session id, for the most recent sessions only (a restart asks with actions again).
"""

from __future__ import annotations

import collections
import logging

log = logging.getLogger(__name__)

#: Conversations whose count is kept (the oldest forgotten first).
SESSIONS_KEPT = 4096


class ActionStrikes:
    """Invalid action lists in a row, per conversation, and the conversations whose actions are off."""

    def __init__(self, limit: int, kept: int = SESSIONS_KEPT) -> None:
        self.limit = limit  # 0: never turned off
        self.kept = kept
        self._counts: collections.OrderedDict[str, int] = collections.OrderedDict()

    def off(self, session_id: str) -> bool:
        """Whether this conversation's turns are asked without actions."""
        return self.limit > 0 and self._counts.get(session_id, 0) >= self.limit

    def record(self, session_id: str, *, invalid: bool) -> bool:
        """Count one reply's action list (`invalid`: it had a dropped action; a valid one resets the count).

        Returns:
            True when this list turned the conversation's actions off (logged once, at WARNING).
        """
        if self.limit <= 0 or self.off(session_id):
            return False
        count = self._counts.pop(session_id, 0) + 1 if invalid else 0
        self._counts[session_id] = count
        while len(self._counts) > self.kept:
            self._counts.popitem(last=False)
        if count < self.limit:
            return False
        log.warning(
            "actions off for conversation %s: %d invalid action lists in a row (ACTIONS_OFF_AFTER_INVALID=%d); "
            "its next turns are asked without actions",
            session_id, count, self.limit,
        )  # fmt: skip
        return True
