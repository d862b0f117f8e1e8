"""Plan work off the request, one piece at a time per agent and day: plan/now's deadline and its background plan.

The day's first plan (the intention revision and the plan: two model calls) runs as a background task that
outlives the request. `plan/now` waits for it up to PLAN_DEADLINE_S; past that it stores and answers a fallback
plan (`source: "fallback"`, `pending: true`), which the model's plan replaces when it arrives (`plan.updated`).
A plan/now while the task runs joins it instead of asking the model again, and `POST /plan` runs after it, so
a replan is never overwritten by a first plan still on its way. A GET with the read-only key never starts one.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import TYPE_CHECKING

from backend.errors import Forbidden
from backend.events import EventBus
from backend.llm.base import LLM
from backend.planning import repo, service
from backend.planning.models import Plan
from backend.planning.now import plan_now_of
from backend.planning.schemas import PlanNow, PlanRequest
from backend.tasks import TaskRunner
from backend.world.models import Agent
from backend.world.service import get_agent, list_pois

if TYPE_CHECKING:
    from backend.emotion.service import EmotionService
    from backend.intention.service import IntentionService
    from backend.memory.service import MemoryService
    from backend.storage.db import Engine, Session
    from backend.storage.flights import Flights

log = logging.getLogger(__name__)

#: (world, agent, day): plan work for one key runs one piece at a time.
PlanKey = tuple[str, str, int]
#: Part of PLAN_DEADLINE_S kept back for storing the fallback plan when the model's is late.
STORE_SHARE = 0.1


class Planner:
    """Built once in create_app's lifespan and kept at `app.state.planner`.

    Holds no copy of stored state: plans are read from the database on every request. `_work` is the plan
    work running in this process (its asyncio tasks), process-local by nature; keeping two processes from
    planning the same day at once is the `plan:{world}:{agent}:{day}` flight's (storage/flights.py).
    """

    def __init__(
        self,
        *,
        engine: Engine,
        llm: LLM,
        memory: MemoryService,
        tasks: TaskRunner,
        deadline_s: float,
        events: EventBus | None = None,
        intentions: IntentionService | None = None,
        emotion: EmotionService | None = None,
        flights: Flights | None = None,
        places_max: int = 12,
    ) -> None:
        self.engine = engine
        self.places_max = places_max  # places a plan prompt lists at most (PROMPT_PLACES_MAX)
        self.llm = llm
        self.memory = memory
        self.tasks = tasks
        self.deadline_s = deadline_s
        self.events = events
        self.intentions = intentions
        self.emotion = emotion
        # In this process: the plan work under way per key (later work waits for earlier). Across processes:
        # the work holds the key's lease (`flights`), so two processes never plan one day at once.
        self._work: dict[PlanKey, asyncio.Task[Plan]] = {}
        self.flights = flights

    def pending(self, world_id: str, agent_id: str, day: int) -> bool:
        """Whether plan work for that agent and day is under way (its result will be `plan.updated`)."""
        task = self._work.get((world_id, agent_id, day))
        return task is not None and not task.done()

    async def make(self, session: Session, world_id: str, agent_id: str, request: PlanRequest) -> Plan:
        """`POST /plan`: make or remake the day's plan after the plan work under way for it, and wait for it.

        No deadline: the model layer's timeouts bound it, and a failed model gives the fallback plan. The work
        finishes (and is stored) even when the client stops waiting.

        Raises:
            NotFound: unknown agent.
        """
        get_agent(session, world_id, agent_id)
        session.close()
        return await asyncio.shield(self._start(world_id, agent_id, request))

    async def now(
        self, session: Session, world_id: str, agent_id: str, day: int, time_of_day: float, *, may_write: bool
    ) -> PlanNow:
        """`GET /plan/now`: what the agent should do now, within PLAN_DEADLINE_S. A day without a plan gets
        one (`may_write`: the full key; the read-only key is refused rather than made to write).

        Raises:
            NotFound: unknown agent.
            Forbidden: the day has no plan yet and `may_write` is false.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.deadline_s * (1 - STORE_SHARE)
        agent = get_agent(session, world_id, agent_id)
        plan = service.stored_plan(session, world_id, agent_id, day)
        if plan is None:
            if not may_write:
                raise _plan_is_a_write(agent_id, day)
            session.close()  # no pooled connection held while the model plans
            plan = await self._first_plan(session, agent, day, deadline)
        pending = self.pending(world_id, agent_id, day)
        return plan_now_of(agent, plan, list_pois(session, world_id), time_of_day, pending=pending)

    async def _first_plan(self, session: Session, agent: Agent, day: int, deadline: float) -> Plan:
        """The day's first plan by `deadline` (joining the work under way), else the stored fallback plan."""
        key = (agent.world_id, agent.id, day)
        task = self._work.get(key) or self._start(agent.world_id, agent.id, PlanRequest(day=day), first=True)
        await asyncio.wait([task], timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
        if task.done() and not task.cancelled():
            return task.result()
        log.warning(
            "plan of %s for day %d not ready within PLAN_DEADLINE_S (%g s): answering with the fallback "
            "plan; the model's replaces it when it arrives", agent.id, day, self.deadline_s,
        )  # fmt: skip
        return await service.store_fallback(
            session, agent, day, events=self.events, intentions=self.intentions
        )

    def _start(
        self, world_id: str, agent_id: str, request: PlanRequest, *, first: bool = False
    ) -> asyncio.Task[Plan]:
        """Start plan work for the key after the work under way for it. `first`: the day's first plan
        (a plan another process stored meanwhile is taken as it is)."""
        key = (world_id, agent_id, request.day)
        before = self._work.get(key)
        name = f"plan {world_id}/{agent_id} day {request.day}"
        task = self.tasks.spawn(self._run(world_id, agent_id, request, before, first), name=name)
        self._work[key] = task
        task.add_done_callback(functools.partial(self._forget, key))
        return task

    def _forget(self, key: PlanKey, task: asyncio.Task[Plan]) -> None:
        if self._work.get(key) is task:
            del self._work[key]

    async def _run(
        self,
        world_id: str,
        agent_id: str,
        request: PlanRequest,
        before: asyncio.Task[Plan] | None,
        first: bool,
    ) -> Plan:
        if before is not None:  # its outcome is its own caller's; this work starts from what it stored
            await asyncio.wait([before])
        if self.flights is None:
            return await self._plan(world_id, agent_id, request, first)
        async with self.flights.hold(f"plan:{world_id}:{agent_id}:{request.day}"):
            return await self._plan(world_id, agent_id, request, first)

    async def _plan(self, world_id: str, agent_id: str, request: PlanRequest, first: bool) -> Plan:
        with repo.session(self.engine) as session:
            if (
                first
                and (stored := service.stored_plan(session, world_id, agent_id, request.day)) is not None
            ):
                return stored  # another process made the day's first plan while this one waited for it
            plan = await service.make_plan(
                session, self.llm, self.memory, world_id, agent_id, request,
                events=self.events, emotion=self.emotion, intentions=self.intentions,
                places_max=self.places_max,
            )  # fmt: skip
        log.info(
            "plan of %s for day %d stored (version %d, %s)", agent_id, plan.day, plan.version, plan.source
        )
        return plan


def _plan_is_a_write(agent_id: str, day: int) -> Forbidden:
    path = f"/v1/agents/{agent_id}/plan"
    return Forbidden(
        f"the viewer key is read-only: {agent_id!r} has no plan for day {day} yet, and making it is a write "
        f"(POST {path}, or this plan/now, with MACHI_API_KEY)",
        details={"method": "POST", "path": path, "day": day},
    )
