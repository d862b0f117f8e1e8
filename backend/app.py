"""The one place that wires Machi together: settings, database, model, embedder, routers."""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from backend import __version__
from backend.api.errors import install_error_handlers
from backend.api.protocol import ProtocolVersionMiddleware
from backend.config import Settings, load_settings
from backend.conversation import jobs as conversation_jobs
from backend.conversation.aftermath import Aftermath
from backend.conversation.service import ConversationService
from backend.emotion.service import EmotionService
from backend.events import LLM_CALL, EventBus, LLMCallPayload
from backend.intention.service import IntentionService
from backend.interview.service import InterviewService
from backend.jobs.models import Job
from backend.jobs.runner import JobRunner
from backend.llm.base import LLM, Embedder, find_layer
from backend.llm.health import ModelHealth, find_health, watch
from backend.llm.registry import build_embedder, build_provider, check_dependencies, wrap
from backend.llm.scheduler import find_scheduler
from backend.memory import jobs as memory_jobs
from backend.memory.service import MemoryService
from backend.planning.planner import Planner
from backend.planning.service import current_item_of_stored_plan
from backend.security import install as install_security
from backend.storage import retention
from backend.storage.db import check_driver, create_db_engine, init_db
from backend.storage.lock import hold_database
from backend.tasks import TaskRunner
from backend.world.cache import AgentCache

log = logging.getLogger("machi")

#: Routers, one module per concept under backend/api/ (each defines `router`). A request is matched against
#: them in this order, so what Unity calls during play comes first (turns, state reports, the plan item).
ROUTERS = (
    "backend.api.conversation",
    "backend.api.agents",
    "backend.api.intention",
    "backend.api.plan",
    "backend.api.health",
    "backend.api.llm_calls",
    "backend.api.council",
    "backend.api.world",
    "backend.api.memory",
    "backend.api.events",
    "backend.api.emotion",
    "backend.api.people",
    "backend.api.interview",
    "backend.api.dashboard",
    "backend.api.docs",
    "backend.api.login",
    "backend.api.jobs",
    "backend.api.metrics",
)

#: Start-up steps run after the database is ready, in order: `async def step(app) -> None`.
STARTUP_STEPS: tuple[str, ...] = (
    "backend.world.demo:ensure_demo_world",
    "backend.council.service:recover_councils",
)


def create_app(
    settings: Settings | None = None,
    llm: LLM | None = None,
    embedder: Embedder | None = None,
) -> FastAPI:
    """Build the app. `llm`/`embedder` replace the configured providers (tests pass a scripted one).

    Raises:
        MissingDependency: the configured database or provider needs a package that is not installed.
    """
    settings = settings or load_settings()
    check_driver(settings.database_url)
    check_dependencies(settings, llm=llm is None, embedder=embedder is None)
    app = FastAPI(
        title="Machi",
        version=__version__,
        summary="Minds for the characters of a Unity world.",
        docs_url=None,  # /docs and /redoc come from backend/api/docs.py, with their scripts served locally
        redoc_url=None,
        lifespan=_lifespan,
    )
    app.state.settings = settings
    app.state.injected_llm = llm
    app.state.injected_embedder = embedder
    install_error_handlers(app)
    app.add_middleware(ProtocolVersionMiddleware)
    install_security(app, settings)  # outermost: keys checked, then the body limit
    for module in ROUTERS:
        app.include_router(importlib.import_module(module).router)
    return app


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    # One server per database: a second one is refused here, before it migrates or runs any job.
    with hold_database(settings.database_url, role="server"):
        async with _running(app, settings):
            yield


@asynccontextmanager
async def _running(app: FastAPI, settings: Settings) -> AsyncIterator[None]:
    engine = create_db_engine(settings.database_url)
    migrated = init_db(engine)
    if migrated:
        log.warning("database schema upgraded (%d change(s)), no data dropped", len(migrated))
    provider = app.state.injected_llm or build_provider(settings)
    app.state.engine = engine
    app.state.provider = provider
    app.state.llm = wrap(provider, settings, engine)
    app.state.embedder = app.state.injected_embedder or build_embedder(settings)
    app.state.tasks = TaskRunner()
    app.state.events = EventBus()
    app.state.event_sockets = set()  # the open /v1/events WebSockets (at most MAX_EVENT_SOCKETS)
    _publish_llm_calls(app.state.llm, app.state.events)
    app.state.jobs = JobRunner(engine=engine, settings=settings, tasks=app.state.tasks)
    app.state.agents = AgentCache()  # agent rows read by every turn and memory write (see world/cache.py)
    app.state.memory = MemoryService(
        engine=engine,
        embedder=app.state.embedder,
        llm=app.state.llm,
        settings=settings,
        tasks=app.state.tasks,
        events=app.state.events,
        jobs=app.state.jobs,
        agents=app.state.agents,
    )
    app.state.intentions = IntentionService(
        engine=engine, llm=app.state.llm, memory=app.state.memory, settings=settings
    )
    app.state.emotion = EmotionService(
        engine=engine, llm=app.state.llm, settings=settings, tasks=app.state.tasks, events=app.state.events
    )
    app.state.planner = Planner(
        engine=engine,
        llm=app.state.llm,
        memory=app.state.memory,
        tasks=app.state.tasks,
        deadline_s=settings.plan_deadline_s,
        events=app.state.events,
        intentions=app.state.intentions,
        emotion=app.state.emotion,
    )
    app.state.conversation = _conversation(app.state, settings)
    app.state.interview = InterviewService(
        engine=engine, llm=app.state.llm, memory=app.state.memory, settings=settings
    )
    app.state.model_health = find_health(app.state.llm) or ModelHealth(settings.llm_health_window_s)
    for path in STARTUP_STEPS:
        module_name, _, attr = path.partition(":")
        step: Callable[[FastAPI], Awaitable[Any]] = getattr(importlib.import_module(module_name), attr)
        await step(app)
    _register_job_handlers(app.state)
    await app.state.jobs.start()  # jobs a crash left pending run again now
    watchers = _watchers(app, settings, provider)
    try:
        yield
    finally:
        await _stop(app, watchers)
        engine.dispose()


async def _stop(app: FastAPI, watchers: list[asyncio.Task[None]]) -> None:
    """Shutdown: the watchers and the job runner stop, background work gets a while to finish, models close."""
    for watcher in watchers:
        watcher.cancel()
    await asyncio.gather(*watchers, return_exceptions=True)
    await app.state.jobs.stop()
    if (scheduler := find_scheduler(app.state.llm)) is not None:
        scheduler.shutdown()  # model work is cancelled, not waited for: its jobs run after the restart
    try:
        await app.state.tasks.drain(timeout=10)
    except TimeoutError as exc:  # unfinished jobs stay in the job table and run after the restart
        log.warning("shutting down with background work left: %s", exc)
    await app.state.tasks.cancel_all()
    await app.state.llm.aclose()
    await app.state.embedder.aclose()


def _conversation(state: Any, settings: Settings) -> ConversationService:
    """The one ConversationService, with the one Aftermath whose handlers the job runner also runs."""
    after = Aftermath(
        engine=state.engine,
        memory=state.memory,
        tasks=state.tasks,
        emotion=state.emotion,
        events=state.events,
    )
    return ConversationService(
        engine=state.engine,
        llm=state.llm,
        memory=state.memory,
        tasks=state.tasks,
        settings=settings,
        after=after,
        jobs=state.jobs,
        plan_item=current_item_of_stored_plan,
        emotion=state.emotion,
    )


def _register_job_handlers(state: Any) -> None:
    """Each concept's job kinds get their handler on the one runner (the jobs layer knows none of them)."""
    runner, memory, after = state.jobs, state.memory, state.conversation.after

    async def rate(job: Job) -> None:
        await memory_jobs.run_rating(memory, job)

    runner.register(memory_jobs.RATE, rate, merging=True)
    runner.register(conversation_jobs.OBSERVE, after.observe_job, merging=True)
    runner.register(conversation_jobs.REFLECT, after.reflect_job)


def _watchers(app: FastAPI, settings: Settings, provider: LLM) -> list[asyncio.Task[None]]:
    """The server's periodic work, cancelled at shutdown: the model's start-up check and a cheap one whenever
    it has been idle (an unreachable model is never fatal), and pruning the trace and finished jobs."""
    state = app.state
    rules = retention.rules(settings)
    return [
        asyncio.create_task(watch(state.model_health, provider, settings.llm_health_probe_idle_s)),
        asyncio.create_task(
            retention.keep_pruning(state.engine, rules, settings.prune_interval_s, state.tasks)
        ),
    ]


def _publish_llm_calls(llm: LLM, bus: EventBus) -> None:
    """Every traced model call becomes an `llm.call` event (the dashboard's live LLM status)."""
    from backend.llm.trace import DatabaseTraceSink, TracingLLM

    current = find_layer(llm, TracingLLM)
    if current is None or not isinstance(current.sink, DatabaseTraceSink):
        return

    def publish(call: Any) -> None:
        payload = LLMCallPayload(
            call_id=call.id,
            purpose=call.purpose,
            agent_id=call.agent_id,
            session_id=call.session_id,
            council_id=call.council_id,
            model=call.model,
            ok=call.ok,
            error=call.error,
            latency_ms=call.latency_ms,
        )
        bus.publish(LLM_CALL, call.world_id, payload)

    current.sink.listeners.append(publish)
