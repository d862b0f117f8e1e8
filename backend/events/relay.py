"""Events across processes: every process's bus hears what the others on the same database publish.

API processes and `machi worker` processes share one database and nothing else. A relay hooks into its
process's bus (`EventBus.relay`): an event published here is delivered here at once, by the bus, and handed
to the relay, which sends it to the other processes; what they send is handed to this bus's subscribers
(`EventBus.deliver`), so a WebSocket on process B sees the turn process A answered, filtered by world like
any other event. Each relay tags what it sends with its origin and skips its own, so no event is delivered
twice in the process that published it.

- PostgreSQL: `notify.PostgresRelay`, NOTIFY/LISTEN (large events through the outbox table).
- SQLite: `poll.PollingRelay`, the outbox table written in batches and polled (one file, one machine).

Which one runs (`relay_kind`): EVENTS_RELAY=off never; PostgreSQL always otherwise; SQLite when
EVENTS_RELAY=on, or with "auto" when PROCESS_ROLE is not "all" (a single process needs no relay, and the
poll would only cost it). Never for an in-memory SQLite database, which no other process can open.

Delivery is at most once and in order per sending process, like the in-process bus: an event published while
a listener is reconnecting, or pruned from the outbox before a lagging process read it, is lost to it (the
dashboard re-reads state on reconnect; nothing stored depends on events). Relaying never blocks the
publisher: events go through a bounded queue to the relay's sender, and a full queue drops the newest with a
warning. Event ids are per process: two processes' events may share an id. A subscriber hears every
process's events: today only /v1/events subscribes, to forward them; one that would act on an event (start
work) must expect the event to be acted on in every process.

A process that publishes (the app's lifespan, `machi worker`) runs `async with relaying(bus, settings)`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal, Protocol

from backend.config import Settings
from backend.errors import MissingDependency
from backend.events.bus import Event, EventBus
from backend.events.notify import PostgresRelay, psycopg_url
from backend.events.poll import PollingRelay
from backend.events.wire import parse_event

log = logging.getLogger(__name__)

RelayKind = Literal["notify", "poll"]

__all__ = ["PollingRelay", "PostgresRelay", "Relay", "parse_event", "psycopg_url", "relay_kind", "relaying"]


class Relay(Protocol):
    origin: str
    sent: int
    received: int
    dropped: int

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    def relay(self, event: Event[Any]) -> None: ...


def relay_kind(settings: Settings) -> RelayKind | None:
    """How this process's events reach the others on its database, or None when they need not (docstring)."""
    if settings.events_relay == "off":
        return None
    if settings.database_kind() == "postgresql":
        return "notify"
    url = settings.database_url
    if ":memory:" in url or "mode=memory" in url or url.rstrip("/") == "sqlite:":
        return None
    if settings.events_relay == "on" or settings.process_role != "all":
        return "poll"
    return None


def make_relay(bus: EventBus, settings: Settings) -> Relay | None:
    kind = relay_kind(settings)
    if kind == "notify":
        return PostgresRelay(bus, settings.database_url)
    if kind == "poll":
        return PollingRelay(bus, settings.database_url)
    return None


@asynccontextmanager
async def relaying(bus: EventBus, settings: Settings) -> AsyncIterator[Relay | None]:
    """Relay `bus`'s events for as long as the block runs (the app's lifespan, a worker's run).

    Yields the started relay, or None when none is needed.

    Raises:
        MissingDependency: EVENTS_RELAY=on with PostgreSQL and psycopg (the `postgres` extra) not installed.
            With "auto" that is only logged: the process runs, hearing its own events only.
    """
    relay = make_relay(bus, settings)
    if relay is not None:
        try:
            await relay.start()
        except ImportError as exc:
            message = f"events are not relayed to other processes: {exc} (pip install -e '.[postgres]')"
            if settings.events_relay == "on":
                raise MissingDependency(message) from exc
            log.warning(message)
            relay = None
    try:
        yield relay
    finally:
        if relay is not None:
            await relay.stop()
