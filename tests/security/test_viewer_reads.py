"""A GET has no side effects for a viewer: over every GET route (read from `app.routes`, so a route added
tomorrow is checked too), the viewer key leaves every table as it was and makes no model call.

Each route's required query parameters come from the OpenAPI schema and are filled from SAMPLES; a route
whose parameter has no sample fails the test (a 422 would not exercise the route at all).
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import inspect, text

from backend.scripted import ScriptedLLM
from backend.scripted.engine import ScriptedCall
from tests.conftest import drain
from tests.security.conftest import ADMIN, VIEWER
from tests.security.routes import RouteCase, protected_cases
from tests.security.world import Seeded

#: A value for every required query parameter of a GET route. Day 2 has no plan yet (the seed plans day 1):
#: the day's first `plan/now`, which makes the plan for the game's key, is the read that must not for a viewer.
SAMPLES: dict[str, Any] = {"day": 2, "time_of_day": 9.0}

Snapshot = dict[str, list[str]]


def snapshot(client: TestClient) -> Snapshot:
    """Every row of every table (full-text indexes included), once the app's background work is done."""
    drain(client)
    engine = client.app.state.engine  # type: ignore[attr-defined]
    tables: Snapshot = {}
    with engine.connect() as connection:
        for name in sorted(inspect(connection).get_table_names()):
            rows = connection.execute(text(f'SELECT * FROM "{name}"')).all()
            tables[name] = sorted(repr(tuple(row)) for row in rows)
    return tables


def changed(before: Snapshot, after: Snapshot) -> list[str]:
    return [
        f"{name}: {len(before.get(name, []))} -> {len(after.get(name, []))} rows"
        + ("" if len(before.get(name, [])) != len(after.get(name, [])) else " (contents changed)")
        for name in sorted(before.keys() | after.keys())
        if before.get(name) != after.get(name)
    ]


def required_query(client: TestClient) -> dict[str, list[str]]:
    """Path template -> the names of its GET's required query parameters (from the OpenAPI schema)."""
    schema = client.app.openapi()  # type: ignore[attr-defined]
    return {
        path: [
            p["name"] for p in ops["get"].get("parameters", []) if p.get("required") and p["in"] == "query"
        ]
        for path, ops in schema["paths"].items()
        if "get" in ops
    }


def _get(client: TestClient, case: RouteCase, ids: dict[str, Any], params: dict[str, Any]) -> Any:
    headers = {"X-Machi-World": "alpha", **VIEWER}
    if case.kind == "websocket":
        with client.websocket_connect(f"{case.url(ids)}?world=alpha", headers=headers):
            return None
    return client.get(case.url(ids), params=params, headers=headers, follow_redirects=False)


def _last_call(model: ScriptedLLM) -> object:
    return model.history[-1] if model.history else None


def _calls_since(model: ScriptedLLM, last: object) -> list[ScriptedCall]:
    """The calls after `last` (the history keeps only the newest calls, so its length may not change)."""
    calls = list(model.history)
    return calls[next((n + 1 for n, call in enumerate(calls) if call is last), 0) :]


def test_no_get_route_has_side_effects_for_a_viewer(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    client, alpha, _ = secured
    model = client.app.state.provider  # type: ignore[attr-defined]
    needs = required_query(client)
    gets = [case for case in protected_cases(client.app) if case.method == "GET"]
    assert any(case.path.endswith("/plan/now") for case in gets)
    problems = []
    for case in gets:
        missing = [name for name in needs.get(case.path, []) if name not in SAMPLES]
        if missing:
            problems.append(f"{case}: add a sample value for {', '.join(missing)} to SAMPLES")
            continue
        params = {name: SAMPLES[name] for name in needs.get(case.path, [])}
        before, last = snapshot(client), _last_call(model)
        response = _get(client, case, alpha.ids, params)
        after = snapshot(client)
        if response is not None and (response.status_code == 422 or response.status_code >= 500):
            problems.append(
                f"{case}: {response.status_code} {response.text[:120]} (the route was not exercised)"
            )
        if changed(before, after):
            problems.append(f"{case}: the viewer's GET wrote {changed(before, after)}")
        if _last_call(model) is not last:
            purposes = [c.options.purpose for c in _calls_since(model, last)]
            problems.append(f"{case}: the viewer's GET made model calls {purposes}")
    assert problems == []


def test_a_viewer_plan_now_names_the_write_it_would_need(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    client, _, _ = secured
    headers = {"X-Machi-World": "alpha"}
    refused = client.get(
        "/v1/agents/ren/plan/now", params={"day": 5, "time_of_day": 9.0}, headers={**headers, **VIEWER}
    )
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["code"] == "forbidden" and "MACHI_API_KEY" in error["message"]
    assert error["details"] == {"method": "POST", "path": "/v1/agents/ren/plan", "day": 5}
    assert (
        client.get("/v1/agents/ren/plan", params={"day": 5}, headers={**headers, **ADMIN}).status_code == 404
    )
    # Once the game's key has made the day's plan, the viewer reads it like any other GET.
    made = client.get(
        "/v1/agents/ren/plan/now", params={"day": 5, "time_of_day": 9.0}, headers={**headers, **ADMIN}
    )
    assert made.status_code == 200
    seen = client.get(
        "/v1/agents/ren/plan/now", params={"day": 5, "time_of_day": 9.0}, headers={**headers, **VIEWER}
    )
    assert seen.status_code == 200 and seen.json() == made.json()
