"""The web dashboard: server-rendered pages (webui/templates) and their static files (webui/static).

Pages are thin shells: each renders its title, links and a boot record (world, ids, which JSON endpoints this
server has), and the page's JavaScript fetches the same JSON API Unity uses and keeps it live. Asking the
router which endpoints exist lets the dashboard show data from concepts as they land (emotion, people,
council, the event WebSocket) without calling routes that are not there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.routing import Match
from starlette.types import Scope

from backend import __version__
from backend.api.deps import SessionDep
from backend.conversation.models import Conversation
from backend.ids import id_problem
from backend.intention import repo as intention_repo
from backend.intention import service as intention
from backend.planning.service import plan_public, stored_plan
from backend.security.keys import VIEWER, KeyRing, request_role
from backend.world import repo as world_repo
from backend.world.models import DEFAULT_WORLD, Agent, PointOfInterest
from backend.world.repo import world_census

WEBUI_DIR = Path(__file__).resolve().parents[2] / "webui"

templates = Jinja2Templates(directory=WEBUI_DIR / "templates")
router = APIRouter(include_in_schema=False)
router.mount("/static", StaticFiles(directory=WEBUI_DIR / "static"), name="static")

#: Endpoints the pages may use, probed with sample ids: name -> (scope type, method, path).
CAPABILITY_PROBES: dict[str, tuple[str, str, str]] = {
    "agents": ("http", "GET", "/v1/agents"),
    "agent": ("http", "GET", "/v1/agents/_probe"),
    "pois": ("http", "GET", "/v1/pois"),
    "states": ("http", "GET", "/v1/agents/_probe/states"),
    "plan": ("http", "GET", "/v1/agents/_probe/plan"),
    "memories": ("http", "GET", "/v1/agents/_probe/memories"),
    "retrieve": ("http", "POST", "/v1/agents/_probe/memories/retrieve"),
    "emotion": ("http", "GET", "/v1/agents/_probe/emotion"),
    "emotion_history": ("http", "GET", "/v1/agents/_probe/emotion/history"),
    "people": ("http", "GET", "/v1/agents/_probe/people"),
    "conversations": ("http", "GET", "/v1/conversations"),
    "players": ("http", "GET", "/v1/players"),
    "conversation": ("http", "GET", "/v1/conversations/_probe"),
    "judge": ("http", "POST", "/v1/conversations/_probe/judge"),
    "councils": ("http", "GET", "/v1/council"),
    "council": ("http", "GET", "/v1/council/_probe"),
    "council_md": ("http", "GET", "/v1/council/_probe/record.md"),
    "llm_calls": ("http", "GET", "/v1/llm-calls"),
    "health": ("http", "GET", "/health"),
    "events": ("websocket", "GET", "/v1/events"),
}


#: Readable labels for the agent states Unity reports (backend.world.schemas.AgentState), Japanese first
#: like the rest of the page's content; the raw id stays in each label's title.
STATE_LABELS: dict[str, str] = {
    "moving_to_poi": "移動中",
    "wandering_in_poi": "散策中",
    "talking": "会話中",
    "cooldown": "ひと休み",
    "waiting_for_replan": "予定待ち",
}


def _route_exists(request: Request, kind: str, method: str, path: str) -> bool:
    """True when the app has a route answering `method path` (or a WebSocket at `path`)."""
    scope: Scope = {
        "type": kind,
        "path": path,
        "method": method,
        "root_path": "",
        "path_params": {},
        "headers": [],
        "query_string": b"",
        "app": request.app,
    }
    for route in request.app.router.routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return True
    return False


def capabilities(request: Request) -> dict[str, bool]:
    """Which JSON endpoints (by the names the page scripts use) this server has right now."""
    return {name: _route_exists(request, *probe) for name, probe in CAPABILITY_PROBES.items()}


def _world(world: str | None) -> str | None:
    """The world named in `?world=`, `default` when absent, None when the name is invalid."""
    if not world:
        return DEFAULT_WORLD
    return world if id_problem(world) is None else None


def _world_query(world: str) -> str:
    """The `?world=` suffix that keeps links between pages in the same world."""
    return "" if world == DEFAULT_WORLD else f"?world={world}"


def _page(request: Request, template: str, world: str | None, **context: Any) -> HTMLResponse:
    """Render a page with the shared boot record; an invalid world name gets a 422 page."""
    resolved = _world(world)
    if resolved is None:
        return _problem(
            request, 422, "Invalid world", "World names are 1-64 letters, digits, '_', '-' or '.'."
        )
    boot = {
        "world": resolved,
        "caps": _caps_for_role(request),
        "page": template.removesuffix(".html"),
        "state_labels": STATE_LABELS,
    }
    boot.update(context.pop("boot", {}))
    signed_in = KeyRing.from_settings(request.app.state.settings).enabled
    return templates.TemplateResponse(
        request,
        template,
        {
            "world": resolved,
            "wq": _world_query(resolved),
            "boot": boot,
            "version": __version__,
            "signed_in": signed_in,
            "state_labels": STATE_LABELS,
            **context,
        },
    )


#: Page controls that write (the retrieval probe touches last_accessed_at; the judge stores its verdict).
WRITE_CAPS = ("retrieve", "judge")


def _caps_for_role(request: Request) -> dict[str, bool]:
    """The endpoints this page may call: a viewer-key browser gets no write controls (they would 403)."""
    caps = capabilities(request)
    if request_role(request) == VIEWER:
        caps.update(dict.fromkeys(WRITE_CAPS, False))
    return caps


#: Where a problem page leads back to, by default.
TOWN = ("/", "Back to the town")


def _problem(
    request: Request,
    status: int,
    title: str,
    message: str,
    *,
    back: tuple[str, str] = TOWN,
    links: list[tuple[str, str]] | None = None,
) -> HTMLResponse:
    """A problem page: what is wrong, the way `back`, and `links` to pick instead (e.g. the known worlds)."""
    return templates.TemplateResponse(
        request,
        "problem.html",
        {
            "world": DEFAULT_WORLD,
            "wq": "",
            "boot": {"world": DEFAULT_WORLD, "caps": {}, "page": "problem"},
            "title": title,
            "message": message,
            "back": back,
            "links": links or [],
            "version": __version__,
        },
        status_code=status,
    )


def _missing(
    request: Request, session: SessionDep, world: str, title: str, message: str, back: tuple[str, str]
) -> HTMLResponse:
    """The 404 page of something not found in `world`; when the world itself has nothing in it (a mistyped
    ?world=), it says the world is unknown and links the worlds there are."""
    census = world_census(session)
    if not census:
        message += " No world on this server has agents or places yet."
    if world in census or not census:
        return _problem(request, 404, title, message, back=back)
    known = [(f"/{_world_query(name)}", name) for name in census]
    unknown = f"World “{world}” is unknown: it has no agents or places. The worlds here:"
    return _problem(request, 404, "No such world", unknown, links=known)


WorldQuery = Query(None, max_length=64, description="the world to show (default `default`)")


@router.get("/", response_class=HTMLResponse)
def town_page(request: Request, session: SessionDep, world: str | None = WorldQuery) -> HTMLResponse:
    """The town: map, live conversation feed, model status.

    A world with no agents and no places (a typo in `?world=`, or a new server) gets a notice naming the
    worlds that do exist. Only then are other worlds named: a world in use never lists the others.
    """
    resolved = _world(world)
    census = world_census(session) if resolved else {}
    others = None if resolved in census else {name: n for name, n in census.items() if name != resolved}
    return _page(request, "town.html", world, other_worlds=others)


@router.get("/agents/{agent_id}", response_class=HTMLResponse)
def agent_page(
    request: Request,
    agent_id: str,
    session: SessionDep,
    world: str | None = WorldQuery,
    day: int | None = Query(None, ge=1, le=1_000_000),
) -> HTMLResponse:
    """One agent's mind: persona, emotion, plan, memories, retrieval probe, people."""
    resolved = _world(world)
    agent = session.get(Agent, (resolved, agent_id)) if resolved else None
    if resolved is not None and agent is None:
        message = f"There is no agent “{agent_id}” in world “{resolved}”."
        back = ("/" + _world_query(resolved), "Back to the town")
        return _missing(request, session, resolved, "No such agent", message, back)
    shown_day = day or (agent.state_day if agent and agent.state_day else 1)
    # The stored plan comes inline: "no plan yet" is then not a failed (console-logged) 404 fetch.
    plan = stored_plan(session, resolved, agent_id, shown_day) if resolved else None
    boot = {
        "agent_id": agent_id,
        "day": shown_day,
        "plan": plan_public(plan).model_dump(mode="json") if plan else None,
    }
    home = session.get(PointOfInterest, (resolved, agent.home_poi)) if agent and agent.home_poi else None
    mind = _mind(session, resolved, agent, shown_day) if resolved and agent else None
    return _page(request, "agent.html", world, agent=agent, home=home, boot=boot, mind=mind)


def _mind(session: SessionDep, world_id: str, agent: Agent, day: int) -> dict[str, Any]:
    """The agent's intentions (said from the shown day) and who it told what, who told it what."""
    rows = intention_repo.told_rows(session, world_id, agent.id)
    names = world_repo.names(
        session,
        world_id,
        sorted({r.teller_id for r in rows} | {r.listener_id for r in rows} | {r.origin_id for r in rows}),
    )
    public = intention.public(agent.id, intention_repo.read(session, world_id, agent.id), day, agent.language)
    return {
        "lines": [line for line in public.text.splitlines() if line],
        "told": [{"who": names.get(r.listener_id, r.listener_id), "text": r.text, "day": r.day, "time": r.time_of_day}
                 for r in rows if r.teller_id == agent.id],
        "heard": [{"who": names.get(r.teller_id, r.teller_id), "origin": names.get(r.origin_id, r.origin_id),
                   "text": r.text, "day": r.day, "time": r.time_of_day} for r in rows if r.listener_id == agent.id],
    }  # fmt: skip


@router.get("/conversations", response_class=HTMLResponse)
def conversations_page(
    request: Request,
    world: str | None = WorldQuery,
    agent_id: str | None = Query(None, max_length=64),
    visitors: bool = Query(False, description="only conversations with a visitor (a player) in them"),
) -> HTMLResponse:
    boot = {"agent_id": agent_id, "visitors": visitors}
    return _page(request, "conversations.html", world, visitors=visitors, boot=boot)


@router.get("/conversations/{session_id}", response_class=HTMLResponse)
def conversation_page(
    request: Request, session_id: str, session: SessionDep, world: str | None = WorldQuery
) -> HTMLResponse:
    resolved = _world(world)
    conversation = session.get(Conversation, (resolved, session_id)) if resolved else None
    if resolved is not None and conversation is None:
        message = f"There is no conversation “{session_id}” in world “{resolved}”."
        back = (f"/conversations{_world_query(resolved)}", "Back to the conversations")
        return _missing(request, session, resolved, "No such conversation", message, back)
    # The judge's stored verdict is not part of the conversation JSON, so it comes inline.
    boot = {"session_id": session_id, "judge": conversation.judge if conversation else None}
    return _page(request, "conversation.html", world, session_id=session_id, boot=boot)


@router.get("/council", response_class=HTMLResponse)
def councils_page(request: Request, world: str | None = WorldQuery) -> HTMLResponse:
    return _page(request, "councils.html", world)


@router.get("/council/{council_id}", response_class=HTMLResponse)
def council_page(request: Request, council_id: str, world: str | None = WorldQuery) -> HTMLResponse:
    return _page(request, "council.html", world, council_id=council_id, boot={"council_id": council_id})


@router.get("/llm-calls", response_class=HTMLResponse)
def llm_calls_page(
    request: Request,
    world: str | None = WorldQuery,
    purpose: str | None = Query(None, max_length=32),
    agent_id: str | None = Query(None, max_length=64),
    errors_only: bool = False,
) -> HTMLResponse:
    filters = {"purpose": purpose or "", "agent_id": agent_id or "", "errors_only": errors_only}
    return _page(request, "llm_calls.html", world, filters=filters, boot={"filters": filters})


@router.get("/llm-calls/{call_id}", response_class=HTMLResponse)
def llm_call_page(request: Request, call_id: int, world: str | None = WorldQuery) -> HTMLResponse:
    return _page(request, "llm_call.html", world, call_id=call_id, boot={"call_id": call_id})
