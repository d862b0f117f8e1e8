"""Test helpers for calling the app's MemoryService directly (on the app's event loop)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient

from backend.memory.models import Memory, MemoryCreate
from backend.memory.service import MemoryService


def service(client: TestClient) -> MemoryService:
    app: Any = client.app
    return app.state.memory  # type: ignore[no-any-return]


def call(client: TestClient, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Await `fn(*args, **kwargs)` on the app's event loop and return its result."""
    portal: Any = client.portal
    return portal.call(functools.partial(fn, *args, **kwargs))


def add(
    client: TestClient,
    content: str,
    *,
    agent: str = "aoi",
    world: str = "default",
    session_id: str | None = None,
    **fields: Any,
) -> Memory:
    """Store one memory through MemoryService.add (type observation unless given)."""
    item = MemoryCreate(type=fields.pop("type", "observation"), content=content, **fields)
    return call(client, service(client).add, world, agent, item, session_id=session_id)  # type: ignore[no-any-return]
