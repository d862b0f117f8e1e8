"""WebSocket /v1/events: the request's world's events as JSON messages (dashboard and Unity)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from backend.events import TOPICS, Event
from backend.ids import id_problem
from backend.world.models import DEFAULT_WORLD

router = APIRouter(tags=["events"])

QUEUE_SIZE = 1000


def _split(value: str | None) -> list[str] | None:
    if not value:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


@router.websocket("/v1/events")
async def events(
    websocket: WebSocket, types: str | None = None, agents: str | None = None, world: str | None = None
) -> None:
    """Stream events. World from the `X-Machi-World` header or `?world=` (browsers cannot set headers).

    At most MAX_EVENT_SOCKETS are open at once: one more is accepted, sent the error and closed with 1013
    (try again later). They are long-lived by design; no request deadline applies to them.
    """
    world_id = websocket.headers.get("x-machi-world") or world or DEFAULT_WORLD
    wanted = _split(types)
    unknown = sorted(set(wanted or []) - TOPICS.keys())
    if id_problem(world_id) is not None or unknown:
        reason = f"unknown event types: {', '.join(unknown)}" if unknown else "invalid world id"
        await _refuse(websocket, 1008, "invalid_input", reason)
        return
    open_sockets: set[WebSocket] = websocket.app.state.event_sockets
    limit: int = websocket.app.state.settings.max_event_sockets
    if len(open_sockets) >= limit:
        reason = f"this server has its {limit} event WebSockets open (MAX_EVENT_SOCKETS): try again later"
        await _refuse(websocket, 1013, "service_unavailable", reason)
        return
    open_sockets.add(websocket)  # before any await: a burst of handshakes cannot pass the limit together
    try:
        await _stream(websocket, world_id, wanted, _split(agents))
    finally:
        open_sockets.discard(websocket)


async def _refuse(websocket: WebSocket, close_code: int, code: str, reason: str) -> None:
    await websocket.accept()
    await websocket.send_json({"error": {"code": code, "message": reason}})
    # A close reason is at most 123 bytes of UTF-8 (the type names come from the client: any script).
    await websocket.close(code=close_code, reason=reason.encode()[:120].decode("utf-8", "ignore"))


async def _stream(
    websocket: WebSocket, world_id: str, wanted: list[str] | None, agents: list[str] | None
) -> None:
    queue: asyncio.Queue[Event[Any]] = asyncio.Queue(maxsize=QUEUE_SIZE)

    def enqueue(event: Event[Any]) -> None:
        if queue.full():  # a slow client loses the oldest events, never blocks the publisher
            queue.get_nowait()
        queue.put_nowait(event)

    bus = websocket.app.state.events
    # Subscribe before accepting, so a client that publishes right after connecting misses nothing.
    sub = bus.subscribe(enqueue, types=wanted, worlds=[world_id], agents=agents)
    await websocket.accept()
    receiver = asyncio.create_task(_drain_incoming(websocket))
    try:
        while not receiver.done():
            getter = asyncio.create_task(queue.get())
            done, _ = await asyncio.wait({getter, receiver}, return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                break
            await websocket.send_text(getter.result().model_dump_json())
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        sub.close()
        receiver.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await receiver


async def _drain_incoming(websocket: WebSocket) -> None:
    # Clients need not send anything; reading is how a disconnect is noticed.
    with contextlib.suppress(WebSocketDisconnect):
        while True:
            await websocket.receive_text()
