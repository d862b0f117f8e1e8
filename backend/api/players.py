"""Visitors: `PUT|GET|DELETE /v1/players/{player_id}`, `GET /v1/players`."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Path, Response

from backend.api.deps import EngineDep, SessionDep, VisitorsDep, WorldDep
from backend.errors import NotFound
from backend.ids import ID_RULE, ParticipantId
from backend.ids import player_id as full_id
from backend.player import repo
from backend.player.models import Player
from backend.player.schemas import PlayerList, PlayerPublic, PlayerUpsert

router = APIRouter(prefix="/v1/players", tags=["players"])
PlayerPath = Annotated[
    ParticipantId,
    Path(
        description=f"`player:` and an id of {ID_RULE} (the prefix may be left out: `guest-1` is `player:guest-1`)",
    ),
]


def public(row: Player) -> PlayerPublic:
    return PlayerPublic.model_validate(row, from_attributes=True)


@router.put("/{player_id}", response_model=PlayerPublic)
async def put_player(
    player_id: PlayerPath,
    body: PlayerUpsert,
    engine: EngineDep,
    visitors: VisitorsDep,
    world: WorldDep,
    response: Response,
) -> PlayerPublic:
    """Register a visitor, or change their display name or language (201 when new). A visitor Unity never
    registered is known by their id from their first line (named after it). A name that breaks the name
    rules, that moderation holds back or that is a character's name is a 422 naming `display_name`."""
    # The name is checked first (moderation may call the provider), holding no pooled connection meanwhile:
    # 40 registrations at once would otherwise hold the pool while waiting for more of it.
    name = await visitors.checked_name(world, body.display_name)
    update = body.model_copy(update={"display_name": name})
    row, created = await asyncio.to_thread(repo.register, engine, world, full_id(player_id), update)
    response.status_code = 201 if created else 200
    return public(row)


@router.get("/{player_id}", response_model=PlayerPublic)
def get_player(player_id: PlayerPath, session: SessionDep, world: WorldDep) -> PlayerPublic:
    """One visitor. 404 when this world has never heard of them."""
    pid = full_id(player_id)
    row = repo.get(session, world, pid)
    if row is None:
        raise NotFound(f"no player {pid!r} in world {world!r}", details={"player_id": pid})
    return public(row)


@router.get("", response_model=PlayerList)
def list_players(session: SessionDep, world: WorldDep) -> PlayerList:
    """This world's visitors, most recently seen first."""
    return PlayerList(players=[public(row) for row in repo.players(session, world)])


@router.delete("/{player_id}", status_code=204)
def delete_player(player_id: PlayerPath, session: SessionDep, world: WorldDep) -> Response:
    """Forget the visitor's registration (the characters keep what they remember of them). 404 if unknown."""
    pid = full_id(player_id)
    if not repo.delete(session, world, pid):
        raise NotFound(f"no player {pid!r} in world {world!r}", details={"player_id": pid})
    return Response(status_code=204)
