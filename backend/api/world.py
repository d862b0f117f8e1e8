"""Save and resume a world: `GET /v1/world/export`, `POST /v1/world/import`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body

from backend.api.deps import MemoryDep, SessionDep, WorldDep
from backend.world import transfer

router = APIRouter(prefix="/v1/world", tags=["world"])


@router.get("/export")
def export_world(session: SessionDep, world: WorldDep) -> dict[str, Any]:
    """The whole world (agents, places, memories with embeddings, plans, conversations...) as one document."""
    return transfer.export_world(session, world)


@router.post("/import")
def import_world(
    session: SessionDep, world: WorldDep, memory: MemoryDep, document: dict[str, Any] = Body(...)
) -> dict[str, Any]:
    """Replace this world with the document's contents (one transaction: a bad document changes nothing)."""
    counts = transfer.import_world(session, world, document)
    # The rows changed underneath the memory service: its cached matrices for this world are stale.
    memory.invalidate_world(world)
    return {"world_id": world, "imported": counts}
