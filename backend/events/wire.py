"""A relayed event as text: `{"origin": <sending process>, "event": <Event as JSON>}`.

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
    return json.dumps({"origin": origin, "event": event.model_dump(mode="json")}, ensure_ascii=False)


def parse_event(raw: dict[str, Any]) -> Event[Any] | None:
    """An event of a registered type, its payload typed; None (logged) for a type this process does not know
    (a newer process in a rolling upgrade)."""
    topic = TOPICS.get(raw.get("type", ""))
    if topic is None:
        log.warning("event relay: unknown event type %r ignored", raw.get("type"))
        return None
    return Event[topic.payload].model_validate(raw)  # type: ignore[name-defined]


def decode(body: str, own_origin: str) -> Event[Any] | None:
    """The event in `body`; None when this process sent it, or it cannot be read (logged)."""
    try:
        data = json.loads(body)
        if data.get("origin") == own_origin:
            return None
        return parse_event(data["event"])
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        log.warning("event relay: unreadable event ignored (%s)", exc)
        return None
