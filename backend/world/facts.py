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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from backend.world import repo
from backend.world import service as world_service
from backend.world.nearby import Spot

if TYPE_CHECKING:
    from backend.storage.db import Session


@dataclass(frozen=True)
class WorldFacts:
    """What an action may name: the world's places (id -> name), agents and gestures, and the conversation's
    participants (players included, `player:` ids)."""

    pois: Mapping[str, str]
    agents: frozenset[str]
    gestures: tuple[str, ...]
    participants: frozenset[str] = field(default_factory=frozenset)
    #: Each place as the prompt's offer reads it (id, name, position on the ground): world/nearby.py.
    spots: tuple[Spot, ...] = ()
    #: Every agent's display name by id (who a line of news names).
    names: Mapping[str, str] = field(default_factory=dict)

    def with_participants(self, ids: Iterable[str]) -> WorldFacts:
        """These facts, with the participants of a conversation added."""
        return replace(self, participants=self.participants | frozenset(ids))

    def knows_person(self, person_id: str) -> bool:
        return person_id in self.agents or person_id in self.participants

    def poi_id(self, target: str) -> str | None:
        """The place `target` names, by id or else by its exact name; None when there is none."""
        if target in self.pois:
            return target
        return next((poi_id for poi_id, name in self.pois.items() if name == target), None)


def read_world_facts(session: Session, world_id: str, *, participants: Iterable[str] = ()) -> WorldFacts:
    """The world's places, agents (ids and names) and gestures (the default list when it declared none),
    read now in `session` (a turn reads them through `WorldFactsCache`)."""
    pois, agents, declared = repo.action_targets(session, world_id)
    return WorldFacts(
        pois={poi_id: name for poi_id, name, _x, _z in pois},
        spots=tuple(Spot(poi_id, name, x, z) for poi_id, name, x, z in pois),
        agents=frozenset(agents),
        gestures=tuple(world_service.gestures(declared)),
        participants=frozenset(participants),
        names=repo.name_map(session, world_id),
    )


#: Worlds kept at most (a server hosts a few); past it the cache starts over.
MAX_WORLDS = 64


class WorldFactsCache:
    """World facts by world id, each as of its revision. Thread-safe; one per app (`app.state.world_facts`)."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[int, WorldFacts]] = {}
        self._lock = threading.Lock()
        self.loads = 0  # full reads of a world's facts (a miss or a moved revision), for tests

    def read(self, session: Session, world_id: str) -> WorldFacts:
        """The world's facts as of now, read in `session` (one query when nothing changed)."""
        rev = repo.facts_rev(session, world_id)
        with self._lock:
            kept = self._kept.get(world_id)
        if kept is not None and kept[0] == rev:
            return kept[1]
        facts = read_world_facts(session, world_id)
        with self._lock:
            if len(self._kept) >= MAX_WORLDS and world_id not in self._kept:
                self._kept.clear()
            self._kept[world_id] = (rev, facts)
            self.loads += 1
        return facts
