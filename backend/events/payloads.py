"""Payload types of every event. One event name, one payload type (see `topics.py`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoryPayload(Payload):
    agent_id: str
    memory_id: int
    type: str
    content: str
    importance: int
    importance_source: str = "caller"
    location_name: str | None = None
    tags: list[str] = []


class MemoryEvictedPayload(Payload):
    agent_id: str
    memory_ids: list[int]
    reason: str  # "cap" | "dedup"
    merged_into: int | None = None
    #: For a dedup: the text that was merged into `merged_into` instead of being stored.
    content: str | None = None


class EmotionPayload(Payload):
    agent_id: str
    values: dict[str, float]
    label: str
    vrm_emotion: str
    day: int
    time_of_day: float
    cause: str | None = None


class TurnPayload(Payload):
    session_id: str
    agent_id: str
    target_id: str
    turn_index: int
    dialogue: str
    emotion: str
    fallback: bool
    is_conversation_end: bool
    end_reason: str | None = None
    location_name: str | None = None


class ConversationEndedPayload(Payload):
    session_id: str
    participants: list[str]
    reason: str
    turn_count: int


class ReflectionPayload(Payload):
    agent_id: str
    memory_id: int
    content: str
    kind: str  # "conversation" | "insight"
    evidence_ids: list[int] = []


class PlanPayload(Payload):
    agent_id: str
    day: int
    reason: str | None = None
    items: list[dict[str, Any]] = []
    #: model | repaired | fallback (a fallback stored at PLAN_DEADLINE_S is replaced when the model's arrives).
    source: str = "model"
    version: int = 1


class AgentStatePayload(Payload):
    agent_id: str
    state: str
    location_name: str | None = None
    position: dict[str, float] | None = None
    day: int
    time_of_day: float


class CouncilPayload(Payload):
    council_id: str
    number: int
    status: str
    stage: str | None = None
    round: int | None = None
    outcome: str | None = None


class LLMCallPayload(Payload):
    call_id: int | None
    purpose: str
    agent_id: str | None = None
    session_id: str | None = None
    council_id: str | None = None
    model: str
    ok: bool
    error: str | None = None
    latency_ms: float
