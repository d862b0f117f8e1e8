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
    """Stream events. World from the `X-Machi-World` header or `?world=` (browsers cannot set headers)."""
    world_id = websocket.headers.get("x-machi-world") or world or DEFAULT_WORLD
    wanted = _split(types)
    unknown = sorted(set(wanted or []) - TOPICS.keys())
    if id_problem(world_id) is not None or unknown:
        await websocket.accept()
        reason = f"unknown event types: {', '.join(unknown)}" if unknown else "invalid world id"
        await websocket.send_json({"error": {"code": "invalid_input", "message": reason}})
        await websocket.close(code=1008, reason=reason)
        return
    queue: asyncio.Queue[Event[Any]] = asyncio.Queue(maxsize=QUEUE_SIZE)

    def enqueue(event: Event[Any]) -> None:
        if queue.full():  # a slow client loses the oldest events, never blocks the publisher
            queue.get_nowait()
        queue.put_nowait(event)

    bus = websocket.app.state.events
    # Subscribe before accepting, so a client that publishes right after connecting misses nothing.
    sub = bus.subscribe(enqueue, types=wanted, worlds=[world_id], agents=_split(agents))
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
