from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.events import (
    AGENT_STATE,
    MEMORY_CREATED,
    AgentStatePayload,
    Event,
    EventBus,
    EventTypeError,
    MemoryPayload,
)


def _memory(agent: str = "aoi") -> MemoryPayload:
    return MemoryPayload(
        agent_id=agent, memory_id=1, type="observation", content="カフェでヒカリと話した", importance=4
    )


def test_wrong_payload_type_is_refused() -> None:
    bus = EventBus()
    state = AgentStatePayload(agent_id="aoi", state="talking", day=1, time_of_day=9.0)
    with pytest.raises(EventTypeError, match="memory.created carries MemoryPayload"):
        bus.publish(MEMORY_CREATED, "default", state)  # type: ignore[arg-type]
    with pytest.raises(EventTypeError, match="unknown event type"):
        bus.publish("memory.exploded", "default", _memory())


def test_subscriber_hears_only_its_worlds_types_and_agents() -> None:
    bus = EventBus()
    heard: list[Event[Any]] = []
    bus.subscribe(heard.append, types=["memory.created"], worlds=["booth"], agents=["hikari"])
    bus.publish(MEMORY_CREATED, "rehearsal", _memory("hikari"))
    bus.publish(MEMORY_CREATED, "booth", _memory("aoi"))
    bus.publish(
        AGENT_STATE, "booth", AgentStatePayload(agent_id="hikari", state="talking", day=1, time_of_day=9)
    )
    bus.publish(MEMORY_CREATED, "booth", _memory("hikari"))
    assert [(e.world_id, e.type, e.payload.agent_id) for e in heard] == [
        ("booth", "memory.created", "hikari")
    ]


def test_raising_subscriber_does_not_break_delivery() -> None:
    bus = EventBus()
    heard: list[int] = []

    def broken(_event: Event[Any]) -> None:
        raise RuntimeError("subscriber bug")

    first = bus.subscribe(broken)
    bus.subscribe(lambda e: heard.append(e.id))
    event = bus.publish(MEMORY_CREATED, "default", _memory())
    assert heard == [event.id]
    assert first.failures == 1


async def test_async_subscriber_failure_is_contained() -> None:
    bus = EventBus()
    heard: list[str] = []

    async def broken(_event: Event[Any]) -> None:
        raise RuntimeError("async bug")

    async def good(event: Event[Any]) -> None:
        heard.append(event.type)

    bad = bus.subscribe(broken)
    bus.subscribe(good)
    bus.publish(MEMORY_CREATED, "default", _memory())
    await asyncio.sleep(0.01)
    assert heard == ["memory.created"]
    assert bad.failures == 1


def test_unknown_type_filter_is_refused() -> None:
    with pytest.raises(EventTypeError):
        EventBus().subscribe(lambda e: None, types=["nope"])


def test_websocket_streams_only_the_requested_world(client: TestClient) -> None:
    bus: EventBus = client.app.state.events  # type: ignore[attr-defined]
    with client.websocket_connect(
        "/v1/events?types=memory.created", headers={"X-Machi-World": "booth"}
    ) as ws:
        # The subscription exists once the socket is accepted; publish from the app's loop.
        client.portal.call(_publish, bus, "rehearsal", _memory("secret"))  # type: ignore[union-attr]
        client.portal.call(_publish, bus, "booth", _memory("aoi"))  # type: ignore[union-attr]
        message = ws.receive_json()
    assert message["world_id"] == "booth"
    assert message["payload"]["agent_id"] == "aoi"
    assert message["type"] == "memory.created"


def test_websocket_world_from_query_and_agent_filter(client: TestClient) -> None:
    bus: EventBus = client.app.state.events  # type: ignore[attr-defined]
    with client.websocket_connect("/v1/events?world=booth&agents=hikari") as ws:
        client.portal.call(_publish, bus, "booth", _memory("aoi"))  # type: ignore[union-attr]
        client.portal.call(_publish, bus, "booth", _memory("hikari"))  # type: ignore[union-attr]
        assert ws.receive_json()["payload"]["agent_id"] == "hikari"


def test_websocket_rejects_unknown_types(client: TestClient) -> None:
    with client.websocket_connect("/v1/events?types=bogus") as ws:
        assert "bogus" in ws.receive_json()["error"]["message"]


async def _publish(bus: EventBus, world: str, payload: MemoryPayload) -> None:
    bus.publish(MEMORY_CREATED, world, payload)
