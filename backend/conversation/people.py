"""A conversation's participants as the prompt, the memories and the rules see them: agents, and players
(visitors) shown as agent-shaped records that are never stored (a display name, a language, no persona)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backend.conversation import repo
from backend.ids import is_player
from backend.player import repo as players
from backend.world.cache import AgentCache
from backend.world.models import Agent


def visitor(world_id: str, player_id: str, name: str | None, language: str | None) -> Agent:
    """A player as the prompt and memories see them (an Agent record that is never stored)."""
    return Agent(
        world_id=world_id,
        id=player_id,
        name=name or players.default_name(player_id),
        language=language or "ja",
        backstory="",
        traits=[],
    )


def read_people(session: Any, agents: AgentCache, world_id: str, ids: Sequence[str]) -> dict[str, Agent]:
    """The participants with these ids, read in `session`: agents that exist, and every player (one Unity
    never registered is named after its id)."""
    found = agents.get_many(session, world_id, [i for i in ids if not is_player(i)])
    wanted = [i for i in ids if is_player(i)]
    rows = players.get_many(session, world_id, wanted)
    for player_id in wanted:
        row = rows.get(player_id)
        found[player_id] = visitor(
            world_id, player_id, row.display_name if row else None, row.language if row else None
        )
    return found


def with_members(
    session: Any, agents: AgentCache, world_id: str, found: dict[str, Agent], members: Sequence[str]
) -> dict[str, Agent]:
    """`found` with the conversation's other `members` read too (those not already in it)."""
    rest = [member for member in members if member not in found]
    return {**found, **read_people(session, agents, world_id, rest)}


def read_people_apart(engine: Any, agents: AgentCache, world_id: str, ids: Sequence[str]) -> dict[str, Agent]:
    """`read_people` in a session of its own."""
    with repo.read_session(engine) as session:
        return read_people(session, agents, world_id, ids)
