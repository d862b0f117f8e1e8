"""FastAPI dependencies: what routes get from the app (settings, database, models, world)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Header, Query, Request
from sqlalchemy.engine import Engine
from sqlmodel import Session

from backend.config import Settings
from backend.errors import InvalidInput
from backend.ids import id_problem
from backend.llm.base import LLM, Embedder
from backend.tasks import TaskRunner
from backend.world.models import DEFAULT_WORLD

if TYPE_CHECKING:
    from backend.conversation.service import ConversationService
    from backend.conversation.visitor import VisitorTurns
    from backend.council.service import Councils
    from backend.emotion.service import EmotionService
    from backend.events import EventBus
    from backend.intention.service import IntentionService
    from backend.interview.service import InterviewService
    from backend.jobs.runner import JobRunner
    from backend.memory.service import MemoryService
    from backend.planning.planner import Planner
    from backend.storage.flights import Flights
    from backend.world.cache import AgentCache

#: Databases keep integers in 64 bits: a larger id or offset must be a 404/422, not an overflow (500).
MAX_ROW_ID = 2**63 - 1
MAX_OFFSET = 100_000_000


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_engine(request: Request) -> Engine:
    return request.app.state.engine


def get_session(request: Request) -> Iterator[Session]:
    with Session(request.app.state.engine, expire_on_commit=False) as session:
        yield session


def get_llm(request: Request) -> LLM:
    return request.app.state.llm


def get_embedder(request: Request) -> Embedder:
    return request.app.state.embedder


def get_tasks(request: Request) -> TaskRunner:
    return request.app.state.tasks


def get_world(
    x_machi_world: Annotated[str | None, Header(max_length=64)] = None,
    world: Annotated[
        str | None,
        Query(max_length=64, description="the world, for clients that cannot set X-Machi-World (browsers)"),
    ] = None,
) -> str:
    """The world a request works in: the `X-Machi-World` header, else `?world=`, else `default`."""
    chosen, source = (x_machi_world, "header") if x_machi_world else (world, "query")
    if not chosen:
        return DEFAULT_WORLD
    problem = id_problem(chosen)
    if problem is not None:
        field = {"header": "X-Machi-World"} if source == "header" else {"field": "world"}
        raise InvalidInput(
            f"{'X-Machi-World' if source == 'header' else 'world'}: {problem}",
            details={**field, "value": chosen[:80]},
        )
    return chosen


SettingsDep = Annotated[Settings, Depends(get_settings)]
EngineDep = Annotated[Engine, Depends(get_engine)]
SessionDep = Annotated[Session, Depends(get_session)]
LLMDep = Annotated[LLM, Depends(get_llm)]
EmbedderDep = Annotated[Embedder, Depends(get_embedder)]
TasksDep = Annotated[TaskRunner, Depends(get_tasks)]
WorldDep = Annotated[str, Depends(get_world)]


def get_memory(request: Request) -> MemoryService:
    return request.app.state.memory


MemoryDep = Annotated["MemoryService", Depends(get_memory)]


def get_events(request: Request) -> EventBus:
    return request.app.state.events


EventsDep = Annotated["EventBus", Depends(get_events)]


def get_intentions(request: Request) -> IntentionService:
    return request.app.state.intentions


IntentionsDep = Annotated["IntentionService", Depends(get_intentions)]


def get_planner(request: Request) -> Planner:
    return request.app.state.planner


PlannerDep = Annotated["Planner", Depends(get_planner)]


def get_emotion(request: Request) -> EmotionService:
    return request.app.state.emotion


EmotionDep = Annotated["EmotionService", Depends(get_emotion)]


def get_councils(request: Request) -> Councils:
    return request.app.state.councils


CouncilsDep = Annotated["Councils", Depends(get_councils)]


def get_conversation(request: Request) -> ConversationService:
    return request.app.state.conversation


ConversationDep = Annotated["ConversationService", Depends(get_conversation)]


def get_visitors(request: Request) -> VisitorTurns:
    return request.app.state.visitors


VisitorsDep = Annotated["VisitorTurns", Depends(get_visitors)]


def get_interview(request: Request) -> InterviewService:
    return request.app.state.interview


InterviewDep = Annotated["InterviewService", Depends(get_interview)]


def get_jobs(request: Request) -> JobRunner:
    return request.app.state.jobs


JobsDep = Annotated["JobRunner", Depends(get_jobs)]


def get_agents(request: Request) -> AgentCache:
    return request.app.state.agents


AgentsDep = Annotated["AgentCache", Depends(get_agents)]


def get_flights(request: Request) -> Flights:
    return request.app.state.flights


FlightsDep = Annotated["Flights", Depends(get_flights)]
