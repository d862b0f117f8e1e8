"""A world's facts kept between turns, checked against the database on every read.

Every turn needs the world's places (what its actions may name, what its news's place is called), its
agents' ids and names, and its gestures. Read as rows, that is a scan of every place and agent per turn: at
400 agents and 512 places it was 30% of the API process's busy time. Kept here per world with the revision
of the world's facts (`WorldStamp`, raised in the same transaction as every change to them: a place or an
agent added, changed or removed, gestures declared, an import or a town loaded), a read costs one narrow
query for the revision; the facts are read again only when it moved, so a change made by another process is
seen on its next read. A reader that loaded the facts while a writer committed keeps them under the older
revision and reloads on the next read (a revision is never reused: the stamp is not part of an export).

The kept facts are shared between threads and never changed: callers add a conversation's participants with
`WorldFacts.with_participants`, which makes a copy.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from backend.action.validate import WorldFacts, read_world_facts
from backend.world import repo

if TYPE_CHECKING:
    from backend.storage.db import Session

#: Worlds kept at most (a server hosts a few); past it the cache starts over.
MAX_WORLDS = 64


class WorldFactsCache:
    """World facts by world id, each as of its revision. Thread-safe; one per app (`app.state.world_facts`)."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[int, WorldFacts]] = {}
        self._lock = threading.Lock()
        self.loads = 0  # full reads of a world's facts (a miss or a moved revision), for tests and /health

    def read(self, session: Session, world_id: str) -> WorldFacts:
        """The world's facts as of now, read in `session` (one query when nothing changed)."""
        rev = repo.facts_rev(session, world_id)
        with self._lock:
            kept = self._kept.get(world_id)
        if kept is not None and kept[0] == rev:
            return kept[1]
        facts = load(session, world_id)
        with self._lock:
            if len(self._kept) >= MAX_WORLDS and world_id not in self._kept:
                self._kept.clear()
            self._kept[world_id] = (rev, facts)
            self.loads += 1
        return facts

    def size(self) -> int:
        """Worlds kept."""
        with self._lock:
            return len(self._kept)


def load(session: Session, world_id: str) -> WorldFacts:
    """The world's facts read now (action/validate.py)."""
    return read_world_facts(session, world_id)
