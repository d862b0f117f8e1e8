"""Request and reply shapes of the conversation API, and the reply schema the model is asked for."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    StringConstraints,
    ValidationInfo,
    create_model,
    field_validator,
)

from backend.action.schemas import ActionChoices, AgentAction
from backend.action.targets import MODELS_KEPT, ActionTargets, actions_field_for
from backend.body import RequestBody
from backend.emotion.schemas import LABEL_MAX_CHARS, label_vocabulary
from backend.gametime import HOURS_DOC, GameHour
from backend.ids import ID_RULE, Id, ParticipantId, SessionId, StoredSessionId, is_player
from backend.moderation import clean, is_blank
from backend.text import one_line

#: The VRM 1.0 expression presets: Unity maps these 1:1 onto the avatar's face.
EMOTIONS = ("neutral", "happy", "angry", "sad", "relaxed", "surprised")
Emotion = Literal["neutral", "happy", "angry", "sad", "relaxed", "surprised"]
EndReason = Literal["model", "max_turns", "farewell"]

MAX_HISTORY_LINES = 64
MAX_LINE_CHARS = 2000
#: The most participants (agents and players) one conversation may have.
MAX_PARTICIPANTS = 6


def _a_line(value: Any) -> Any:
    """A history line is a string: an object (`{"speaker": ..., "text": ...}`) is refused with the form to send."""
    if isinstance(value, dict):
        speaker = str(value.get("speaker") or value.get("name") or "Name")[:40]
        text = str(value.get("text") or value.get("line") or "line")[:40]
        raise ValueError(f'a history line is a string "Name: line", not an object: send "{speaker}: {text}"')
    return value


#: A line Unity relays: one line, as a dialogue line is (a newline in it would forge a speaker's line).
HistoryLine = Annotated[
    str, StringConstraints(max_length=MAX_LINE_CHARS), BeforeValidator(_a_line), AfterValidator(one_line)
]


def _members(value: list[str] | None, info: ValidationInfo, keys: tuple[str, str]) -> list[str] | None:
    """A request's `participants`: no id twice, and the two ids named by `keys` among them."""
    if value is None:
        return None
    if len(set(value)) != len(value):
        raise ValueError("participants must not repeat an id")
    missing = [key for key in keys if info.data.get(key) not in value]
    if missing:
        raise ValueError(f"participants must include {' and '.join(missing)}")
    return value


class TurnRequest(RequestBody):
    """A turn request exactly as Unity sends it (`day`, `language` and `participants` are optional extras)."""

    agent_id: Id = Field(description="The agent who speaks now.")
    target_id: ParticipantId = Field(
        description="The participant spoken to: an agent, or a player (`player:` and an id)."
    )
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
    time_of_day: GameHour = Field(description=HOURS_DOC)
    day: int = Field(1, ge=1, le=100_000)
    language: Literal["ja", "en"] | None = Field(None, description="Overrides the speaker's language.")
    participants: list[ParticipantId] | None = Field(
        None,
        min_length=2,
        max_length=MAX_PARTICIPANTS,
        description="A group conversation's participants (2-6 agents and players, `agent_id` and `target_id` "
        "among them), the same on every turn of it; a participant may join later by being added. Unset: "
        "the two of `agent_id` and `target_id`.",
    )

    @field_validator("target_id")
    @classmethod
    def _not_self(cls, value: str, info: ValidationInfo) -> str:
        if value == info.data.get("agent_id"):
            raise ValueError("an agent cannot talk to itself: target_id must differ from agent_id")
        return value

    @field_validator("participants")
    @classmethod
    def _has_both(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        return _members(value, info, ("agent_id", "target_id"))

    def members(self) -> list[str]:
        """Everyone in the conversation by this request: `participants`, or the speaker and the target."""
        return list(self.participants) if self.participants else [self.agent_id, self.target_id]


#: Unity's visitor text: one line (a newline in it would forge a speaker's line); its length is a setting.
def _visible(value: str) -> str:
    """A visitor's text as stored: invisible format characters out; nothing visible left is refused."""
    value = clean(value).strip()
    if is_blank(value):
        raise ValueError(
            "text holds nothing visible (only spaces, control or invisible characters): send what the "
            "visitor typed, or send nothing when they typed nothing"
        )
    return value


PlayerText = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_LINE_CHARS),
    AfterValidator(one_line),
    AfterValidator(_visible),
]


class PlayerTurnRequest(RequestBody):
    """A visitor's line to an agent, and the agent's reply (POST /v1/conversation/player-turn[/stream])."""

    session_id: SessionId = Field(description="Unity's id for this conversation (as for /turn).")
    player_id: ParticipantId = Field(description="The visitor: `player:` and an id (PUT /v1/players/{id}).")
    agent_id: Id = Field(description="The agent the visitor speaks to, who answers.")
    text: PlayerText = Field(
        description="What the visitor said (typed or transcribed): untrusted, quoted to the model as data, "
        "checked by moderation; at most PLAYER_MAX_CHARS characters (a setting, 200 by default)."
    )
    location_name: str | None = Field(None, max_length=200)
    history: list[HistoryLine] = Field(
        default_factory=list,
        max_length=MAX_HISTORY_LINES - 1,
        description="Earlier lines of this conversation, oldest first, as for /turn (the visitor's line "
        "takes index len(history), the agent's reply the next): a retry (the same history and text) gets "
        "the stored reply; other text with the same history is a 409 naming `text`. At most {MAX_HISTORY_LINES - 1} lines: the visitor's line joins them in the agent's "
        "turn.",
    )
    time_of_day: GameHour = Field(description=HOURS_DOC)
    day: int = Field(1, ge=1, le=100_000)
    language: Literal["ja", "en"] | None = Field(None, description="Overrides the agent's language.")
    participants: list[ParticipantId] | None = Field(
        None, min_length=2, max_length=MAX_PARTICIPANTS, description="A group's participants, as for /turn."
    )

    @field_validator("history", mode="before")
    @classmethod
    def _room_for_the_line(cls, value: Any) -> Any:
        # Checked here, before anything is stored: the agent's turn holds the history and the visitor's line.
        most = MAX_HISTORY_LINES - 1
        if isinstance(value, list) and len(value) > most:
            raise ValueError(
                f"history has {len(value)} lines; a player-turn takes at most {most} (the visitor's line "
                f"makes the {MAX_HISTORY_LINES}th, the most a turn's history holds): send only this "
                "conversation's lines, or end it (POST /v1/conversation/end) and start another session_id"
            )
        return value

    @field_validator("player_id")
    @classmethod
    def _a_player(cls, value: str) -> str:
        if not is_player(value):
            raise ValueError(f"a player id starts with 'player:' (e.g. 'player:{value[:40]}')")
        return value

    @field_validator("participants")
    @classmethod
    def _has_both(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        return _members(value, info, ("player_id", "agent_id"))


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
        json_schema_extra={"maxLength": MAX_REPLY_CHARS, "echo_check": "spoken"},
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


@functools.lru_cache(maxsize=MODELS_KEPT)
def turn_reply_for(language: str | None, actions: bool | ActionTargets = False) -> type[TurnReply]:
    """The TurnReply asked for: with `language`, it also asks for the speaker's `feeling` after the line, one
    word of the Plutchik wheel in that language (EMOTION_FROM_TURN); with `actions`, for what the speaker
    does with the line (backend/action: ACTIONS_IN_TURNS), each target an enum of the ids when `actions` is
    the turn's ActionTargets (action/targets.py); with neither, the plain reply. Cached by the ids' tuples.

    Only the schema lists the words: a word outside them still validates, and the emotion service then asks
    the emotion model instead (backend/conversation/aftermath.py). Actions are checked against the world
    after the reply (backend/action/validate.py).
    """
    if language is None and not actions:
        return TurnReply
    fields: dict[str, Any] = {}
    if language is not None:
        fields["feeling"] = (
            str | None,
            Field(
                None,
                description="How the speaker feels after saying it: one word of Plutchik's wheel.",
                max_length=LABEL_MAX_CHARS,
                json_schema_extra={"enum": list(label_vocabulary(language))},
            ),
        )
    if isinstance(actions, ActionTargets):
        fields["actions"] = (actions_field_for(actions), Field(default_factory=list))
    elif actions:
        fields["actions"] = (ActionChoices, Field(default_factory=list))
    model: type[TurnReply] = create_model(  # the schema's title and description stay the plain reply's
        "TurnReply", __base__=TurnReply, __doc__=TurnReply.__doc__, **fields
    )
    return model


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
    participants: list[str] = Field(
        default_factory=list,
        description="Who is still in the conversation after this line (agents and players), in the order "
        "they joined. Empty in a reply stored before protocol 2.",
    )
    left: list[str] = Field(
        default_factory=list,
        description="Who left the conversation with this line (a participant's goodbye in a group): Unity "
        "can walk them away. The conversation ends when fewer than two remain.",
    )
    next_speaker: str | None = Field(
        None,
        description="Who should speak next (an agent: ask its turn; a player: wait for their line): the "
        "participant this line named or addressed, or in a group the one who has waited longest. None "
        "once the conversation has ended.",
    )
    actions: list[AgentAction] = Field(
        default_factory=list,
        description="What the speaker does with this line, for Unity to perform (GET /v1/world/actions "
        "lists the vocabulary); each names only things the world has. Report the outcome with "
        "POST /v1/agents/{agent_id}/action-result.",
    )
    deflected: bool = Field(
        False,
        description="True when the line is an in-character deflection: moderation held back the visitor's "
        "line or the model's reply (the server recorded why).",
    )


class PlayerTurnResult(TurnResult):
    """The agent's reply to a visitor's line, with what was stored of that line."""

    player_turn_index: int = Field(description="The visitor's line's place in the transcript.")
    player_line: str = Field(
        description='The visitor\'s line as stored ("Name: text"); a line moderation held back is stored '
        "as a neutral marker, never as typed. Put it in your history before the reply's line."
    )
    player_blocked: bool = Field(description="True when moderation held back the visitor's line.")


class EndRequest(RequestBody):
    """Unity reports that a conversation ended (e.g. the agents walked apart)."""

    session_id: StoredSessionId = Field(description="The conversation's session_id, as its turns sent it.")
    reason: str = Field("unity", min_length=1, max_length=32, description="e.g. distance, interrupted.")
    day: int | None = Field(None, ge=1, le=100_000)
    time_of_day: GameHour | None = Field(None, description=HOURS_DOC)

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
    #: "agent" or "player" (a visitor).
    kind: Literal["agent", "player"] = "agent"
    left: bool = False


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
    moderation: dict[str, Any] | None = Field(
        None,
        description="What moderation held back in this turn (stage, source, category), for the operator.",
    )
    dropped_actions: list[dict[str, Any]] | None = Field(
        None, description="Actions of the model's reply dropped (each with its reason): never sent to Unity."
    )
    telling: dict[str, Any] | None = Field(
        None,
        description="The news the line was to tell: its key, whether it was told, the slots (what, when, "
        "where) the line left out (a partial telling is offered again), `asked_again`: the slots the "
        "model's first line left out when it was asked again within the turn (TELLING_TRIES), and `tries`: "
        "the model calls the line took then.",
    )


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
