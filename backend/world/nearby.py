"""The places that matter to one agent now: what a prompt offers, so that it does not grow with the town.

A town of 400 agents has 512 places; a turn prompt that lists every one as a `go_to` target spends 4,900
tokens on it, and a plan prompt 15,000, crowding the character's memories out of a small model's context.
A prompt offers at most PROMPT_PLACES_MAX places (settings), chosen in this order, each once:

1. where the agent is now;
2. its home;
3. the places its plan, its intentions and the news it is telling name (by id);
4. the places named in the text the prompt shows (memories, intentions: "a party at the Corner Cafe"),
   by any of their names;
5. the nearest others to where it is (its last reported position, else its home's), then by id.

What a reply may name is still any place of the world: validation reads the world, not the offer. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from backend.world.places import Place, fold, names_label


@dataclass(frozen=True)
class Spot:
    """A place as the offer reads it: its id, its name and where it stands (x, z on the ground)."""

    id: str
    name: str
    x: float = 0.0
    z: float = 0.0


def offered(
    places: Sequence[Spot],
    *,
    cap: int,
    here: str | None = None,
    home: str | None = None,
    named: Iterable[str | None] = (),
    text: str = "",
    position: tuple[float, float] | None = None,
) -> list[Spot]:
    """At most `cap` of `places` for a prompt, in the order of the module docstring (ids unknown to the
    world are skipped). `here` may be a place's id or name; `position` is (x, z)."""
    by_id = {spot.id: spot for spot in places}
    chosen: dict[str, Spot] = {}

    def take(spot: Spot | None) -> None:
        if spot is not None and len(chosen) < cap:
            chosen.setdefault(spot.id, spot)

    take(_find(here, places, by_id))
    take(by_id.get(home or ""))
    for place_id in named:
        take(by_id.get(place_id or ""))
    if text and len(chosen) < cap:
        for spot in _mentioned(text, places):
            take(spot)
    if len(chosen) < cap:
        centre = position or _where(chosen.get(here or "") or by_id.get(home or ""))
        rest = [spot for spot in places if spot.id not in chosen]
        if centre is not None:
            rest.sort(key=lambda s: (math.hypot(s.x - centre[0], s.z - centre[1]), s.id))
        else:
            rest.sort(key=lambda s: s.id)
        for spot in rest[: cap - len(chosen)]:
            take(spot)
    return list(chosen.values())


def position_of(raw: Mapping[str, Any] | None) -> tuple[float, float] | None:
    """(x, z) of an agent's last reported position (`{"x": .., "y": .., "z": ..}`), None when unknown."""
    if not raw:
        return None
    try:
        return float(raw["x"]), float(raw["z"])
    except (KeyError, TypeError, ValueError):
        return None


def _find(here: str | None, places: Sequence[Spot], by_id: dict[str, Spot]) -> Spot | None:
    if not here:
        return None
    if here in by_id:
        return by_id[here]
    folded = fold(here)
    return next((spot for spot in places if fold(spot.name) == folded), None)


def _where(spot: Spot | None) -> tuple[float, float] | None:
    return (spot.x, spot.z) if spot is not None else None


def _mentioned(text: str, places: Sequence[Spot]) -> list[Spot]:
    """The places `text` names, in the order it names them (by id or any name, whole words for Latin)."""
    norm = fold(text)
    found: list[tuple[int, Spot]] = []
    for spot in places:
        for label in Place(spot.id, spot.name).labels():
            if names_label(norm, label):
                found.append((norm.find(label), spot))
                break
    return [spot for _at, spot in sorted(found, key=lambda f: f[0])]
