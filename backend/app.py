"""The one place that wires Machi together: settings, database, model, embedder, routers."""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from backend import __version__
from backend.action.sizing import actions_for_model
from backend.api.errors import install_error_handlers
from backend.api.protocol import ProtocolVersionMiddleware
from backend.config import Settings, load_settings
from backend.conversation import jobs as conversation_jobs
from backend.conversation.aftermath import Aftermath
from backend.conversation.service import ConversationService
from backend.conversation.visitor import VisitorTurns
from backend.council.service import Councils, recover_councils
from backend.emotion.service import EmotionService, EmotionSettings
from backend.events import LLM_CALL, EventBus, LLMCallPayload
from backend.events.relay import relaying
from backend.intention.service import IntentionService, IntentionSettings, revision_for_model
from backend.interview.service import InterviewService
from backend.jobs.models import Job
from backend.jobs.runner import JobRunner
from backend.llm.base import LLM, Embedder, find_layer, model_parameters
from backend.llm.health import ModelHealth, find_health, watch
from backend.llm.models import LLMCall
from backend.llm.registry import build_embedder, build_provider, check_dependencies, wrap
from backend.llm.scheduler import find_scheduler
from backend.memory import embedding as memory_embedding
from backend.memory import jobs as memory_jobs
from backend.memory.afterthought import Afterthoughts
from backend.memory.cache import IndexCache
from backend.memory.embedding import Embeddings
from backend.memory.jobs import RatingJob
from backend.memory.notify import MemoryEvents
from backend.memory.person import PersonBook
from backend.memory.reflection import Rater, Reflector
from backend.memory.repo import MemoryRepo
from backend.memory.retriever import Retriever
from backend.memory.service import MemoryParts, MemoryService
from backend.memory.settings import MemorySettings
from backend.memory.writer import MemoryWriter
from backend.moderation import build_moderator
from backend.planning.planner import Planner
from backend.planning.service import current_item_of_stored_plan
from backend.security import install as install_security
from backend.storage import retention
from backend.storage.db import check_driver, create_db_engine, init_db
from backend.storage.flights import Flights
from backend.storage.lock import hold_database
from backend.tasks import TaskRunner
from backend.world.cache import AgentCache
from backend.world.facts import WorldFactsCache

log = logging.getLogger("machi")

#: Routers, one module per concept under backend/api/ (each defines `router`). A request is matched against
#: them in this order, so what Unity calls during play comes first (turns, state reports, the plan item).
ROUTERS = (
    "backend.api.conversation",
    "backend.api.agents",
    "backend.api.players",
    "backend.api.intention",
    "backend.api.plan",
    "backend.api.actions",
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
    "backend.transfer.demo:ensure_demo_world",
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
    # Servers and workers share the database: this process is refused (before it migrates or runs any job)
    # only while a command that needs it alone runs (a world import or load, `machi db vacuum`).
    with hold_database(settings.database_url, role=f"{settings.process_role} process", shared=True):
        app.state.events = EventBus()
        # Other processes on the database hear this one's events and it theirs (events/relay.py); stopped
        # last, so what the shutdown itself publishes still goes out.
        async with relaying(app.state.events, settings) as app.state.event_relay, _running(app, settings):
            yield


def _build_minds(state: Any, settings: Settings, engine: Any) -> None:
    """The services above memory (on `state`): intentions, emotion, the planner, the councils, conversations
    and interviews."""
    state.intentions = IntentionService(
        engine=engine, llm=state.llm, memory=state.memory, settings=IntentionSettings.of(settings)
    )
    state.emotion = EmotionService(
        engine=engine,
        llm=state.llm,
        settings=EmotionSettings.of(settings),
        tasks=state.tasks,
        events=state.events,
    )
    state.planner = Planner(
        engine=engine,
        llm=state.llm,
        memory=state.memory,
        tasks=state.tasks,
        deadline_s=settings.plan_deadline_s,
        events=state.events,
        intentions=state.intentions,
        emotion=state.emotion,
        flights=state.flights,
        places_max=settings.prompt_places_max,
    )
    state.councils = Councils(
        engine=engine,
        llm=state.llm,
        tasks=state.tasks,
        memory=state.memory,
        events=state.events,
        emotion=state.emotion,
        flights=state.flights,
    )
    state.conversation = _conversation(state, settings)
    state.moderator = build_moderator(settings)  # the word list is read (and checked) here, once
    state.visitors = VisitorTurns(service=state.conversation, settings=settings, moderator=state.moderator)
    state.conversation.guard = state.visitors.guard_reply  # every model line a visitor hears is checked
    state.conversation.stream_check = state.visitors.may_show
    state.interview = InterviewService(
        engine=engine, llm=state.llm, memory=state.memory, settings=settings, world_facts=state.world_facts
    )


@asynccontextmanager
async def _running(app: FastAPI, settings: Settings) -> AsyncIterator[None]:
    engine = create_db_engine(
        settings.database_url,
        pool_size=settings.database_pool_size,
        max_overflow=settings.database_max_overflow,
    )
    migrated = init_db(engine)
    if migrated:
        log.warning("database schema upgraded (%d change(s)), no data dropped", len(migrated))
    provider = app.state.injected_llm or build_provider(settings)
    # Actions and the morning revision sized to the model (llm/sizing.py): what reads the settings from here
    # on sees the outcome.
    size, model_name = model_parameters(provider), str(getattr(provider, "model", "") or provider.name)
    settings = app.state.settings = revision_for_model(
        actions_for_model(settings, size, model_name), size, model_name
    )
    app.state.engine = engine
    app.state.provider = provider
    app.state.llm = wrap(provider, settings, engine)
    app.state.embedder = app.state.injected_embedder or build_embedder(settings)
    app.state.tasks = TaskRunner()
    app.state.event_sockets = set()  # the open /v1/events WebSockets (at most MAX_EVENT_SOCKETS)
    _publish_llm_calls(app.state.llm, app.state.events)
    app.state.flights = Flights(engine)  # single-flight work across processes (storage/flights.py)
    runs_jobs = settings.process_role != "api"
    app.state.jobs = JobRunner(engine=engine, settings=settings, tasks=app.state.tasks, local=runs_jobs)
    app.state.agents = AgentCache()  # agent rows read by every turn and memory write (see world/cache.py)
    app.state.world_facts = WorldFactsCache()  # places, names, gestures read by every turn (world/facts.py)
    app.state.memory = build_memory(
        MemoryRepo(engine), app.state.embedder, app.state.llm, settings, app.state.tasks,
        events=app.state.events, jobs=app.state.jobs, agents=app.state.agents,
    )  # fmt: skip
    _build_minds(app.state, settings, engine)
    app.state.model_health = find_health(app.state.llm) or ModelHealth(settings.llm_health_window_s)
    for path in STARTUP_STEPS:
        module_name, _, attr = path.partition(":")
        step: Callable[[FastAPI], Awaitable[Any]] = getattr(importlib.import_module(module_name), attr)
        await step(app)
    _register_job_handlers(app.state)
    # Memories the current embedder has not embedded (a changed EMBEDDING_PROVIDER, a crash mid-write) get
    # the worker's embed job; meanwhile retrieval finds them by their words.
    if stale := await asyncio.to_thread(app.state.memory.embeddings.queue_stale):
        log.info("memories to embed with %s in world(s) %s", app.state.embedder.identity, ", ".join(stale))
    if runs_jobs:
        await app.state.jobs.start()  # jobs a crash left pending run again now
    watchers = _watchers(app, settings, provider)
    try:
        yield
    finally:
        await _stop(app, watchers)
        engine.dispose()


async def _stop(app: FastAPI, watchers: list[asyncio.Task[None]]) -> None:
    """Shut down in order: the watchers, the job runner, the model's queue, background work, clients."""
    for watcher in watchers:
        watcher.cancel()
    await asyncio.gather(*watchers, return_exceptions=True)
    await app.state.jobs.stop()
    await app.state.flights.close()
    if (scheduler := find_scheduler(app.state.llm)) is not None:
        scheduler.shutdown()  # model work is cancelled, not waited for: its jobs run after the restart
    try:
        await app.state.tasks.drain(timeout=10)
    except TimeoutError as exc:  # unfinished jobs stay in the job table and run after the restart
        log.warning("shutting down with background work left: %s", exc)
    await app.state.tasks.cancel_all()
    await app.state.llm.aclose()
    await app.state.embedder.aclose()
    await app.state.moderator.aclose()


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
        world_facts=state.world_facts,
    )


def _register_job_handlers(state: Any) -> None:
    """Each concept's job kinds get their handler on the one runner (the jobs layer knows none of them)."""
    runner, memory, after = state.jobs, state.memory, state.conversation.after
    runner.register(memory_jobs.RATE, memory.run_rating, merging=True)
    runner.register(memory_embedding.EMBED, memory.embeddings.run, merging=True)
    runner.register(conversation_jobs.OBSERVE, after.observe_job, merging=True)
    runner.register(conversation_jobs.REFLECT, after.reflect_job)


def _watchers(app: FastAPI, settings: Settings, provider: LLM) -> list[asyncio.Task[None]]:
    """The process's periodic work, cancelled at shutdown: the model's start-up check and a cheap one whenever
    it has been idle (an unreachable model is never fatal); where jobs run (not in an API process), pruning
    the trace and finished jobs, and failing the councils of processes that died."""
    state = app.state
    watchers = [asyncio.create_task(watch(state.model_health, provider, settings.llm_health_probe_idle_s))]
    if settings.process_role != "api":
        rules = retention_rules(settings)
        prune = retention.keep_pruning(state.engine, rules, settings.prune_interval_s, state.tasks)
        watchers += [asyncio.create_task(prune), asyncio.create_task(_keep_recovering_councils(app))]
    return watchers


async def _keep_recovering_councils(app: FastAPI) -> None:
    """Every lease, fail the councils whose process died (their lease expired); see council/service.py."""
    while True:
        await asyncio.sleep(app.state.flights.lease_s)
        try:
            await recover_councils(app)
        except Exception:  # noqa: BLE001 - a database hiccup: the next round tries again
            log.exception("council recovery failed")


def retention_rules(settings: Settings) -> list[retention.Rule]:
    """What the server (and `machi db vacuum`) prunes: the model-call trace and finished jobs, each by age
    and count (LLM_CALL_RETENTION_*, JOB_RETENTION_*). Storage prunes the tables it is given."""
    return [
        retention.Rule(
            "llm_calls",
            LLMCall.__table__,  # type: ignore[attr-defined]
            "created_at",
            settings.llm_call_retention_days,
            settings.llm_call_retention_rows,
        ),
        retention.Rule(
            "jobs",
            Job.__table__,  # type: ignore[attr-defined]
            "updated_at",  # when it finished
            settings.job_retention_days,
            settings.job_retention_rows,
            only=("status", "done"),
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


def build_memory(
    repo: MemoryRepo,
    embedder: Embedder,
    llm: LLM,
    settings: Settings,
    tasks: TaskRunner,
    *,
    events: EventBus | None = None,
    jobs: JobRunner | None = None,
    agents: AgentCache | None = None,
) -> MemoryService:
    """The memory concept's objects, each given only what it uses (see backend/memory/README.md)."""
    config = MemorySettings.from_settings(settings)
    agents = agents if agents is not None else AgentCache()
    agent_of = functools.partial(agents.read_one, repo.engine)
    cache = IndexCache(repo, embedder)
    notify = MemoryEvents(events)
    writer = MemoryWriter(repo, cache, embedder, notify, config)
    retriever = Retriever(repo, cache, embedder, config)
    rater = Rater(llm, repo, cache, notify)
    reflector = Reflector(llm, repo, writer, retriever, agent_of, config)
    people = PersonBook(repo, llm, agent_of, config)
    afterthoughts = Afterthoughts(llm, people, reflector, agent_of, config)
    rating = RatingJob(repo, agent_of, rater, reflector)
    embeddings = Embeddings(repo, cache, embedder)
    parts = MemoryParts(
        repo, cache, writer, retriever, rater, reflector, people, afterthoughts, rating, embeddings
    )
    return MemoryService(parts, settings=config, agents=agents, tasks=tasks, jobs=jobs)
