"""The council and the judge: start a council (202, runs in the background), read it, its markdown record."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from fastapi.responses import PlainTextResponse

from backend.api.deps import MAX_OFFSET, CouncilsDep, LLMDep, SessionDep, WorldDep
from backend.council.judge import judge_content
from backend.council.models import CouncilRecord
from backend.council.record import render_record
from backend.council.schemas import (
    CouncilAccepted,
    CouncilCreate,
    CouncilList,
    CouncilPublic,
    CouncilSummary,
    JudgeRequest,
    JudgeResult,
)
from backend.council.service import council_label, get_council, list_councils
from backend.ids import StoredSessionId

router = APIRouter(prefix="/v1", tags=["council"])
#: The server makes council ids (`council-<hex>`): a look-up, bounded like the column.
CouncilId = Annotated[str, Path(min_length=1, max_length=64)]


def _summary(row: CouncilRecord) -> CouncilSummary:
    return CouncilSummary.model_validate({**row.model_dump(), "label": council_label(row.number)})


@router.post("/council", status_code=202, response_model=CouncilAccepted)
async def start_council(body: CouncilCreate, world: WorldDep, councils: CouncilsDep) -> CouncilAccepted:
    """Store the proposal and hold the council in the background; poll GET /v1/council/{id}."""
    row = await councils.start(world, body)
    return CouncilAccepted(id=row.id, number=row.number, label=council_label(row.number), status=row.status)


@router.get("/council", response_model=CouncilList)
def list_all(
    session: SessionDep,
    world: WorldDep,
    status: str | None = Query(None, pattern="^(pending|running|done|failed)$"),
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
) -> CouncilList:
    rows = list_councils(session, world, status=status, limit=limit, offset=offset)
    return CouncilList(councils=[_summary(row) for row in rows])


@router.get("/council/{council_id}", response_model=CouncilPublic)
def get_one(council_id: CouncilId, session: SessionDep, world: WorldDep) -> CouncilPublic:
    row = get_council(session, world, council_id)
    return CouncilPublic.model_validate({**row.model_dump(), "label": council_label(row.number)})


@router.get("/council/{council_id}/record.md", response_class=PlainTextResponse)
def get_record(council_id: CouncilId, session: SessionDep, world: WorldDep) -> PlainTextResponse:
    row = get_council(session, world, council_id)
    return PlainTextResponse(render_record(row), media_type="text/markdown; charset=utf-8")


@router.post("/judge", response_model=JudgeResult)
async def judge(body: JudgeRequest, world: WorldDep, llm: LLMDep) -> JudgeResult:
    """Score content on each criterion (1-10). A judge model that fails twice answers 503 llm_error."""
    return await judge_content(
        llm,
        body.content,
        criteria=body.criteria,
        context=body.context,
        language=body.language,
        world_id=world,
    )


@router.post("/conversations/{session_id}/judge", response_model=JudgeResult)
async def judge_stored_conversation(
    session_id: Annotated[StoredSessionId, Path()], world: WorldDep, councils: CouncilsDep
) -> JudgeResult:
    """Score a stored conversation (in character, coherence, memory use); the verdict is kept on it."""
    return await councils.judge_conversation(world, session_id)
