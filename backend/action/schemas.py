"""The action vocabulary: the wire model Unity performs (`AgentAction`), the shape the model is asked for
(`ActionChoice`), action results, and the world's vocabulary reply.

The wire model is named `AgentAction`, not `Action`: its schema name is also its generated C# class's name,
and a `Machi.Protocol.Action` would clash with `System.Action` in every Unity file that uses both namespaces.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from backend.body import RequestBody
from backend.gametime import HOURS_DOC, GameHour
from backend.ids import ID_RULE, ParticipantId, SessionId
from backend.text import one_line

#: The vocabulary's version: a new action type or field raises it (`GET /v1/world/actions` says which).
ACTIONS_VERSION = 1
ActionType = Literal["go_to", "follow", "give", "gesture", "look_at", "end_conversation"]
ACTION_TYPES: tuple[ActionType, ...] = get_args(ActionType)
Outcome = Literal["done", "failed", "interrupted"]
#: At most this many actions go with one line.
MAX_ACTIONS = 2
MAX_ITEM_CHARS = 60
MAX_DETAIL_CHARS = 200
MAX_DAY = 1_000_000
#: Which types name a person (an agent id or a `player:` id) as their target.
PERSON_TYPES = ("follow", "look_at", "give")

TARGET_WORDS = (
    "What the action is about: go_to: a point of interest's id; follow and look_at: an agent's id or a "
    "player's id (`player:` and an id); give: the recipient's id (an agent or a player); gesture: the "
    "gesture's name (`GET /v1/world/actions`); end_conversation: none (null)."
)


def _text_or_none(value: str | None) -> str | None:
    """One line of text, or None when there is none."""
    return (one_line(value).strip() or None) if value is not None else None


class AgentAction(RequestBody):
    """One thing a character does with its line, for Unity to perform: flat fields, so any JSON reader
    (JsonUtility too) maps it. Unity reports how it went with `POST /v1/agents/{agent_id}/action-result`."""

    model_config = ConfigDict(extra="forbid")

    type: ActionType = Field(
        description="go_to (walk to a place), follow (walk along with someone), give (hand something to "
        "someone), gesture (play an animation), look_at (turn to someone), end_conversation (leave the talk)."
    )
    target: ParticipantId | None = Field(None, description=TARGET_WORDS)
    item: str | None = Field(
        None,
        max_length=MAX_ITEM_CHARS,
        description=f"give only: what is handed over, a few words of free text (at most {MAX_ITEM_CHARS} "
        "characters); null for the other types.",
    )

    @field_validator("item")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        return _text_or_none(value)

    @model_validator(mode="after")
    def _fields_fit_the_type(self) -> AgentAction:
        if self.type == "end_conversation" and self.target is not None:
            raise ValueError("end_conversation takes no target: send null")
        if self.type != "end_conversation" and self.target is None:
            raise ValueError(f"{self.type} needs a target ({TARGET_WORDS})")
        if self.type == "give" and self.item is None:
            raise ValueError("give needs an item: what is handed over")
        if self.type != "give" and self.item is not None:
            raise ValueError(f"item goes with give only; {self.type} takes null")
        return self


class ActionChoice(BaseModel):
    """An action the speaker takes with this line."""

    # The schema asks for an enum and bounded strings; validation is kinder (validate.py drops what does not
    # fit the world with a reason), so one odd action never costs the line it came with.
    type: str = Field(description="What to do.", json_schema_extra={"enum": list(ACTION_TYPES)})
    # An id from the prompt's lists: copying it is the answer, so the echo check (llm/echo.py) leaves it be.
    target: str | None = Field(
        None,
        description="The id of the place, person or gesture it is about.",
        json_schema_extra={"echo_check": False},
    )
    item: Annotated[str, WithJsonSchema({"type": "string", "maxLength": MAX_ITEM_CHARS})] | None = Field(
        None, description="For give: what is handed over, in a few words."
    )


def _actions_or_none(value: Any) -> Any:
    # A model that writes null (or anything but a list) means "no actions"; non-objects in the list are left
    # out here (validate.py reports what it drops of the rest).
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict | ActionChoice)]


#: A reply model's `actions` field: `actions: ActionChoices = Field(default_factory=list)`.
ActionChoices = Annotated[
    list[ActionChoice],
    BeforeValidator(_actions_or_none),
    Field(
        description=f"At most {MAX_ACTIONS} things the speaker does with this line; empty unless the line "
        "really involves doing something.",
        json_schema_extra={"maxItems": MAX_ACTIONS},
    ),
]


class _ActionsOnly(BaseModel):
    actions: ActionChoices = Field(default_factory=list)


def actions_field_schema() -> dict[str, Any]:
    """The JSON Schema of a reply's `actions` field (an array of at most MAX_ACTIONS ActionChoice objects,
    inlined), for a caller building a reply schema by hand; a fresh copy each call."""
    schema = _ActionsOnly.model_json_schema()
    field = dict(schema["properties"]["actions"])
    field.pop("default", None)
    field["items"] = schema["$defs"]["ActionChoice"]
    return field


class ActionResult(RequestBody):
    """Body of `POST /v1/agents/{agent_id}/action-result`: what became of an action a reply gave."""

    model_config = ConfigDict(extra="forbid")

    action: AgentAction = Field(description="The action as the reply gave it.")
    outcome: Outcome = Field(description="done, failed (could not), or interrupted (began, did not finish).")
    detail: str | None = Field(
        None,
        max_length=MAX_DETAIL_CHARS,
        description="Why it failed or stopped, in a few words the agent will remember (any language).",
    )
    session_id: SessionId | None = Field(
        None, description=f"The conversation the action came from (1-128 characters of {ID_RULE}), if any."
    )
    day: int = Field(1, ge=1, le=MAX_DAY, description="Game day of the outcome (1-based).")
    time_of_day: GameHour = Field(description="Of the outcome. " + HOURS_DOC)

    @field_validator("detail")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        return _text_or_none(value)


class ActionResultAccepted(BaseModel):
    """Reply of `POST /v1/agents/{agent_id}/action-result`: the observation the agent now remembers."""

    memory_id: int = Field(
        description="The memory (an earlier near-identical one when it was merged into it)."
    )
    content: str = Field(description="Its text, in the agent's language.")


class WorldActions(BaseModel):
    """Reply of `GET /v1/world/actions` and `PUT /v1/world/gestures`: the action vocabulary of this world."""

    version: int = Field(description="The vocabulary's version: it rises when a type or a field is added.")
    types: list[ActionType] = Field(description="Every action type a reply may carry.")
    gestures: list[str] = Field(description="The gesture names a `gesture` action may name.")
    gestures_declared: bool = Field(
        description="false: the world declared no gestures, so these are the default list."
    )
