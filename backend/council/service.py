"""The council's service: start a council (numbered per world), run it, read it back, recover after a crash.

Crash safety: a council runs in the server process. If that process dies, the row is left `pending` or
`running`; the start-up step `recover_councils` marks every such council `failed` with an error saying it was
interrupted (it does not resume: a half-held council would mix two runs' answers, and starting it again is a
cheap, explicit POST). A council cancelled at shutdown is marked failed by `run_council` itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import TYPE_CHECKING, Any

from backend.council import judge, repo
from backend.council.deliberation import CouncilRun, OnUpdate
from backend.council.models import CouncilRecord
from backend.council.schemas import CouncilCreate, JudgeResult
from backend.errors import Conflict, InvalidInput, NotFound
from backend.gametime import utcnow
from backend.llm.base import LLM
from backend.world import repo as world_repo
from backend.world.models import Agent

if TYPE_CHECKING:
    from backend.storage.db import Engine, Session
    from backend.storage.flights import Flights

log = logging.getLogger(__name__)

#: How often creating a council retries when another writer took the same number first.
NUMBER_ATTEMPTS = 20
INTERRUPTED = "interrupted: the server stopped while this council was running; start it again"
ACTIVE = repo.ACTIVE


def council_label(number: int) -> str:
    return f"No.{number:03d}"


# --- starting ----------------------------------------------------------------------------------------
def new_council_id() -> str:
    return f"council-{uuid.uuid4().hex[:12]}"


def create_council(
    engine: Engine, world_id: str, request: CouncilCreate, council_id: str | None = None
) -> CouncilRecord:
    """Validate the members and store a new `pending` council with the next number of its world (under
    `council_id`, whose lease the caller may already hold, or a new id).

    Raises:
        InvalidInput: an unknown member or moderator, or fewer than two members (details name the field).
        Conflict: no free number could be taken after many attempts (heavy concurrent creation).
    """
    with repo.session(engine) as session:
        members, moderator = resolve_members(session, world_id, request)
        # The council speaks the moderator's language unless the request says otherwise.
        language: str = request.language or moderator.language
    for _attempt in range(NUMBER_ATTEMPTS):
        row = CouncilRecord(
            id=council_id or new_council_id(),
            world_id=world_id,
            number=0,  # the next of its world, counted as it is stored
            title=request.title,
            background=request.background,
            expected_effects=request.expected_effects,
            category=request.category,
            proposer=request.proposer,
            members=[a.id for a in members],
            moderator=moderator.id,
            rounds=request.rounds,
            language=language,
        )
        if repo.insert_numbered(engine, row):
            return row
    raise Conflict(f"could not allocate a council number in world {world_id!r}; try again")


def resolve_members(session: Session, world_id: str, request: CouncilCreate) -> tuple[list[Agent], Agent]:
    """The members (given, or the world's council) and the moderator, as stored agents."""
    if request.members is None:
        council = repo.council_agents(session, world_id)
        members = sorted(council, key=lambda a: (a.council_role != "moderator", a.id))
        if len(members) < 2:
            raise InvalidInput(
                f"world {world_id!r} has no council of two or more agents (set council_role); pass members",
                details={"field": "members"},
            )
    else:
        members = []
        for agent_id in request.members:
            agent = world_repo.agent(session, world_id, agent_id)
            if agent is None:
                raise InvalidInput(
                    f"unknown member {agent_id!r} in world {world_id!r}",
                    details={"field": "members", "value": agent_id},
                )
            members.append(agent)
    if request.moderator is not None:
        moderator = world_repo.agent(session, world_id, request.moderator)
        if moderator is None:
            raise InvalidInput(
                f"unknown moderator {request.moderator!r} in world {world_id!r}",
                details={"field": "moderator", "value": request.moderator},
            )
        return members, moderator
    moderator = next((a for a in members if a.council_role == "moderator"), members[0])
    return members, moderator


# --- running -----------------------------------------------------------------------------------------
async def run_council(
    engine: Engine, llm: LLM, council_id: str, *, memory: Any = None, on_update: OnUpdate | None = None
) -> CouncilRecord:
    """Hold a stored council to the end and return its final row.

    Args:
        engine: the database.
        llm: the (wrapped) model; every call is traced with council id, member, round and stage.
        council_id: a council created by `create_council`.
        memory: the MemoryService, or None to run without memories (recall and remembering are skipped).
        on_update: called with the council's state after every saved step (see `_publish_progress`).

    Returns:
        The council row, `done` (or `failed` if something other than a model call broke).
    """
    try:
        run = await asyncio.to_thread(_load_run, engine, llm, council_id)
    except InvalidInput as exc:
        values = {"status": "failed", "error": exc.message, "updated_at": utcnow()}
        await asyncio.to_thread(repo.store_values, engine, council_id, values)
        raise
    run.memory, run.on_update = memory, on_update
    try:
        return await run.run()
    except asyncio.CancelledError:
        await _fail(run, INTERRUPTED)
        raise
    except Exception as exc:
        # A bug, not a model failure (those degrade inside the run): never leave the council `running`.
        log.exception("council %s failed", council_id)
        await _fail(run, f"internal error: {type(exc).__name__}: {exc}"[:500])
        return run.row


async def _fail(run: CouncilRun, message: str) -> None:
    run.record["stage"] = "failed"
    try:
        await asyncio.shield(run.save(status="failed", error=message))
    except Exception:  # noqa: BLE001 - the start-up recovery will catch it instead
        log.exception("could not mark council %s failed", run.row.id)


def _load_run(engine: Engine, llm: LLM, council_id: str) -> CouncilRun:
    with repo.session(engine) as session:
        row = repo.get(session, council_id)
        if row is None:
            raise NotFound(f"no council {council_id!r}")
        agents = repo.agents(session, row.world_id, [*row.members, row.moderator or ""])
    members = [_member_facts(agents[agent_id]) for agent_id in row.members if agent_id in agents]
    if len(members) < 2:
        raise InvalidInput(
            f"council {council_id} has fewer than two members left (agents were deleted)",
            details={"field": "members"},
        )
    moderator_agent = agents.get(row.moderator or "")
    moderator = _member_facts(moderator_agent) if moderator_agent else members[0]
    return CouncilRun(engine=engine, llm=llm, row=row, members=members, moderator=moderator)


def _member_facts(agent: Agent) -> dict[str, Any]:
    """What prompts and the scripted engine know of a member: its persona, role and last game time."""
    return {
        "id": agent.id,
        "name": agent.name,
        "language": agent.language,
        "traits": list(agent.traits),
        "backstory": agent.backstory,
        "speaking_style": agent.speaking_style,
        "council_role": agent.council_role,
        "location_name": agent.location_name,
        "day": agent.state_day,
        "time_of_day": agent.state_time_of_day,
    }


def event_publisher(bus: Any) -> OnUpdate:
    """An `on_update` that publishes each step as a `council.updated` event on the app's event bus."""
    from backend.events import COUNCIL_UPDATED, CouncilPayload

    def publish(update: dict[str, Any]) -> None:
        payload = CouncilPayload(
            council_id=update["id"],
            number=update["number"],
            status=update["status"],
            stage=update["stage"],
            round=update["round"],
            outcome=update["outcome"],
        )
        bus.publish(COUNCIL_UPDATED, update["world_id"], payload)

    return publish


def emotion_on_conclusion(engine: Engine, emotion: Any) -> OnUpdate:
    """An `on_update` that, when a council concludes, has each member feel the outcome (in the background)."""

    def feel(update: dict[str, Any]) -> None:
        if update["status"] != "done":
            return
        with repo.session(engine) as session:
            row = repo.get(session, update["id"])
            if row is None:
                return
            found = repo.agents(session, row.world_id, row.members)
        agents = [found.get(member) for member in row.members]
        for agent in agents:
            if agent is None:
                continue
            if agent.language == "en":
                cause = f"the council on '{row.title}' concluded: {row.outcome}"
            else:
                cause = f"会議「{row.title}」の結論: {row.outcome}"
            day, time_of_day = agent.state_day or 1, agent.state_time_of_day or agent.wake_hour
            emotion.schedule(agent, lines=[], cause=cause, day=day, time_of_day=time_of_day)

    return feel


def combine(*callbacks: OnUpdate | None) -> OnUpdate | None:
    """One `on_update` calling each given callback in turn."""
    present = [cb for cb in callbacks if cb is not None]
    if not present:
        return None

    def both(update: dict[str, Any]) -> None:
        for callback in present:
            callback(update)

    return both


class Councils:
    """Starts councils in the background and judges stored conversations: built once in create_app and kept
    at `app.state.councils`, with what a council reaches (memories, the event bus, emotions)."""

    def __init__(
        self,
        *,
        engine: Engine,
        llm: LLM,
        tasks: Any,
        memory: Any = None,
        events: Any = None,
        emotion: Any = None,
        flights: Flights | None = None,
    ) -> None:
        self.engine, self.llm, self.tasks, self.memory = engine, llm, tasks, memory
        self.flights = flights  # a running council holds `council:<id>`: recovery elsewhere leaves it alone
        self.on_update = combine(
            event_publisher(events) if events is not None else None,  # each step goes out as council.updated
            emotion_on_conclusion(engine, emotion) if emotion is not None else None,  # members feel the end
        )

    async def start(self, world_id: str, request: CouncilCreate) -> CouncilRecord:
        """Store the proposal (see `create_council`) and hold the council in the background."""
        council_id = new_council_id()
        stored: asyncio.Future[CouncilRecord] = asyncio.get_running_loop().create_future()
        self.tasks.spawn(self._hold(world_id, request, council_id, stored), name=f"council:{council_id}")
        return await stored

    async def _hold(
        self, world_id: str, request: CouncilCreate, council_id: str, stored: asyncio.Future[CouncilRecord]
    ) -> None:
        """Store the council and run it, holding its lease from before it is stored to its end, so no
        process's recovery ever sees it active without a lease (see `fail_interrupted`)."""
        async with self.flights.hold(flight_name(council_id)) if self.flights else contextlib.nullcontext():
            try:
                row = await asyncio.to_thread(create_council, self.engine, world_id, request, council_id)
            except Exception as exc:  # noqa: BLE001 - the caller's to raise (a 422 for an unknown member)
                stored.set_exception(exc)
                return
            stored.set_result(row)
            await run_council(self.engine, self.llm, row.id, memory=self.memory, on_update=self.on_update)

    async def judge_conversation(self, world_id: str, session_id: str) -> JudgeResult:
        """Score a stored conversation and keep the verdict on it (see `judge.judge_conversation`)."""
        return await judge.judge_conversation(self.engine, self.llm, world_id, session_id, memory=self.memory)


# --- reading -----------------------------------------------------------------------------------------
def get_council(session: Session, world_id: str, council_id: str) -> CouncilRecord:
    row = repo.get(session, council_id)
    if row is None or row.world_id != world_id:
        raise NotFound(f"no council {council_id!r} in world {world_id!r}")
    return row


def list_councils(
    session: Session, world_id: str, *, status: str | None = None, limit: int = 50, offset: int = 0
) -> list[CouncilRecord]:
    """A world's councils, newest number first."""
    return repo.listed(session, world_id, status=status, limit=limit, offset=offset)


# --- crash recovery ----------------------------------------------------------------------------------
def flight_name(council_id: str) -> str:
    """The lease a running council holds (storage/flights.py)."""
    return f"council:{council_id}"


def fail_interrupted(engine: Engine, flights: Flights | None = None) -> list[str]:
    """Mark the councils left pending or running by a process that is gone as failed (INTERRUPTED).

    A council holds its lease from before it is stored to its end (`Councils._hold`), so with `flights`
    (several processes share the database) one whose lease no process holds is gone. Without them (one
    process, at its start-up), every active council is. Returns the ids failed.
    """
    ids = repo.active_ids(engine)
    if flights is not None:
        held = flights.live([flight_name(council_id) for council_id in ids])
        ids = [council_id for council_id in ids if flight_name(council_id) not in held]
    for council_id in ids:
        row = repo.read(engine, council_id)
        record = dict(row.record or {}) if row else {}
        record["stage"] = "failed"
        repo.store_values(
            engine,
            council_id,
            {"status": "failed", "error": INTERRUPTED, "record": record, "updated_at": utcnow()},
        )
    return ids


async def recover_councils(app: Any) -> None:
    """Start-up step (and, in a process running jobs, a periodic one): no council stays `running` after the
    process holding it died. Councils whose lease another live process holds are left alone.

    Skipped when `app.state.recover_councils` is False: the `machi council` command runs in-process next to
    a server that may be using the same database, and must not fail that server's councils.
    """
    if not getattr(app.state, "recover_councils", True):
        return
    ids = await asyncio.to_thread(fail_interrupted, app.state.engine, getattr(app.state, "flights", None))
    if ids:
        log.warning("marked %d interrupted council(s) failed: %s", len(ids), ", ".join(ids))
