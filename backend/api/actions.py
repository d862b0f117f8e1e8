"""The action vocabulary and action outcomes: `GET /v1/world/actions`, `PUT /v1/world/gestures`,
`POST /v1/agents/{agent_id}/action-result`."""

from __future__ import annotations

import functools
from typing import Annotated, Any

from fastapi import APIRouter, Path

from backend.action import result as action_result
from backend.action.schemas import (
    ACTION_TYPES,
    ACTIONS_VERSION,
    ActionResult,
    ActionResultAccepted,
    WorldActions,
)
from backend.api.deps import MemoryDep, SessionDep, WorldDep
from backend.ids import ID_RULE, Id
from backend.player import repo as player_repo
from backend.world import repo as world_repo
from backend.world import service as world_service
from backend.world.schemas import GesturesUpdate

router = APIRouter(prefix="/v1", tags=["actions"])

AgentId = Annotated[Id, Path(description=f"the agent's id: {ID_RULE}")]


def _vocabulary(declared: list[str] | None) -> WorldActions:
    return WorldActions(
        version=ACTIONS_VERSION,
        types=list(ACTION_TYPES),
        gestures=world_service.gestures(declared),
        gestures_declared=declared is not None,
    )


@router.get("/world/actions", response_model=WorldActions)
def get_actions(session: SessionDep, world: WorldDep) -> WorldActions:
    """The actions a conversation reply may carry for Unity to perform, and this world's gesture names."""
    return _vocabulary(world_repo.gestures(session, world))


@router.put("/world/gestures", response_model=WorldActions)
def put_gestures(body: GesturesUpdate, session: SessionDep, world: WorldDep) -> WorldActions:
    """Declare the gestures Unity's animator can play for this world's characters (replaces the list;
    null restores the default). Replies show only these to the model from now on."""
    world_service.declare_gestures(session, world, body.gestures)
    return _vocabulary(body.gestures)


@router.post("/agents/{agent_id}/action-result", status_code=201, response_model=ActionResultAccepted)
async def post_action_result(
    agent_id: AgentId, body: ActionResult, session: SessionDep, world: WorldDep, memory: MemoryDep
) -> ActionResultAccepted:
    """Unity reports what became of an action (done, failed, interrupted): the agent remembers it as an
    observation in its own language. 404: no such agent; 422: the action names a place, agent or gesture
    this world lacks."""
    return await action_result.remember(
        memory, session, world, agent_id, body, player_names=functools.partial(_player_name, session, world)
    )


def _player_name(session: Any, world: str, player_id: str) -> str | None:
    row = player_repo.get(session, world, player_id)
    return row.display_name if row is not None else None
