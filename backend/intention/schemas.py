"""Intention shapes: the model's morning revision, the whisper request, and what the API shows."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from backend.body import RequestBody
from backend.gametime import HOURS_DOC, GameHourTo24
from backend.memory.models import MAX_DAY
from backend.text import clean_text

#: An agent's intentions are at most this many lines of this many characters (the prompt budget's share).
MAX_LINES = 4
MAX_LINE_CHARS = 160


class IntentionsReply(BaseModel):
    """The model's reply for purpose `intention`: what is on the character's mind today, one item a line
    (none when nothing in particular is)."""

    model_config = ConfigDict(extra="ignore")
    intentions: list[
        Annotated[str, AfterValidator(clean_text), Field(min_length=2, max_length=MAX_LINE_CHARS)]
    ] = Field(max_length=MAX_LINES)


class WhisperRequest(RequestBody):
    """Body of `POST /v1/agents/{agent_id}/whisper`: a thought put in the agent's mind (the paper's inner
    voice). Stored as the agent's own high-importance memory; its intentions take it at once."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(
        min_length=1, max_length=MAX_LINE_CHARS, description="the thought, in the agent's language"
    )
    day: int = Field(
        1, ge=1, le=MAX_DAY, description="game day now (relative words like 明日 are read from it)"
    )
    time_of_day: GameHourTo24 = Field(0.0, description="The game hour now. " + HOURS_DOC)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = " ".join(clean_text(value).split())
        if not value:
            raise ValueError("text must not be empty")
        return value


class IntentionLine(BaseModel):
    text: str
    day: int
    time_of_day: float
    source: str


class IntentionsPublic(BaseModel):
    """An agent's intentions, newest first; `text` is the lines joined as the prompts carry them."""

    agent_id: str
    text: str
    lines: list[IntentionLine]
    revised_day: int | None = None


class WhisperResult(BaseModel):
    agent_id: str
    memory_id: int | None
    intentions: IntentionsPublic


class ToldPublic(BaseModel):
    """One telling: `teller_id` told `listener_id` the item `text` (whose news it is: `origin_id`)."""

    teller_id: str
    listener_id: str
    origin_id: str
    text: str
    session_id: str | None
    day: int
    time_of_day: float


class ToldList(BaseModel):
    """What an agent told others and what it heard, oldest first."""

    agent_id: str
    told: list[ToldPublic]
    heard: list[ToldPublic]
