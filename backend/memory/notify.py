"""The memory concept's events on the bus: created, updated, evicted, and reflections.

Call these on the event loop thread only (never inside `asyncio.to_thread`): subscribers are not thread-safe.
Without a bus every call does nothing, so the service works the same in tools and tests that have none.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from backend.events import (
    MEMORY_CREATED,
    MEMORY_EVICTED,
    MEMORY_UPDATED,
    REFLECTION_CREATED,
    EventBus,
    MemoryEvictedPayload,
    MemoryPayload,
    ReflectionPayload,
)
from backend.memory.models import Memory

log = logging.getLogger(__name__)
#: Reflection origins that are reflections in the sense of `reflection.created`.
REFLECTION_KINDS = ("conversation", "insight")


def _payload(row: Memory) -> MemoryPayload:
    return MemoryPayload(
        agent_id=row.agent_id,
        memory_id=row.id or 0,
        type=row.type,
        content=row.content,
        importance=row.importance,
        importance_source=row.importance_source,
        location_name=row.location_name,
        tags=list(row.tags or []),
    )


class MemoryEvents:
    def __init__(self, bus: EventBus | None) -> None:
        self.bus = bus

    def created(self, rows: Sequence[Memory]) -> None:
        """memory.created for each new row, and reflection.created for conversation reflections and insights."""
        if self.bus is None:
            return
        for row in rows:
            self.bus.publish(MEMORY_CREATED, row.world_id, _payload(row))
            if row.type == "reflection" and row.origin in REFLECTION_KINDS:
                reflection = ReflectionPayload(
                    agent_id=row.agent_id,
                    memory_id=row.id or 0,
                    content=row.content,
                    kind=row.origin,
                    evidence_ids=list(row.evidence_ids),
                )
                self.bus.publish(REFLECTION_CREATED, row.world_id, reflection)

    def updated(self, rows: Sequence[Memory]) -> None:
        """memory.updated: a rating landed or a duplicate merged in."""
        if self.bus is not None:
            for row in rows:
                self.bus.publish(MEMORY_UPDATED, row.world_id, _payload(row))

    def merged(self, kept: Memory, dropped: Memory) -> None:
        """A duplicate was not stored: memory.evicted (reason "dedup", no ids: it never had one)."""
        log.info(
            "memory of %s/%s merged into %s (not stored): %s",
            kept.world_id, kept.agent_id, kept.id, dropped.content[:120],
        )  # fmt: skip
        if self.bus is not None:
            payload = MemoryEvictedPayload(
                agent_id=kept.agent_id,
                memory_ids=[],
                reason="dedup",
                merged_into=kept.id,
                content=dropped.content[:2000],
            )
            self.bus.publish(MEMORY_EVICTED, kept.world_id, payload)

    def evicted(self, world_id: str, agent_id: str, ids: Sequence[int], reason: str = "cap") -> None:
        if not ids:
            return
        log.info("evicted %d memories of %s/%s (%s)", len(ids), world_id, agent_id, reason)
        if self.bus is not None:
            payload = MemoryEvictedPayload(agent_id=agent_id, memory_ids=list(ids), reason=reason)
            self.bus.publish(MEMORY_EVICTED, world_id, payload)
