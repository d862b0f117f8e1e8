"""Plan shapes: the model's reply schema, the API's requests and answers."""

from __future__ import annotations

import functools
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema, WithJsonSchema

from backend.body import RequestBody
from backend.gametime import HOURS_DOC, GameHourTo24
from backend.world.schemas import PoiPublic


def _hours(value: Any) -> Any:
    """Accept "8:30"/"08:30" as well as 8.5: models often write clock times."""
    if isinstance(value, str) and ":" in value:
        hours, _, minutes = value.strip().partition(":")
        try:
            return int(hours) + int(minutes[:2]) / 60.0
        except ValueError:
            return value
    return value


#: A day's plan holds at most this many items (a 06-23 day in 45-minute blocks), each a short phrase.
MAX_PLAN_ITEMS = 24
MAX_ACTIVITY_CHARS = 120
#: The schema asks for at least this many items: a grammar-bound small model otherwise may close the list
#: at once (`{"items": []}`). Validation takes fewer; the repair then judges the plan.
MIN_PLAN_ITEMS = 1
#: An item lasts at most this many hours in the schema, so no single item can take a whole day.
MAX_ITEM_HOURS = 8
HOURS_SCHEMA = {"type": "number", "minimum": 0, "maximum": MAX_ITEM_HOURS}


class PlanReplyItem(BaseModel):
    """One activity of the day, in order: where, what, and how many hours it takes; it begins where the
    previous one ended (the first at the start of the window)."""

    poi_id: str = Field(max_length=64)
    activity: str = Field(max_length=MAX_ACTIVITY_CHARS)
    # The schema asks for a number up to MAX_ITEM_HOURS (never null); validation takes any length of a day (a
    # server whose grammar ignores number bounds, such as llama-server, lets a model write 10) and an item
    # timed by start and end.
    hours: Annotated[float | None, WithJsonSchema(HOURS_SCHEMA)] = Field(None, ge=0, le=24)
    #: Not asked for: SmolLM2 given start and end (or an end) copied the window's hours into every item, the
    #: first one taking the whole day. A reply that gives them anyway is taken at its word.
    start: SkipJsonSchema[float | None] = Field(None, ge=0, le=24)
    end: SkipJsonSchema[float | None] = Field(None, ge=0, le=24)

    _clock = field_validator("start", "end", mode="before")(_hours)

    @field_validator("hours", mode="before")
    @classmethod
    def _at_most_a_day(cls, value: Any) -> Any:
        # More hours than a day has means the rest of the day (the repair clips it to the window).
        return min(value, 24) if isinstance(value, int | float) and not isinstance(value, bool) else value

    @model_validator(mode="after")
    def _timed(self) -> PlanReplyItem:
        if self.hours is None and self.end is None:
            raise ValueError("an item needs its hours (or an end)")
        return self


class PlanReply(BaseModel):
    """The model's reply for purpose `plan`: the day's activities from the start to the end of the window."""

    items: list[PlanReplyItem] = Field(
        max_length=MAX_PLAN_ITEMS, json_schema_extra={"minItems": MIN_PLAN_ITEMS}
    )


@functools.lru_cache(maxsize=64)
def plan_reply_for(poi_ids: tuple[str, ...]) -> type[PlanReply]:
    """The PlanReply sent for a world with these places: its schema lists them as the only `poi_id` values.

    Cached per set of places (the places a plan prompt offers one agent: world/nearby.py), a bounded number.
    Validation still takes any id of the world, offered or not; an unknown
    place is repaired onto the agent's home (backend/planning/validation.py), as for a model that ignores
    the schema.
    """
    if not poi_ids:
        return PlanReply
    poi_id = Field(max_length=64, json_schema_extra={"enum": list(poi_ids)})
    item = create_model(
        "PlanReplyItem", __base__=PlanReplyItem, __doc__=PlanReplyItem.__doc__, poi_id=(str, poi_id)
    )
    items = Field(max_length=MAX_PLAN_ITEMS, json_schema_extra={"minItems": MIN_PLAN_ITEMS})
    return create_model("PlanReply", __base__=PlanReply, __doc__=PlanReply.__doc__, items=(list[item], items))


class PlanItem(BaseModel):
    """A stored, validated plan item: [start, end) in hours, at a known point of interest."""

    start: float = Field(ge=0, le=24)
    end: float = Field(ge=0, le=24)
    poi_id: str | None
    activity: str = Field(max_length=200)


class PlanRequest(RequestBody):
    """Body of `POST /v1/agents/{agent_id}/plan`.

    Without `time_of_day` the whole day is (re)generated. With it (and usually a `reason`), items that
    ended before that time are kept and the rest of the day is planned again.
    """

    model_config = ConfigDict(extra="forbid")

    day: int = Field(ge=1, le=1_000_000)
    time_of_day: GameHourTo24 | None = Field(default=None, description=HOURS_DOC)
    reason: str | None = Field(default=None, max_length=500)


class PlanPublic(BaseModel):
    agent_id: str
    day: int
    items: list[PlanItem]
    reason: str | None = None
    version: int
    source: str
    repairs: list[str] = Field(default_factory=list)


class PlanNow(BaseModel):
    """`GET /v1/agents/{agent_id}/plan/now`: what the agent should be doing and where to walk."""

    agent_id: str
    day: int
    time_of_day: float
    status: str  # active | sleeping
    current: PlanItem | None
    next: PlanItem | None
    target_poi: PoiPublic | None
    source: str = Field(
        description="how the day's plan came about: model | repaired | fallback (the model failed, or its "
        "plan was not ready within PLAN_DEADLINE_S)"
    )
    pending: bool = Field(
        description="the model is still making this day's plan: the event plan.updated announces it, and "
        "plan/now answers from it from then on"
    )
