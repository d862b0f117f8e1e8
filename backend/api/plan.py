"""Daily plans: `/v1/agents/{agent_id}/plan` and `/plan/now` (what Unity's state machine asks)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from backend.api.deps import PlannerDep, SessionDep, WorldDep
from backend.ids import ID_RULE, Id
from backend.planning import service
from backend.planning.schemas import PlanNow, PlanPublic, PlanRequest
from backend.security import VIEWER, request_role

router = APIRouter(prefix="/v1/agents/{agent_id}", tags=["plan"])

AgentId = Annotated[Id, Path(description=f"the agent's id: {ID_RULE}")]
Day = Annotated[int, Query(ge=1, le=1_000_000, description="game day, 1-based")]


@router.post("/plan", response_model=PlanPublic)
async def post_plan(
    agent_id: AgentId, body: PlanRequest, session: SessionDep, world: WorldDep, planner: PlannerDep
) -> PlanPublic:
    """Generate the day's plan; with `time_of_day` (and a `reason`) replan the rest of the day. The day's
    first plan revises the agent's intentions; their appointments for the day are kept through replans.
    The reply waits for the model (bounded by its timeouts; a failed model gives the fallback plan)."""
    return service.plan_public(await planner.make(session, world, agent_id, body))


@router.get("/plan", response_model=PlanPublic)
def get_plan(agent_id: AgentId, day: Day, session: SessionDep, world: WorldDep) -> PlanPublic:
    return service.plan_public(service.get_plan(session, world, agent_id, day))


@router.get("/plan/now", response_model=PlanNow)
async def get_plan_now(
    agent_id: AgentId,
    day: Day,
    time_of_day: Annotated[float, Query(ge=0, lt=24, description="hours, e.g. 14.5")],
    request: Request,
    session: SessionDep,
    world: WorldDep,
    planner: PlannerDep,
) -> PlanNow:
    """The current item, the next one and the target point of interest, within PLAN_DEADLINE_S. A new day
    gets a plan first; one the model has not made by the deadline is answered from a stored fallback plan
    (`source: "fallback"`, `pending: true`) that the model's replaces when it arrives (event `plan.updated`).
    The read-only viewer key never makes one: a day without a plan is a 403 for it."""
    may_write = request_role(request) != VIEWER
    return await planner.now(session, world, agent_id, day, time_of_day, may_write=may_write)
