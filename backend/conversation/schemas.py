"""Request and reply shapes of the conversation API, and the reply schema the model is asked for."""

from __future__ import annotations

import functools
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

from backend.emotion.schemas import LABEL_MAX_CHARS, label_vocabulary
from backend.ids import ID_RULE, Id, SessionId, StoredSessionId
from backend.text import one_line

#: The VRM 1.0 expression presets: Unity maps these 1:1 onto the avatar's face.
EMOTIONS = ("neutral", "happy", "angry", "sad", "relaxed", "surprised")
Emotion = Literal["neutral", "happy", "angry", "sad", "relaxed", "surprised"]
EndReason = Literal["model", "max_turns", "farewell"]

MAX_HISTORY_LINES = 64
MAX_LINE_CHARS = 2000

#: A line Unity relays: one line, as a dialogue line is (a newline in it would forge a speaker's line).
HistoryLine = Annotated[str, StringConstraints(max_length=MAX_LINE_CHARS), AfterValidator(one_line)]


class TurnRequest(BaseModel):
    """A turn request exactly as Unity sends it (`day` and `language` are optional extras)."""

    agent_id: Id = Field(description="The agent who speaks now.")
    target_id: Id = Field(description="The agent spoken to.")
    session_id: SessionId = Field(
        description="Unity's id for this conversation: 1-128 characters of " + ID_RULE + ", so that "
        "GET /v1/conversations/{session_id} reads it back."
    )
    location_name: str | None = Field(None, max_length=200)
    history: list[HistoryLine] = Field(
        default_factory=list,
        max_length=MAX_HISTORY_LINES,
        description='Earlier lines, oldest first, as "Name: line": Name is the speaker\'s display name '
        "(its agent id is accepted too; the server stores and prompts display names).",
    )
    time_of_day: float = Field(ge=0, lt=24, description="Hours into the game day, e.g. 14.5.")
    day: int = Field(1, ge=1, le=100_000)
    language: Literal["ja", "en"] | None = Field(None, description="Overrides the speaker's language.")

    @field_validator("target_id")
    @classmethod
    def _not_self(cls, value: str, info: ValidationInfo) -> str:
        if value == info.data.get("agent_id"):
            raise ValueError("an agent cannot talk to itself: target_id must differ from agent_id")
        return value


#: A line is one to three sentences: the grammar ends the model's string here, and a longer line from a
#: provider that does not enforce `maxLength` is cut at its last sentence end within it.
MAX_REPLY_CHARS = 300
_SENTENCE_END = "。！？!?…."


def cut_line(text: str, limit: int = MAX_REPLY_CHARS) -> str:
    """`text` within `limit` characters: whole sentences when they fill at least half of it."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    end = max(head.rfind(mark) for mark in _SENTENCE_END)
    return head[: end + 1] if end + 1 >= limit // 2 else head.rstrip()


# The schema asks for a VRM preset (`enum`) and a bounded line (`maxLength`); validation is kinder, so a
# reply from a provider that ignores them still gives a line: a synonym ("joy") is mapped onto a preset by
# `rules.preset_emotion`, an unknown word gives way to the speaker's state, a long line is cut.
# (The docstring is the schema's description, which providers show the model: it stays about the reply.)
class TurnReply(BaseModel):
    """What the model is asked to return for one turn (the JSON Schema sent to the provider)."""

    dialogue: str = Field(
        description="The speaker's next line, in character, one to three sentences.",
        json_schema_extra={"maxLength": MAX_REPLY_CHARS},
    )
    emotion: str = Field(
        description="The speaker's expression while saying it: one of " + ", ".join(EMOTIONS) + ".",
        max_length=16,
        json_schema_extra={"enum": list(EMOTIONS)},
    )
    is_conversation_end: bool = Field(
        False, description="true when the speaker ends the conversation with this line."
    )

    @field_validator("dialogue")
    @classmethod
    def _clean(cls, value: str) -> str:
        # One line of a transcript, shown in a speech bubble: control characters out, line breaks made spaces
        # (a newline would start a forged "Name: line" in every prompt and memory made from it).
        return cut_line(one_line(value))


@functools.cache
def turn_reply_for(language: str | None) -> type[TurnReply]:
    """The TurnReply asked for: with `language`, it also asks for the speaker's `feeling` after the line, one
    word of the Plutchik wheel in that language (EMOTION_FROM_TURN); with None, the plain reply.

    Only the schema lists the words: a word outside them still validates, and the emotion service then asks
    the emotion model instead (backend/conversation/aftermath.py).
    """
    if language is None:
        return TurnReply
    words = label_vocabulary(language)

    class TurnReplyFor(TurnReply):
        __doc__ = TurnReply.__doc__  # the schema's description
        model_config = ConfigDict(title="TurnReply")

        feeling: str | None = Field(
            None,
            description="How the speaker feels after saying it: one word of Plutchik's wheel.",
            max_length=LABEL_MAX_CHARS,
            json_schema_extra={"enum": list(words)},
        )

    return TurnReplyFor


class HistoryFix(BaseModel):
    """A line of the request's `history` that differed from the conversation's stored transcript."""

    index: int = Field(description="Its place in `history` (0 = the oldest line).")
    line: str = Field(description="The stored line the server used and keeps there: put it in your history.")


class TurnResult(BaseModel):
    """The reply Unity gets. The same JSON is returned when a turn is retried."""

    dialogue: str
    emotion: Emotion = Field(
        description="The VRM 1.0 expression preset that drives the face while this line is shown: the "
        "model's choice when it names a preset (or a word that maps onto one), otherwise the preset the "
        "speaker's emotion state shows. The only expression in the reply."
    )
    is_conversation_end: bool
    end_reason: EndReason | None
    session_id: str
    turn_index: int
    fallback: bool
    speaker_id: str
    target_id: str
    emotion_state: dict[str, Any] | None = Field(
        None,
        description="The speaker's Plutchik mood when the line was said (values 0-100, label, baseline, "
        "cause). It names no expression: `emotion` is this line's face; between lines the face is the "
        "`vrm_emotion` of GET /v1/agents/{id}/emotion and of the emotion.updated event.",
    )
    history_fixes: list[HistoryFix] = Field(
        default_factory=list,
        description="The lines of `history` that differed from the conversation's stored transcript. The "
        "stored transcript is the server's: the turn was answered from the stored lines, which stay; copy "
        "each `line` into your history at its `index`. Empty when the history matched.",
    )


class EndRequest(BaseModel):
    """Unity reports that a conversation ended (e.g. the agents walked apart)."""

    session_id: StoredSessionId = Field(description="The conversation's session_id, as its turns sent it.")
    reason: str = Field("unity", min_length=1, max_length=32, description="e.g. distance, interrupted.")
    day: int | None = Field(None, ge=1, le=100_000)
    time_of_day: float | None = Field(None, ge=0, lt=24)

    @field_validator("session_id", "reason")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class EndResult(BaseModel):
    session_id: str
    ended: bool
    end_reason: str | None
    #: True when the conversation had already ended before this report (nothing was done again).
    already_ended: bool


class Participant(BaseModel):
    id: str
    name: str | None


class TurnPublic(BaseModel):
    turn_index: int
    speaker_id: str
    target_id: str
    dialogue: str
    emotion: str
    fallback: bool
    is_conversation_end: bool
    end_reason: str | None
    day: int
    time_of_day: float
    created_at: datetime


class ConversationSummary(BaseModel):
    session_id: str
    participants: list[Participant]
    location_name: str | None
    start_day: int
    start_time_of_day: float
    end_day: int | None
    end_time_of_day: float | None
    ended: bool
    end_reason: str | None
    turn_count: int
    language: str | None
    updated_at: datetime


class ConversationDetail(ConversationSummary):
    turns: list[TurnPublic]
    transcript: list[str]
    reflected: bool


class ConversationList(BaseModel):
    conversations: list[ConversationSummary]
