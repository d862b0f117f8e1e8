"""The typed event bus: one registry of event names -> payload types, per-world delivery, across processes.

Owns: the in-process bus (subscriptions, per-world fan-out), the payload type of every topic, and the relay
that carries events between the processes on one database (relay.py: NOTIFY on PostgreSQL, notify.py; the
`machi_event_outbox` table polled on SQLite, poll.py; its SQL in repo.py; the table is no model, the relays
create it and prune it to the last minute).
Imports: gametime; config, errors and storage (the relay only). Concepts publish on the bus they are given;
/v1/events (api) forwards it; app.py starts the relay for the lifespan (`relay.relaying`).
"""

from backend.events.bus import Event, EventBus, EventTypeError, Subscription, payload_types
from backend.events.payloads import (
    AgentStatePayload,
    ConversationEndedPayload,
    CouncilPayload,
    EmotionPayload,
    LLMCallPayload,
    MemoryEvictedPayload,
    MemoryPayload,
    PlanPayload,
    ReflectionPayload,
    TurnPayload,
)
from backend.events.topics import (
    AGENT_STATE,
    CONVERSATION_ENDED,
    CONVERSATION_TURN,
    COUNCIL_UPDATED,
    EMOTION_UPDATED,
    LLM_CALL,
    MEMORY_CREATED,
    MEMORY_EVICTED,
    MEMORY_UPDATED,
    PLAN_UPDATED,
    REFLECTION_CREATED,
    TOPICS,
    Topic,
)

__all__ = [
    "AGENT_STATE",
    "CONVERSATION_ENDED",
    "CONVERSATION_TURN",
    "COUNCIL_UPDATED",
    "EMOTION_UPDATED",
    "LLM_CALL",
    "MEMORY_CREATED",
    "MEMORY_EVICTED",
    "MEMORY_UPDATED",
    "PLAN_UPDATED",
    "REFLECTION_CREATED",
    "TOPICS",
    "AgentStatePayload",
    "ConversationEndedPayload",
    "CouncilPayload",
    "EmotionPayload",
    "Event",
    "EventBus",
    "EventTypeError",
    "LLMCallPayload",
    "MemoryEvictedPayload",
    "MemoryPayload",
    "PlanPayload",
    "ReflectionPayload",
    "Subscription",
    "Topic",
    "TurnPayload",
    "payload_types",
]
