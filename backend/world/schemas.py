"""Request and response shapes for agents, points of interest and Unity's state reports."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from backend.body import RequestBody
from backend.gametime import HOURS_DOC, GameHour
from backend.ids import ID_PATTERN, ID_RULE, Id, id_problem

AgentState = Literal["moving_to_poi", "wandering_in_poi", "talking", "cooldown", "waiting_for_replan"]
MAX_TRAITS = 20
#: The gestures of a world that declared none: names a humanoid animator usually has.
DEFAULT_GESTURES = ("wave", "bow", "nod", "shake_head", "laugh", "think", "point")
MAX_GESTURES = 32
MAX_GESTURE_CHARS = 32
GESTURE_RULE = f"a gesture name is 1-{MAX_GESTURE_CHARS} characters of {ID_RULE}, e.g. 'wave' or 'shake_head'"
#: An agent is awake at least this many hours a day: a shorter window leaves no room for a plan (a 7:00 to
#: 7:001 day made the plan routes fail).
MIN_AWAKE_HOURS = 1.0


class Position(RequestBody):
    """A point in Unity world coordinates (metres)."""

    model_config = ConfigDict(extra="forbid")

    x: float = Field(ge=-1e6, le=1e6)
    y: float = Field(default=0.0, ge=-1e6, le=1e6)
    z: float = Field(ge=-1e6, le=1e6)


class AgentBase(RequestBody):
    """A persona: who the character is and when it is awake."""

    name: str = Field(min_length=1, max_length=100)
    language: Literal["ja", "en"] = "ja"
    age: int | None = Field(default=None, ge=0, le=200)
    traits: list[Annotated[str, StringConstraints(strip_whitespace=True, max_length=50)]] = Field(
        default_factory=list, max_length=MAX_TRAITS
    )
    backstory: str = Field(default="", max_length=4000)
    speaking_style: str = Field(default="", max_length=1000)
    home_poi: Id | None = None
    wake_hour: float = Field(default=7.0, ge=0, le=24)
    sleep_hour: float = Field(default=23.0, ge=0, le=24)
    council_role: Literal["moderator", "member"] | None = None

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("name must not be blank")
        return value.strip()

    @field_validator("traits")
    @classmethod
    def _short_traits(cls, value: list[str]) -> list[str]:
        cleaned = [trait.strip() for trait in value if trait.strip()]
        for trait in cleaned:
            if len(trait) > 50:
                raise ValueError(f"each trait is at most 50 characters ({trait[:20]!r}... is longer)")
        return cleaned

    @field_validator("sleep_hour")
    @classmethod
    def _wake_before_sleep(cls, value: float, info: ValidationInfo) -> float:
        # On sleep_hour (validated after wake_hour), so the error names a field; skipped when wake_hour failed.
        wake = info.data.get("wake_hour")
        if wake is not None and value - wake < MIN_AWAKE_HOURS:
            raise ValueError(
                f"wake_hour ({wake:g}) must be at least {MIN_AWAKE_HOURS:g} hour before sleep_hour ({value:g})"
            )
        return value


class AgentUpsert(AgentBase):
    """Body of `PUT /v1/agents/{agent_id}`: creates the agent or replaces its persona."""

    model_config = ConfigDict(extra="forbid")


class PoiRef(BaseModel):
    id: str
    name: str
    kind: str
    position: Position


class AgentPublic(AgentBase):
    """An agent as the API shows it: persona plus the last state Unity reported."""

    id: str
    state: str | None = None
    location_name: str | None = None
    position: Position | None = None
    state_day: int | None = None
    state_time_of_day: float | None = None
    updated_at: datetime | None = None


class EmotionNow(BaseModel):
    label: str
    values: dict[str, float]
    cause: str | None = None
    day: int
    time_of_day: float


class AgentDetail(AgentPublic):
    """`GET /v1/agents/{agent_id}`: also the current plan item and emotion (null when there is none)."""

    current_plan_item: dict[str, Any] | None = None
    emotion: EmotionNow | None = None
    #: What is on the agent's mind (its intentions, one a line, newest first; said from its last reported
    #: day); empty when nothing is.
    intentions: str = ""


class PoiUpsert(RequestBody):
    """Body of `PUT /v1/pois/{poi_id}`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    kind: str = Field(default="place", min_length=1, max_length=64)
    description: str = Field(default="", max_length=2000)
    position: Position


class PoiPublic(PoiUpsert):
    id: str


class StateReport(RequestBody):
    """Body of `POST /v1/agents/{agent_id}/state`: what Unity's state machine is doing now."""

    model_config = ConfigDict(extra="forbid")

    state: AgentState
    location_name: str | None = Field(default=None, max_length=200)
    position: Position | None = None
    day: int = Field(ge=1, le=1_000_000)
    time_of_day: GameHour = Field(description=HOURS_DOC)
    partner_id: Id | None = Field(
        default=None,
        description="With state `talking`: the agent this one has just met. Optional; on a model that reads "
        "prompts ahead (llama.cpp in process) the server then prepares this agent's opening line while "
        "Unity turns the two to face each other, so the first turn answers sooner.",
    )

    @field_validator("partner_id")
    @classmethod
    def _partner_only_when_talking(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and info.data.get("state") != "talking":
            raise ValueError("partner_id goes with state `talking` only (the agent this one has just met)")
        return value


class StateAccepted(BaseModel):
    agent_id: str
    state: str
    location_name: str | None
    arrived: bool
    observation_id: int | None = None


def _gesture_name(value: str) -> str:
    problem = id_problem(value, MAX_GESTURE_CHARS)
    if problem is not None:
        shown = value[:40] + ("..." if len(value) > 40 else "")
        what = f"has {len(value)} characters" if len(value) > MAX_GESTURE_CHARS else "is not a gesture name"
        # The message goes in the context: a brace in the value must not read as a template field.
        raise PydanticCustomError(
            "invalid_gesture", "{problem}", {"problem": f"{shown!r} {what}; {GESTURE_RULE}"}
        )
    return value


#: A gesture's name as Unity's animator knows it (a trigger or state name).
GestureName = Annotated[
    str,
    AfterValidator(_gesture_name),
    Field(json_schema_extra={"minLength": 1, "maxLength": MAX_GESTURE_CHARS, "pattern": ID_PATTERN}),
]


class GesturesUpdate(RequestBody):
    """Body of `PUT /v1/world/gestures`: the gestures this world's characters can make."""

    model_config = ConfigDict(extra="forbid")

    gestures: Annotated[list[GestureName], Field(max_length=MAX_GESTURES)] | None = Field(
        description=f"The names Unity's animator knows, at most {MAX_GESTURES} ({GESTURE_RULE}); they replace "
        "the world's list. `[]`: the characters make no gestures; null: back to the default list "
        f"({', '.join(DEFAULT_GESTURES)}). A name given twice counts once.",
    )

    @field_validator("gestures")
    @classmethod
    def _once_each(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else list(dict.fromkeys(value))
