"""Relayed events as text: `{"origin": <sending process>, "events": [<Event as JSON>, ...]}` (one notification
or outbox row carries what the sender had queued; `"event": <one Event>` is read too).

The origin lets a process skip what it sent itself (its bus delivered those at once, when published).
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from typing import Any

from backend.events.bus import Event
from backend.events.topics import TOPICS

log = logging.getLogger(__name__)


def new_origin() -> str:
    """An id for one relay: unique across processes and across relays in one process (tests run two)."""
    return f"{os.getpid()}-{uuid.uuid4().hex[:8]}"


def encode(origin: str, event: Event[Any]) -> str:
    return batch_body(origin, [event_json(event)])


def event_json(event: Event[Any]) -> str:
    """One event as JSON text, to go into a batch (`batch_body`)."""
    return json.dumps(event.model_dump(mode="json"), ensure_ascii=False)


def batch_body(origin: str, events: list[str]) -> str:
    """The text that carries these events (each from `event_json`), in order."""
    return f'{{"origin": {json.dumps(origin)}, "events": [{", ".join(events)}]}}'


def parse_event(raw: dict[str, Any]) -> Event[Any] | None:
    """An event of a registered type, its payload typed; None (logged) for a type this process does not know
    (a newer process in a rolling upgrade)."""
    topic = TOPICS.get(raw.get("type", ""))
    if topic is None:
        log.warning("event relay: unknown event type %r ignored", raw.get("type"))
        return None
    return Event[topic.payload].model_validate(raw)  # type: ignore[name-defined]


def decode(body: str, own_origin: str) -> list[Event[Any]]:
    """The events in `body`, in order; none when this process sent them, or they cannot be read (logged)."""
    try:
        data = json.loads(body)
        if data.get("origin") == own_origin:
            return []
        raws = data["events"] if "events" in data else [data["event"]]
        return [event for event in map(parse_event, raws) if event is not None]
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        log.warning("event relay: unreadable event ignored (%s)", exc)
        return []
