"""The registry: every event name mapped to its payload type, as typed topics mypy can check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from backend.events.payloads import (
    AgentStatePayload,
    ConversationEndedPayload,
    CouncilPayload,
    EmotionPayload,
    LLMCallPayload,
    MemoryEvictedPayload,
    MemoryPayload,
    Payload,
    PlanPayload,
    ReflectionPayload,
    TurnPayload,
)

P = TypeVar("P", bound=Payload)


@dataclass(frozen=True)
class Topic(Generic[P]):
    """An event name bound to its payload type: `bus.publish(MEMORY_CREATED, world, MemoryPayload(...))`."""

    name: str
    payload: type[P]


MEMORY_CREATED = Topic("memory.created", MemoryPayload)
MEMORY_UPDATED = Topic("memory.updated", MemoryPayload)
MEMORY_EVICTED = Topic("memory.evicted", MemoryEvictedPayload)
EMOTION_UPDATED = Topic("emotion.updated", EmotionPayload)
CONVERSATION_TURN = Topic("conversation.turn", TurnPayload)
CONVERSATION_ENDED = Topic("conversation.ended", ConversationEndedPayload)
REFLECTION_CREATED = Topic("reflection.created", ReflectionPayload)
PLAN_UPDATED = Topic("plan.updated", PlanPayload)
AGENT_STATE = Topic("agent.state", AgentStatePayload)
COUNCIL_UPDATED = Topic("council.updated", CouncilPayload)
LLM_CALL = Topic("llm.call", LLMCallPayload)

TOPICS: dict[str, Topic[Payload]] = {
    t.name: t  # type: ignore[misc]
    for t in (
        MEMORY_CREATED,
        MEMORY_UPDATED,
        MEMORY_EVICTED,
        EMOTION_UPDATED,
        CONVERSATION_TURN,
        CONVERSATION_ENDED,
        REFLECTION_CREATED,
        PLAN_UPDATED,
        AGENT_STATE,
        COUNCIL_UPDATED,
        LLM_CALL,
    )
}
