"""The memory stream over HTTP: store, list, retrieve (with the score's parts), reflect, delete."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Response
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from backend.api.deps import MAX_OFFSET, MAX_ROW_ID, IntentionsDep, MemoryDep, WorldDep
from backend.ids import ID_RULE, Id
from backend.memory.models import (
    Memory,
    MemoryBatchCreate,
    MemoryCreate,
    MemoryList,
    MemoryPublic,
    MemoryType,
    ReflectRequest,
    ReflectResponse,
    RetrieveRequest,
    RetrieveResponse,
    ScoredMemoryPublic,
    Search,
)

router = APIRouter(prefix="/v1/agents/{agent_id}", tags=["memory"])
AgentId = Annotated[Id, Path(description=f"the agent's id: {ID_RULE}")]


def public(row: Memory) -> MemoryPublic:
    return MemoryPublic.model_validate(row, from_attributes=True)


def _parse(model: type[MemoryCreate] | type[MemoryBatchCreate], body: Any) -> Any:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        # Reported like any request-body error, so the field is named ("memories.3.content").
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]) from exc


@router.post("/memories", status_code=201, response_model=MemoryPublic | MemoryList)
async def add_memories(
    agent_id: AgentId,
    world: WorldDep,
    memory: MemoryDep,
    intentions: IntentionsDep,
    body: Annotated[
        dict[str, Any], Body(examples=[{"type": "observation", "content": "カフェでヒカリと話した"}])
    ],
) -> MemoryPublic | MemoryList:
    """One memory `{type, content, ...}`, or a batch `{"memories": [...]}` of up to 1000. A plan memory of
    importance INTENTION_FROM_IMPORTANCE (8) or more also joins the agent's intentions at once."""
    batch = "memories" in body
    parsed = _parse(MemoryBatchCreate if batch else MemoryCreate, body)
    memory.require_agent(world, agent_id)
    if not batch:
        row = await memory.add(world, agent_id, parsed)
        await intentions.note_memory(world, agent_id, parsed)
        return public(row)
    rows = await memory.add_many(world, agent_id, parsed.memories)
    for item in parsed.memories:
        await intentions.note_memory(world, agent_id, item)
    return MemoryList(memories=[public(r) for r in rows], total=len(rows), limit=len(rows), offset=0)


@router.get("/memories", response_model=MemoryList)
def list_memories(
    agent_id: AgentId,
    world: WorldDep,
    memory: MemoryDep,
    type: MemoryType | None = None,  # noqa: A002 - the API's field name
    q: str | None = Query(None, max_length=200),
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
) -> MemoryList:
    """The agent's memories, newest first (game time), paged; `q` filters by text."""
    memory.require_agent(world, agent_id)
    rows, total = memory.page(
        world, agent_id, types=[type] if type else None, q=q, limit=limit, offset=offset
    )
    return MemoryList(memories=[public(r) for r in rows], total=total, limit=limit, offset=offset)


@router.post("/memories/retrieve", response_model=RetrieveResponse)
async def retrieve(
    agent_id: AgentId, request: RetrieveRequest, world: WorldDep, memory: MemoryDep
) -> RetrieveResponse:
    """The k best memories for a query, with the components each score is the weighted sum of (recency,
    importance, relevance, time) and the weights. `touch: false` looks without marking them recalled."""
    memory.require_agent(world, agent_id)
    weights = request.weights.model_dump() if request.weights else None
    search = Search(
        request.k,
        weights,
        request.day,
        request.time_of_day,
        list(request.types or []) or None,
        request.decay,
        request.relevance,
        touch=request.touch,
    )
    hits = await memory.retrieve(world, agent_id, request.query, search)
    return RetrieveResponse(
        results=[
            ScoredMemoryPublic(
                memory=public(h.memory),
                score=h.score,
                recency=h.recency,
                importance=h.importance,
                relevance=h.relevance,
                time=h.time,
            )
            for h in hits
        ],
        scoring="fused" if memory.settings.fusion is not None else "seed",
        weights=memory.settings.component_weights(weights),
    )


@router.post("/reflect", response_model=ReflectResponse)
async def reflect(
    agent_id: AgentId, world: WorldDep, memory: MemoryDep, request: ReflectRequest | None = None
) -> ReflectResponse:
    """Run the threshold (Generative Agents) reflection now; returns the insights it stored."""
    memory.require_agent(world, agent_id)
    request = request or ReflectRequest(day=None, time_of_day=None)
    made = await memory.reflect_now(world, agent_id, day=request.day, time_of_day=request.time_of_day)
    return ReflectResponse(reflections=[public(r) for r in made])


@router.delete("/memories/{memory_id}", status_code=204)
def delete_memory(
    agent_id: AgentId,
    memory_id: Annotated[int, Path(ge=1, le=MAX_ROW_ID)],
    world: WorldDep,
    memory: MemoryDep,
) -> Response:
    memory.require_agent(world, agent_id)
    memory.delete(world, agent_id, memory_id)
    return Response(status_code=204)
