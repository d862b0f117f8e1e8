"""A typed, in-process event bus with per-world delivery.

Every event carries its world; a subscriber may restrict the worlds, event names and agents it hears.
`publish` refuses a payload of the wrong type for the event name. A failing subscriber is logged and
never stops the others or the publisher.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic

from pydantic import BaseModel

from backend.events.payloads import Payload
from backend.events.topics import TOPICS, P, Topic
from backend.gametime import utcnow

log = logging.getLogger(__name__)


class EventTypeError(TypeError):
    """A payload was published under an event name whose payload type it is not."""


class Event(BaseModel, Generic[P]):
    """What subscribers receive and what the WebSocket sends (as JSON)."""

    id: int
    type: str
    world_id: str
    at: datetime
    payload: P

    def agents(self) -> set[str]:
        data = self.payload
        found = {getattr(data, key, None) for key in ("agent_id", "target_id")}
        found.update(getattr(data, "participants", []) or [])
        return {a for a in found if a}


Handler = Callable[[Event[Any]], Awaitable[None] | None]


@dataclass
class Subscription:
    handler: Handler
    types: frozenset[str] | None = None
    worlds: frozenset[str] | None = None
    agents: frozenset[str] | None = None
    failures: int = 0
    bus: EventBus | None = field(default=None, repr=False)

    def wants(self, event: Event[Any]) -> bool:
        if self.types is not None and event.type not in self.types:
            return False
        if self.worlds is not None and event.world_id not in self.worlds:
            return False
        return self.agents is None or bool(self.agents & event.agents())

    def close(self) -> None:
        if self.bus is not None:
            self.bus.unsubscribe(self)


class EventBus:
    def __init__(self) -> None:
        self._subscriptions: list[Subscription] = []
        self._ids = itertools.count(1)
        self._pending: set[asyncio.Task[None]] = set()
        self.published = 0
        #: Hands each event published here to the other processes (events/relay.py), when there are any.
        self.relay: Callable[[Event[Any]], None] | None = None

    def subscribe(
        self,
        handler: Handler,
        *,
        types: Iterable[str | Topic[Any]] | None = None,
        worlds: Iterable[str] | None = None,
        agents: Iterable[str] | None = None,
    ) -> Subscription:
        """Hear events (all, or only the given names/worlds/agents). Unknown names are refused."""
        names = None
        if types is not None:
            names = frozenset(t.name if isinstance(t, Topic) else t for t in types)
            unknown = names - TOPICS.keys()
            if unknown:
                raise EventTypeError(f"unknown event type(s): {', '.join(sorted(unknown))}")
        sub = Subscription(
            handler,
            types=names,
            worlds=frozenset(worlds) if worlds is not None else None,
            agents=frozenset(agents) if agents is not None else None,
            bus=self,
        )
        self._subscriptions.append(sub)
        return sub

    def on(
        self, topic: Topic[P], handler: Callable[[Event[P]], Awaitable[None] | None], **filters: Any
    ) -> Subscription:
        """Typed subscription to one topic: the handler's payload type is the topic's."""
        return self.subscribe(handler, types=[topic], **filters)

    def unsubscribe(self, sub: Subscription) -> None:
        if sub in self._subscriptions:
            self._subscriptions.remove(sub)

    def publish(self, topic: Topic[P] | str, world_id: str, payload: P) -> Event[P]:
        """Deliver an event to every interested subscriber. Raises EventTypeError on a mismatched payload."""
        registered = TOPICS.get(topic if isinstance(topic, str) else topic.name)
        if registered is None:
            raise EventTypeError(f"unknown event type {topic!r}")
        if not isinstance(payload, registered.payload):
            raise EventTypeError(
                f"{registered.name} carries {registered.payload.__name__}, not {type(payload).__name__}"
            )
        event: Event[P] = Event(
            id=next(self._ids), type=registered.name, world_id=world_id, at=utcnow(), payload=payload
        )
        self.published += 1
        self.deliver(event)
        if self.relay is not None:
            self.relay(event)
        return event

    def deliver(self, event: Event[Any]) -> None:
        """Hand `event` to this process's subscribers (an event published here, or relayed from another)."""
        for sub in list(self._subscriptions):
            if sub.wants(event):
                self._deliver(sub, event)

    def _deliver(self, sub: Subscription, event: Event[Any]) -> None:
        try:
            result = sub.handler(event)
        except Exception:  # noqa: BLE001 - one subscriber must not break delivery
            sub.failures += 1
            log.exception("event subscriber failed on %s", event.type)
            return
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(self._guard(sub, result, event.type))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    async def _guard(self, sub: Subscription, awaitable: Awaitable[None], name: str) -> None:
        try:
            await awaitable
        except Exception:  # noqa: BLE001
            sub.failures += 1
            log.exception("async event subscriber failed on %s", name)

    @property
    def subscriber_count(self) -> int:
        return len(self._subscriptions)


def payload_types() -> dict[str, type[Payload]]:
    """Event name -> payload type (used by the protocol export and the docs)."""
    return {name: topic.payload for name, topic in TOPICS.items()}
