"""What an agent should do at a moment of its day, read from a stored plan (plan/now's answer)."""

from __future__ import annotations

from backend.planning.models import Plan
from backend.planning.schemas import PlanItem, PlanNow
from backend.planning.service import SLEEP_ACTIVITY, home_of, item_at
from backend.world.models import Agent, PointOfInterest
from backend.world.service import poi_public


def plan_now_of(
    agent: Agent, plan: Plan, pois: list[PointOfInterest], time_of_day: float, *, pending: bool
) -> PlanNow:
    """The current item, the next one and the target point of interest (home while asleep)."""
    items = [PlanItem.model_validate(it) for it in plan.items]
    home = home_of(agent, pois)
    sleeping = SLEEP_ACTIVITY["en" if agent.language == "en" else "ja"]
    status, current, following = "active", None, None
    if not items or time_of_day < items[0].start:
        status = "sleeping"
        current = PlanItem(start=0, end=items[0].start if items else 24, poi_id=home, activity=sleeping)
        following = items[0] if items else None
    elif time_of_day >= items[-1].end:
        status = "sleeping"
        current = PlanItem(start=items[-1].end, end=24, poi_id=home, activity=sleeping)
    else:
        index, _ = item_at(plan.items, time_of_day)
        if index is None:  # only an imported or hand-edited plan can have a hole: stay home through it
            upcoming = [it for it in items if it.start > time_of_day]
            end = upcoming[0].start if upcoming else items[-1].end
            current = PlanItem(start=time_of_day, end=end, poi_id=home, activity=sleeping)
            following = upcoming[0] if upcoming else None
        else:
            current = items[index]
            following = items[index + 1] if index + 1 < len(items) else None
    target = next((p for p in pois if p.id == current.poi_id), None) if current.poi_id else None
    return PlanNow(
        agent_id=agent.id,
        day=plan.day,
        time_of_day=time_of_day,
        status=status,
        current=current,
        next=following,
        target_poi=poi_public(target) if target else None,
        source=plan.source,
        pending=pending,
    )
