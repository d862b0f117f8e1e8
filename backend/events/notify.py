"""Events across processes on PostgreSQL: NOTIFY to send, LISTEN to hear (see relay.py for the contract).

Each event published on this process's bus is sent with `NOTIFY machi_events` (its JSON, wire.py): the
events queued while the previous notification went out share the next one, so a busy process sends a few
notifications, not one per event. Every other process LISTENs on its own connection and hands the events to
its local subscribers; one with no subscriber (a worker, an API process with no /v1/events socket open)
does not read them. A notification carries at most 8,000 bytes: a larger event is written to the outbox
table (repo.py) and the notification carries its row id. The sender and the listener each hold one connection and reconnect with a growing
delay (RECONNECT_MIN_S doubling up to RECONNECT_MAX_S) when it drops; events published while the listener
is away are lost to it (at most once).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from backend.events import repo
from backend.events.bus import Event, EventBus
from backend.events.wire import batch_body, decode, event_json, new_origin

log = logging.getLogger(__name__)

CHANNEL = "machi_events"
#: PostgreSQL refuses a notification payload of 8,000 bytes or more.
MAX_NOTIFY_BYTES = 7_900
QUEUE_SIZE = 10_000
#: Events queued at once that one send works through (in as few notifications as they fit).
SEND_BATCH = 200
RECONNECT_MIN_S = 0.5
RECONNECT_MAX_S = 30.0
#: How long start() waits for LISTEN before going on (the listener keeps retrying in the background).
START_TIMEOUT_S = 10.0


def psycopg_url(database_url: str) -> str:
    """The libpq form of a SQLAlchemy PostgreSQL URL (`postgresql+psycopg://` -> `postgresql://`)."""
    scheme, sep, rest = database_url.partition("://")
    return f"{scheme.split('+', 1)[0]}{sep}{rest}"


class _Backoff:
    """Seconds to wait before the next reconnection: doubles per failure, back to the minimum on success."""

    def __init__(self) -> None:
        self.delay = RECONNECT_MIN_S

    def reset(self) -> None:
        self.delay = RECONNECT_MIN_S

    async def wait(self, what: str, exc: Exception) -> None:
        log.warning("event relay: %s failed (%s); reconnecting in %.1f s", what, exc, self.delay)
        await asyncio.sleep(self.delay)
        self.delay = min(self.delay * 2, RECONNECT_MAX_S)


class PostgresRelay:
    """Sends this process's events to the others and delivers theirs here (module docstring)."""

    def __init__(self, bus: EventBus, database_url: str, *, channel: str = CHANNEL) -> None:
        self.bus = bus
        self.url = psycopg_url(database_url)
        self.channel = channel
        self.origin = new_origin()
        self.sent = self.received = self.dropped = 0
        self._queue: asyncio.Queue[Event[Any]] = asyncio.Queue(QUEUE_SIZE)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._listening = asyncio.Event()

    async def start(self) -> None:
        """Create the outbox, listen, and hook into the bus. Returns once this process hears the others (or
        after START_TIMEOUT_S, logged: the listener goes on trying)."""
        import psycopg

        self._loop = asyncio.get_running_loop()
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            await conn.execute(repo.PG_CREATE)
        self._tasks = [
            asyncio.create_task(self._listen(), name="events:listen"),
            asyncio.create_task(self._send(), name="events:send"),
        ]
        try:
            await asyncio.wait_for(self._listening.wait(), timeout=START_TIMEOUT_S)
        except TimeoutError:
            log.warning("event relay: not listening yet; other processes' events arrive once it is")
        self.bus.relay = self.relay

    async def stop(self) -> None:
        """Unhook and close; events still queued are sent first (within a second)."""
        self.bus.relay = None
        with contextlib.suppress(TimeoutError):
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
            with contextlib.suppress(RuntimeError):  # the loop closed: the process is stopping
                loop.call_soon_threadsafe(self._put, event)

    def _put(self, event: Event[Any]) -> None:
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped += 1
            log.warning("event relay queue full: %s not sent to the other processes", event.type)

    async def _send(self) -> None:
        import psycopg

        backoff = _Backoff()
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
                    while True:
                        batch = [await self._queue.get()]
                        while len(batch) < SEND_BATCH and not self._queue.empty():
                            batch.append(self._queue.get_nowait())
                        try:
                            await self._notify(conn, batch)
                            self.sent += len(batch)
                            backoff.reset()
                        finally:
                            for _ in batch:
                                self._queue.task_done()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the database went away: reconnect, keep the publisher free
                await backoff.wait("sending", exc)

    async def _notify(self, conn: Any, events: list[Event[Any]]) -> None:
        """Send `events` in order: as few notifications as fit them, an event too large for one by the outbox."""
        empty = len(batch_body(self.origin, []).encode())
        group: list[str] = []
        size = empty
        for event in events:
            part = event_json(event)
            grows = len(part.encode()) + 2  # its bytes and the separator
            if size + grows > MAX_NOTIFY_BYTES:
                await self._notify_group(conn, group)
                group, size = [], empty
            if (
                size + grows > MAX_NOTIFY_BYTES
            ):  # alone too large: the outbox holds it, the notification its row id
                body = batch_body(self.origin, [part])
                cursor = await conn.execute(repo.PG_INSERT, (repo.OUTBOX_KEEP_S, repo.OUTBOX_KEEP_ROWS, body))
                row = await cursor.fetchone()
                ref = json.dumps({"origin": self.origin, "ref": row[0]})
                await conn.execute(repo.PG_NOTIFY, (self.channel, ref))
                continue
            group.append(part)
            size += grows
        await self._notify_group(conn, group)

    async def _notify_group(self, conn: Any, group: list[str]) -> None:
        if group:
            await conn.execute(repo.PG_NOTIFY, (self.channel, batch_body(self.origin, group)))

    async def _listen(self) -> None:
        import psycopg

        backoff = _Backoff()
        while True:
            try:
                connect = psycopg.AsyncConnection.connect
                async with (
                    await connect(self.url, autocommit=True) as conn,
                    await connect(self.url, autocommit=True) as reader,
                ):  # reads large events from the outbox while `conn` waits for notifications
                    await conn.execute(f"LISTEN {self.channel}")
                    self._listening.set()
                    backoff.reset()
                    async for note in conn.notifies():
                        await self._receive(reader, note.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - reconnect; events meanwhile are missed (docstring)
                await backoff.wait("listening", exc)

    async def _receive(self, conn: Any, payload: str) -> None:
        if not self.bus.subscriber_count:
            return  # nobody here to hand them to: not even parsed (a worker never has anyone)
        data = json.loads(payload)
        if data.get("origin") == self.origin:
            return  # this process delivered it already, when it was published
        if "ref" in data:
            cursor = await conn.execute(repo.PG_READ, (data["ref"],))
            row = await cursor.fetchone()
            if row is None:
                log.warning("event relay: event %s left the outbox before it was read", data["ref"])
                return
            payload = row[0]
        for event in decode(payload, self.origin):
            self.received += 1
            self.bus.deliver(event)
