"""Events across processes: every process's bus hears what the others publish, through PostgreSQL.

Several API processes and workers share one PostgreSQL and nothing else. Each event published on one bus is
sent with `NOTIFY machi_events` (its JSON, tagged with the sending process); every other process LISTENs on
its own connection and hands the event to its local subscribers (`EventBus.deliver`), so a WebSocket on
process B sees the turn process A answered. A notification carries at most 8,000 bytes: a larger event is
written to the `machi_event_outbox` table and the notification carries its row id; rows older than
OUTBOX_KEEP_S are deleted as new ones are written.

Delivery is at most once and in order per sending process, like the in-process bus: an event published while
a listener is reconnecting is lost to it (the dashboard re-reads state on reconnect; nothing stored depends on
events). The relay never blocks the publisher: events go through a queue to one sender task, and a full
queue drops the newest with a warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import uuid
from typing import Any

from backend.events.bus import Event, EventBus
from backend.events.topics import TOPICS

log = logging.getLogger(__name__)

CHANNEL = "machi_events"
#: PostgreSQL refuses a notification payload of 8,000 bytes or more.
MAX_NOTIFY_BYTES = 7_900
OUTBOX_KEEP_S = 300
QUEUE_SIZE = 10_000
RECONNECT_S = 1.0

_CREATE = (
    "CREATE TABLE IF NOT EXISTS machi_event_outbox ("
    "id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())"
)


def psycopg_url(database_url: str) -> str:
    """The libpq form of a SQLAlchemy PostgreSQL URL (`postgresql+psycopg://` -> `postgresql://`)."""
    scheme, sep, rest = database_url.partition("://")
    return f"{scheme.split('+', 1)[0]}{sep}{rest}"


class PostgresRelay:
    """Sends this process's events to the others and delivers theirs here (module docstring)."""

    def __init__(self, bus: EventBus, database_url: str, *, channel: str = CHANNEL) -> None:
        self.bus = bus
        self.url = psycopg_url(database_url)
        self.channel = channel
        self.origin = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.sent = self.received = self.dropped = 0
        self._queue: asyncio.Queue[Event[Any]] = asyncio.Queue(QUEUE_SIZE)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._listening = asyncio.Event()

    async def start(self) -> None:
        """Connect, listen, and hook into the bus. Returns once this process hears the others."""
        import psycopg

        self._loop = asyncio.get_running_loop()
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            await conn.execute(_CREATE)
        self._tasks = [
            asyncio.create_task(self._listen(), name="events:listen"),
            asyncio.create_task(self._send(), name="events:send"),
        ]
        await asyncio.wait_for(self._listening.wait(), timeout=30)
        self.bus.relay = self.relay

    async def stop(self) -> None:
        """Unhook and close; events still queued are sent first (within a second)."""
        self.bus.relay = None
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout=1.0)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def relay(self, event: Event[Any]) -> None:
        """The bus's hook: queue `event` for the sender (from the event loop or any thread)."""
        loop = self._loop
        if loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._put(event)
        else:
            loop.call_soon_threadsafe(self._put, event)

    def _put(self, event: Event[Any]) -> None:
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped += 1
            log.warning("event relay queue full: %s not sent to the other processes", event.type)

    async def _send(self) -> None:
        import psycopg

        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
                    while True:
                        event = await self._queue.get()
                        try:
                            await self._notify(conn, event)
                            self.sent += 1
                        finally:
                            self._queue.task_done()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the database went away: reconnect, keep the publisher free
                log.warning("event relay: sending failed (%s); reconnecting", exc)
                await asyncio.sleep(RECONNECT_S)

    async def _notify(self, conn: Any, event: Event[Any]) -> None:
        body = json.dumps({"origin": self.origin, "event": event.model_dump(mode="json")}, ensure_ascii=False)
        if len(body.encode()) > MAX_NOTIFY_BYTES:
            cursor = await conn.execute(
                "WITH old AS (DELETE FROM machi_event_outbox WHERE created_at < now() - make_interval(secs => %s)) "
                "INSERT INTO machi_event_outbox (body) VALUES (%s) RETURNING id",
                (OUTBOX_KEEP_S, body),
            )
            row = await cursor.fetchone()
            body = json.dumps({"origin": self.origin, "ref": row[0]})
        await conn.execute("SELECT pg_notify(%s, %s)", (self.channel, body))

    async def _listen(self) -> None:
        import psycopg

        while True:
            try:
                connect = psycopg.AsyncConnection.connect
                async with (
                    await connect(self.url, autocommit=True) as conn,
                    await connect(self.url, autocommit=True) as reader,
                ):  # reads large events from the outbox while `conn` waits for notifications
                    await conn.execute(f"LISTEN {self.channel}")
                    self._listening.set()
                    async for note in conn.notifies():
                        await self._receive(reader, note.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - reconnect; events meanwhile are missed (docstring)
                log.warning("event relay: listening failed (%s); reconnecting", exc)
                await asyncio.sleep(RECONNECT_S)

    async def _receive(self, conn: Any, payload: str) -> None:
        data = json.loads(payload)
        if data.get("origin") == self.origin:
            return  # this process delivered it already
        if "ref" in data:
            cursor = await conn.execute("SELECT body FROM machi_event_outbox WHERE id = %s", (data["ref"],))
            row = await cursor.fetchone()
            if row is None:
                log.warning("event relay: event %s left the outbox before it was read", data["ref"])
                return
            data = json.loads(row[0])
        event = parse_event(data["event"])
        if event is not None:
            self.received += 1
            self.bus.deliver(event)


def parse_event(raw: dict[str, Any]) -> Event[Any] | None:
    """An event of a registered type, its payload typed; None (logged) for a type this process does not know
    (a newer process in a rolling upgrade)."""
    topic = TOPICS.get(raw.get("type", ""))
    if topic is None:
        log.warning("event relay: unknown event type %r ignored", raw.get("type"))
        return None
    return Event[topic.payload].model_validate(raw)  # type: ignore[name-defined]
