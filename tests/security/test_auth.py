"""Keys over every route, generated from `app.routes`: a route added tomorrow is checked without editing this.

Per route: no key and a wrong key get 401 (dashboard pages: a redirect to the login page), the admin key
gets through, the viewer key gets 403 on writes and through on reads. WebSocket keys: header, query, cookie.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketDenialResponse

from backend.security.keys import COOKIE_NAME, cookie_token
from tests.security.conftest import ADMIN, ADMIN_KEY, VIEWER, VIEWER_KEY
from tests.security.routes import RouteCase, protected_cases, route_cases
from tests.security.world import Seeded

EXPECTED_PUBLIC = {
    "GET /health",
    "GET /openapi.json",
    "GET /docs",
    "GET /docs/oauth2-redirect",
    "GET /redoc",
    "GET /login",
    "POST /login",
    "POST /logout",
}


def _call(client: TestClient, case: RouteCase, ids: dict[str, Any], headers: dict[str, str]) -> Any:
    body = None if case.method in ("GET", "DELETE") else {}
    return client.request(
        case.method, case.url(ids), json=body, headers={"X-Machi-World": "alpha", **headers},
        follow_redirects=False,
    )  # fmt: skip


def _http(cases: list[RouteCase]) -> list[RouteCase]:
    # Writes last and DELETEs at the very end: the admin-key pass really performs them.
    order = {"GET": 0, "POST": 1, "PUT": 1, "PATCH": 1, "DELETE": 2}
    return sorted((c for c in cases if c.kind == "http"), key=lambda c: order.get(c.method, 1))


def test_only_the_listed_routes_are_public(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    client, _, _ = secured
    everything = {str(c) for c in route_cases(client.app) if c.kind == "http"}
    protected = {str(c) for c in protected_cases(client.app)}
    assert everything - protected == EXPECTED_PUBLIC
    assert any(c.startswith("GET /v1/") for c in protected) and "GET /v1/events" in protected


def test_every_route_refuses_a_missing_or_wrong_key(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    client, alpha, _ = secured
    wrong = [{}, {"X-Api-Key": "nope"}, {"Authorization": "Bearer nope"}, {"Authorization": ADMIN_KEY}]
    problems = []
    for case in _http(protected_cases(client.app)):
        for headers in wrong:
            response = _call(client, case, alpha.ids, headers)
            if case.path.startswith("/v1/") or case.method != "GET":
                body = response.json() if response.status_code == 401 else None
                if response.status_code != 401 or body["error"]["code"] != "unauthorized":
                    problems.append(f"{case} {headers}: {response.status_code}")
                elif response.headers.get("www-authenticate") != "Bearer":
                    problems.append(f"{case}: no WWW-Authenticate header")
            elif response.status_code != 303 or not response.headers["location"].startswith("/login?next="):
                problems.append(f"{case} {headers}: page not sent to the login ({response.status_code})")
    assert problems == []


def test_every_route_lets_the_admin_key_in(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    client, alpha, _ = secured
    problems = []
    for case in _http(protected_cases(client.app)):
        for headers in (ADMIN, {"Authorization": f"Bearer {ADMIN_KEY}"}):
            response = _call(client, case, alpha.ids, headers)
            if response.status_code in (401, 403) or response.status_code >= 500:
                problems.append(f"{case}: {response.status_code} {response.text[:120]}")
    assert problems == []


def test_viewer_key_reads_everything_and_writes_nothing(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    client, alpha, _ = secured
    problems = []
    for case in _http(protected_cases(client.app)):
        response = _call(client, case, alpha.ids, VIEWER)
        if case.is_read and response.status_code in (401, 403):
            problems.append(f"{case}: viewer refused a read ({response.status_code})")
        elif not case.is_read and (
            response.status_code != 403 or response.json()["error"]["code"] != "forbidden"
        ):
            problems.append(f"{case}: viewer write answered {response.status_code}")
    assert problems == []
    # A refused write changed nothing: the agent the viewer tried to delete is still there.
    assert client.get("/v1/agents/hana", headers={**ADMIN, "X-Machi-World": "alpha"}).status_code in (
        200,
        404,
    )


def test_the_viewer_key_cannot_interview(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    # An interview writes nothing the agent remembers, but it is a model call (work and a trace row) like a
    # plan or a council: a POST, and the viewer key's POSTs are refused like every other one.
    client, _, _ = secured
    body = {"question": "秘密のこと、何か知ってる？"}
    headers = {"X-Machi-World": "alpha"}
    refused = client.post("/v1/agents/hana/interview", json=body, headers={**VIEWER, **headers})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    # The admin key gets an answer (404 once the route pass above has deleted the agent it seeded).
    admitted = client.post("/v1/agents/hana/interview", json=body, headers={**ADMIN, **headers})
    assert admitted.status_code in (200, 404)


def test_viewer_write_message_names_the_key_to_use(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    client, _, _ = secured
    response = client.put("/v1/agents/x", json={"name": "x"}, headers=VIEWER)
    assert response.status_code == 403
    assert "read-only" in response.json()["error"]["message"]
    assert "MACHI_API_KEY" in response.json()["error"]["message"]
    assert client.get("/v1/agents/x", headers=ADMIN).status_code == 404  # nothing was created


def test_health_docs_and_schema_stay_public(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    client, _, _ = secured
    for path in ("/health", "/openapi.json", "/docs", "/static/machi.css"):
        assert client.get(path).status_code == 200, path


@pytest.mark.parametrize(
    ("headers", "query"),
    [({}, ""), ({"X-Api-Key": "nope"}, ""), ({}, "?api_key=nope"), ({"Cookie": f"{COOKIE_NAME}=forged"}, "")],
)
def test_events_websocket_refuses_without_a_valid_key(
    secured: tuple[TestClient, Seeded, Seeded], headers: dict[str, str], query: str
) -> None:
    client, _, _ = secured
    with pytest.raises(WebSocketDenialResponse) as denied:
        with client.websocket_connect(f"/v1/events{query}", headers=headers):
            pass
    assert denied.value.status_code == 401
    assert denied.value.json()["error"]["code"] == "unauthorized"


@pytest.mark.parametrize(
    ("headers", "query"),
    [
        (ADMIN, ""),
        (VIEWER, ""),
        ({}, f"?api_key={ADMIN_KEY}"),
        ({}, f"?key={VIEWER_KEY}"),
        ({"Cookie": f"{COOKIE_NAME}={cookie_token(VIEWER_KEY)}"}, ""),
    ],
)
def test_events_websocket_accepts_header_query_and_cookie_keys(
    secured: tuple[TestClient, Seeded, Seeded], headers: dict[str, str], query: str
) -> None:
    client, _, _ = secured
    sep = "&" if query else "?"
    with client.websocket_connect(
        f"/v1/events{query}{sep}world=alpha&types=agent.state", headers=headers
    ) as ws:
        state = {"state": "talking", "day": 1, "time_of_day": 11.0}
        assert (
            client.post(
                "/v1/agents/ren/state", json=state, headers={**ADMIN, "X-Machi-World": "alpha"}
            ).status_code
            == 200
        )
        event = ws.receive_json()
    assert event["type"] == "agent.state" and event["payload"]["agent_id"] == "ren"


def test_a_key_in_the_query_string_does_not_open_http_routes(
    secured: tuple[TestClient, Seeded, Seeded],
) -> None:
    # Keys in URLs end up in access logs; only WebSockets (which browsers cannot give headers) take one.
    client, _, _ = secured
    assert client.get(f"/v1/agents?api_key={ADMIN_KEY}").status_code == 401
