"""Save and resume a world: `GET /v1/world/export`, `POST /v1/world/import`."""

from __future__ import annotations

import asyncio
import tempfile
from typing import IO, Any

from fastapi import APIRouter, Request

from backend.api.deps import EngineDep, FlightsDep, MemoryDep, SessionDep, WorldDep
from backend.storage.db import Engine, session_scope
from backend.transfer import service as transfer

router = APIRouter(prefix="/v1/world", tags=["world"])

#: The import's body as OpenAPI shows it: the route reads it as a stream, so FastAPI does not declare it.
IMPORT_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"type": "object", "description": "a world document, as GET /v1/world/export gives"}
            }
        },
    }
}


@router.get("/export")
def export_world(session: SessionDep, world: WorldDep, memory: MemoryDep) -> dict[str, Any]:
    """The whole world (agents, places, memories with embeddings, plans, conversations...) as one document;
    `embedder` names this server's embedder (an import under another one re-embeds the memories)."""
    return transfer.export_world(session, world, memory.embeddings.embedder.identity)


@router.post("/import", openapi_extra=IMPORT_BODY)
async def import_world(
    request: Request, engine: EngineDep, world: WorldDep, memory: MemoryDep, flights: FlightsDep
) -> dict[str, Any]:
    """Replace this world with the document's contents (one transaction: a bad document changes nothing).

    The body goes to a temporary file as it arrives; a worker thread reads it from there as a stream, checks
    every row, then inserts them in batches. The event loop keeps answering meanwhile (`/health`, turns), and
    the server's memory does not grow with the document.
    """
    with tempfile.TemporaryFile(prefix="machi-import-") as spool:
        async for chunk in request.stream():
            spool.write(chunk)
        # One import of a world at a time across processes (the database orders the rest after it).
        async with flights.hold(f"world:{world}:import"):
            counts = await asyncio.to_thread(_import, engine, world, spool)
    # The rows changed underneath the memory service: its cached matrices for this world are stale.
    memory.invalidate_world(world)
    return {"world_id": world, "imported": counts}


def _import(engine: Engine, world: str, spool: IO[bytes]) -> dict[str, int]:
    with session_scope(engine) as session:  # the import commits (or rolls back) its own transaction
        return transfer.import_stream(session, world, spool)
