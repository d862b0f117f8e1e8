"""Daily plans: ask the model, validate and repair, store.

The order of plan work and plan/now's deadline are in planner.py; plan/now's answer is in now.py.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from backend.errors import LLMError, LLMReplyError, NotFound
from backend.events import PLAN_UPDATED, EventBus, PlanPayload
from backend.gametime import format_clock, utcnow
from backend.llm.base import LLM, PRIORITY_PLAN, GenerateOptions
from backend.planning import prompts, repo
from backend.planning.models import Plan
from backend.planning.schemas import PlanItem, PlanPublic, PlanReply, PlanRequest, plan_reply_for
from backend.planning.validation import (
    PlanUnrepairable,
    fallback_plan,
    keep_appointments,
    plan_problems,
    repair_plan,
)
from backend.world import nearby
from backend.world.models import Agent, PointOfInterest
from backend.world.service import get_agent, list_pois

if TYPE_CHECKING:
    from backend.emotion.service import EmotionService
    from backend.intention.service import IntentionService
    from backend.memory.service import MemoryService
    from backend.storage.db import Session

log = logging.getLogger(__name__)

#: A plan memory's importance, as in the Generative Agents reference.
PLAN_IMPORTANCE = 5
SLEEP_ACTIVITY = {"ja": "眠っている", "en": "Sleeping"}


def home_of(agent: Agent, pois: list[PointOfInterest]) -> str | None:
    """The agent's home point: its `home_poi` when that exists, else a home-kind place, else none."""
    ids = {p.id for p in pois}
    if agent.home_poi in ids:
        return agent.home_poi
    homes = [p.id for p in pois if p.kind == "home"]
    return homes[0] if homes else None


def stored_plan(session: Session, world_id: str, agent_id: str, day: int) -> Plan | None:
    return repo.stored_plan(session, world_id, agent_id, day)


def plan_public(plan: Plan) -> PlanPublic:
    return PlanPublic(
        agent_id=plan.agent_id,
        day=plan.day,
        items=[PlanItem.model_validate(it) for it in plan.items],
        reason=plan.reason,
        version=plan.version,
        source=plan.source,
        repairs=list(plan.repairs),
    )


def get_plan(session: Session, world_id: str, agent_id: str, day: int) -> Plan:
    get_agent(session, world_id, agent_id)
    plan = stored_plan(session, world_id, agent_id, day)
    if plan is None:
        raise NotFound(f"{agent_id!r} has no plan for day {day}", details={"agent_id": agent_id, "day": day})
    return plan


async def make_plan(
    session: Session,
    llm: LLM,
    memory: MemoryService,
    world_id: str,
    agent_id: str,
    request: PlanRequest,
    *,
    events: EventBus | None = None,
    emotion: EmotionService | None = None,
    intentions: IntentionService | None = None,
    places_max: int = 12,
) -> Plan:
    """Generate the day's plan, or with `time_of_day` and an existing plan, replan the rest of the day.

    Items that ended before `time_of_day` are kept (the one under way is cut there); the model plans the
    rest. The result is always sound: repaired, re-asked once, or replaced by a safe fallback plan. The
    day's first plan revises the agent's intentions first (one model call); the prompt carries them, and
    every appointment they hold for the day is kept at its time and place, through replans too.

    Raises:
        NotFound: unknown agent.
    """
    agent = get_agent(session, world_id, agent_id)
    pois = list_pois(session, world_id)
    home = home_of(agent, pois)
    existing = stored_plan(session, world_id, agent_id, request.day)
    kept: list[dict[str, Any]] = []
    start = agent.wake_hour
    if existing is not None and request.time_of_day is not None and request.time_of_day > agent.wake_hour:
        start = min(request.time_of_day, agent.sleep_hour)
        kept = _items_before(existing.items, start)
    if start >= agent.sleep_hour and existing is not None:
        return existing  # the day is over: nothing left to replan
    mind = await _intentions(intentions, agent, request.day, first=existing is None)
    window = (start, agent.sleep_hour)
    yesterday = stored_plan(session, world_id, agent_id, request.day - 1)
    facts = prompts.build_facts(yesterday, memory, agent, pois, day=request.day, window=window, home=home,
                                reason=request.reason, kept=kept, intentions=mind)  # fmt: skip
    offered = offered_pois(facts, pois, agent, home, places_max)
    offered_ids = {p.id for p in offered}
    facts["pois"] = [p for p in facts["pois"] if p["id"] in offered_ids]
    # The model may take many seconds on a busy GPU: give the connection back to the pool meanwhile (what
    # was read stays usable, detached; storing the plan opens a new transaction).
    session.close()
    items, source, repairs = await _ask(llm, agent, pois, home, facts, window, offered=offered)
    full = [PlanItem.model_validate(it) for it in kept] + items
    known = {p.id for p in pois}
    if plan_problems(full, known_pois=known, home=home, start=agent.wake_hour, end=agent.sleep_hour):
        full, source = _fallback(agent, pois, home, agent.wake_hour, agent.sleep_hour), "fallback"
    full, kept_repairs = await _keep_appointments(intentions, agent, pois, full, request.day, start)
    plan = _store(session, world_id, agent_id, request, full, source, [*repairs, *kept_repairs])
    await _remember(memory, agent, plan, pois, start)
    _announce(agent, plan, request, events=events, emotion=emotion)
    return plan


def _announce(
    agent: Agent, plan: Plan, request: PlanRequest, *, events: EventBus | None, emotion: EmotionService | None
) -> None:
    """Publish `plan.updated`; a replan (a reason was given) also moves the agent's emotion."""
    if events is not None:
        events.publish(
            PLAN_UPDATED,
            agent.world_id,
            PlanPayload(
                agent_id=agent.id, day=plan.day, reason=request.reason, items=list(plan.items),
                source=plan.source, version=plan.version,
            ),
        )  # fmt: skip
    if emotion is not None and request.reason:
        cause = (
            f"had to change plans: {request.reason}"
            if agent.language == "en"
            else f"予定が変わった: {request.reason}"
        )
        emotion.schedule(
            agent, lines=[], cause=cause, day=plan.day, time_of_day=request.time_of_day or agent.wake_hour
        )


async def _intentions(service: IntentionService | None, agent: Agent, day: int, *, first: bool) -> list[str]:
    """The agent's intentions for the plan prompt; the day's first plan revises them first."""
    if service is None:
        return []
    if first:
        await service.revise(agent.world_id, agent, day=day, time_of_day=agent.wake_hour)
    return (await asyncio.to_thread(service.get, agent.world_id, agent, day)).text.splitlines()


async def _keep_appointments(
    service: IntentionService | None,
    agent: Agent,
    pois: list[PointOfInterest],
    items: list[PlanItem],
    day: int,
    start: float,
) -> tuple[list[PlanItem], list[str]]:
    """Every appointment the intentions hold for the day stays in the plan at its time and place."""
    if service is None:
        return items, []
    found = await asyncio.to_thread(service.appointments, agent, pois, day)
    wanted = [(a.start, a.end, a.poi_id, a.what) for a in found if a.start >= start]
    if not wanted:
        return items, []
    return keep_appointments(items, wanted, start=agent.wake_hour, end=agent.sleep_hour)


def offered_pois(
    facts: dict[str, Any], pois: list[PointOfInterest], agent: Agent, home: str | None, cap: int
) -> list[PointOfInterest]:
    """The places the plan prompt lists (world/nearby.py), at most `cap` however big the town: where the
    agent is, its home, the places of yesterday's plan and of what it keeps of today's, those its
    intentions and memories name ("the party at the Corner Cafe"), then the nearest."""
    by_id = {p.id: p for p in pois}
    named = [it.get("poi_id") for it in [*facts["kept_items"], *facts["yesterday_plan"]]]
    text = "\n".join([*(facts.get("intentions") or []), *facts["important_memories"],
                      *facts["yesterday_reflections"]])  # fmt: skip
    chosen = nearby.offered(
        [nearby.Spot(p.id, p.name, p.x, p.z) for p in pois], cap=cap, here=agent.location_name, home=home,
        named=named, text=text, position=nearby.position_of(agent.position),
    )  # fmt: skip
    return [by_id[spot.id] for spot in chosen]


def _items_before(items: list[dict[str, Any]], cut: float) -> list[dict[str, Any]]:
    kept = []
    for item in items:
        if item["start"] >= cut:
            break
        kept.append({**item, "end": min(item["end"], cut)})
    return kept


async def _ask(
    llm: LLM,
    agent: Agent,
    pois: list[PointOfInterest],
    home: str | None,
    facts: dict[str, Any],
    window: tuple[float, float],
    *,
    offered: list[PointOfInterest] | None = None,
) -> tuple[list[PlanItem], str, list[str]]:
    """Ask, repair, re-ask once if the plan is beyond repair; fall back when the model fails. The schema
    names the `offered` places (default all); a reply naming any place of the world (`pois`) is accepted."""
    options = GenerateOptions(
        purpose="plan",
        agent_id=agent.id,
        world_id=agent.world_id,
        language=agent.language,
        priority=PRIORITY_PLAN,
        facts=facts,
    )
    messages = prompts.build_messages(facts)
    known = {p.id: p.name for p in pois}  # names: an activity that only names a place is repaired in words
    schema = plan_reply_for(tuple(sorted(p.id for p in (offered or pois))))  # the schema names the offered

    def repaired(reply: PlanReply) -> tuple[list[PlanItem], list[str]]:
        return repair_plan(
            reply.items, known_pois=known, home=home, start=window[0], end=window[1], language=agent.language
        )

    def check(reply: PlanReply) -> None:
        # A plan beyond repair is a failed reply: traced as one, and re-asked once with the reason.
        try:
            repaired(reply)
        except PlanUnrepairable as exc:
            raise LLMReplyError(f"{exc}; {prompts.PLAN_RULES}", raw=reply.model_dump_json()) from exc

    try:
        reply = await llm.generate_json(messages, schema, options=options, check=check)
    except LLMError as exc:
        log.warning("plan for %s: no usable plan from the model (%s); using the fallback plan", agent.id, exc)
    else:
        items, repairs = repaired(reply)
        return items, ("repaired" if repairs else "model"), repairs
    return _fallback(agent, pois, home, *window), "fallback", []


def _fallback(
    agent: Agent, pois: list[PointOfInterest], home: str | None, start: float, end: float
) -> list[PlanItem]:
    return fallback_plan(
        [(p.id, p.name, p.kind) for p in pois], home=home, start=start, end=end, language=agent.language
    )


def _store(
    session: Session,
    world_id: str,
    agent_id: str,
    request: PlanRequest,
    items: list[PlanItem],
    source: str,
    repairs: list[str],
) -> Plan:
    plan = stored_plan(session, world_id, agent_id, request.day)
    if plan is None:
        plan = Plan(world_id=world_id, agent_id=agent_id, day=request.day, version=0)
    plan.items = [item.model_dump() for item in items]
    plan.reason, plan.source, plan.repairs = request.reason, source, repairs
    plan.version += 1
    plan.updated_at = utcnow()
    if repo.store(session, plan):
        return plan
    # Another request stored this day's plan meanwhile (two "plan/now" on a new day): use that one.
    existing = stored_plan(session, world_id, agent_id, request.day)
    if existing is None:
        raise RuntimeError(f"plan of {agent_id!r} for day {request.day} neither stored nor found")
    return existing


async def store_fallback(
    session: Session,
    agent: Agent,
    day: int,
    *,
    events: EventBus | None = None,
    intentions: IntentionService | None = None,
) -> Plan:
    """Store the day's fallback plan (its appointments kept) unless the day has a plan by now, and return
    the day's plan: what plan/now answers when the model's first plan is late. It leaves no plan memory:
    the model's plan, which replaces it, brings its own."""
    pois = list_pois(session, agent.world_id)
    home = home_of(agent, pois)
    items = _fallback(agent, pois, home, agent.wake_hour, agent.sleep_hour)
    items, repairs = await _keep_appointments(intentions, agent, pois, items, day, agent.wake_hour)
    plan = _insert(session, agent, day, items, repairs)
    if plan is None:  # the model's plan (or another request's) got there first
        return get_plan(session, agent.world_id, agent.id, day)
    _announce(agent, plan, PlanRequest(day=day), events=events, emotion=None)
    return plan


def _insert(
    session: Session, agent: Agent, day: int, items: list[PlanItem], repairs: list[str]
) -> Plan | None:
    """A fallback plan for a day that has none; None (nothing stored) when the day has one."""
    if stored_plan(session, agent.world_id, agent.id, day) is not None:
        return None
    plan = Plan(world_id=agent.world_id, agent_id=agent.id, day=day, version=1, source="fallback",
                items=[item.model_dump() for item in items], repairs=repairs)  # fmt: skip
    return plan if repo.store(session, plan) else None


def plan_item_text(place: str, activity: str, ja: bool) -> str:
    """ "place: activity" in words, the place said once: an activity that already names it stands alone
    (図書館で新しい本を探す, not 図書館で図書館で新しい本を探す)."""
    if not place or place.casefold() in activity.casefold():
        return activity
    return f"{place}で{activity}" if ja else f"{place}: {activity}"


async def _remember(
    memory: MemoryService, agent: Agent, plan: Plan, pois: list[PointOfInterest], start: float
) -> None:
    from backend.memory.service import MemoryCreate

    names = {p.id: p.name for p in pois}
    ja = agent.language == "ja"
    parts = [
        f"{format_clock(it['start'])}-{format_clock(it['end'])} "
        f"{plan_item_text(names.get(it['poi_id'], it['poi_id'] or ''), it['activity'], ja)}"
        for it in plan.items
        if it["end"] > start
    ]
    head = f"{plan.day}日目の予定: " if ja else f"Plan for day {plan.day}: "
    item = MemoryCreate(
        type="plan",
        content=head + ("、" if ja else "; ").join(parts),
        importance=PLAN_IMPORTANCE,
        tags=["plan", f"day{plan.day}"],
        day=plan.day,
        time_of_day=start,
    )
    try:
        await memory.add(agent.world_id, agent.id, item)
    except LLMError as exc:  # a remote embedder can fail; the stored plan still stands
        log.warning("plan memory for %s not stored: %s", agent.id, exc.message)


def item_at(items: list[dict[str, Any]], time_of_day: float) -> tuple[int | None, dict[str, Any] | None]:
    """The item under way at `time_of_day` (start inclusive, end exclusive) and its index. An item without a
    numeric start and end (only a hand-edited or imported plan can have one) is passed over."""
    for index, item in enumerate(items):
        try:
            start, end = float(item["start"]), float(item["end"])
        except (KeyError, TypeError, ValueError):
            continue
        if start <= time_of_day < end:
            return index, item
    return None, None


def activity_at(items: list[dict[str, Any]], time_of_day: float) -> str | None:
    """The planned activity under way at `time_of_day`, when there is one (what a turn's prompt carries)."""
    item = item_at(items, time_of_day)[1]
    return str(item["activity"]) if item is not None and item.get("activity") else None


def current_item_of_stored_plan(
    session: Session, world_id: str, agent_id: str, day: int, time_of_day: float
) -> dict[str, Any] | None:
    """The stored plan's item at that time, without generating anything (None when there is none). A narrow
    read of the items on the session's connection: a conversation turn asks for every line."""
    items = repo.items(session.connection(), world_id, agent_id, day)
    return item_at(items, time_of_day)[1] if items else None
