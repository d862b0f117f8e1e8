"""Every error is the JSON envelope `{"error": {"code", "message", "details"}}`, over the app's route list: bodies
that are not readable JSON (bad UTF-8, 100,000-deep nesting, a 5,000-digit number, not JSON at all) are a 400
`invalid_json` about the field `body`, bad parameters a 4xx naming theirs, and a bug a 500 `internal_error`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.app import create_app
from backend.scripted import ScriptedLLM
from tests.security.conftest import ADMIN, secured_settings
from tests.security.routes import RouteCase, route_cases
from tests.security.world import Seeded

UNREADABLE = {
    "invalid UTF-8": b'{"name": "\xff\xfe"}',
    "100k-deep nesting": b'{"name": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "5,000-digit number": b'{"day": 1' + b"0" * 5_000 + b"}",
    "not JSON": b"hello, server",
    "cut short": b'{"name": [1, 2',
}
WRONG_KIND = {"a list": b"[1, 2]", "a string": b'"text"', "a number": b"7"}
#: The dashboard's sign-in form answers a wrong key with the form again, and its pages answer what they do not
#: find with an HTML problem page (HTML for a person, not an API error).
HTML_PAGES = {"POST /login", "GET /conversations/{session_id}"}
JSON = {"Content-Type": "application/json", "X-Machi-World": "alpha", **ADMIN}


def envelope_problem(response: Any) -> str | None:
    """Why `response` is not the error envelope, or None when it is."""
    if not response.headers.get("content-type", "").startswith("application/json"):
        return f"content-type {response.headers.get('content-type')}"
    body = response.json()
    if not isinstance(body, dict) or set(body) != {"error"} or not isinstance(body["error"], dict):
        return f"body {str(body)[:80]}"
    error = body["error"]
    if set(error) != {"code", "message", "details"}:
        return f"error keys {sorted(error)}"
    if not (isinstance(error["code"], str) and error["code"] and isinstance(error["message"], str)):
        return f"code/message {error['code']!r} {error['message']!r}"
    return None


def _bodied(client: TestClient) -> list[RouteCase]:
    cases = [c for c in route_cases(client.app) if c.kind == "http" and c.takes_body]
    assert {"POST /v1/conversation/turn", "PUT /v1/agents/{agent_id}", "POST /v1/world/import"} <= {
        str(c) for c in cases
    }
    return cases


def test_unreadable_bodies_are_a_400_naming_the_body_on_every_route(
    secured: tuple[TestClient, Seeded, Seeded],
) -> None:
    client, alpha, _ = secured
    problems = []
    for case in _bodied(client):
        for name, raw in UNREADABLE.items():
            response = client.request(case.method, case.url(alpha.ids), content=raw, headers=JSON)
            where = f"{case} with {name}: {response.status_code}"
            if (why := envelope_problem(response)) is not None:
                problems.append(f"{where} {why}")
                continue
            error = response.json()["error"]
            if response.status_code != 400 or error["code"] != "invalid_json":
                problems.append(f"{where} {error['code']}")
            elif [d["field"] for d in error["details"]] != ["body"] or not error["message"]:
                problems.append(f"{where} names {error['details']}")
    assert problems == []


def test_bodies_of_the_wrong_kind_are_a_422_envelope_on_every_route(
    secured: tuple[TestClient, Seeded, Seeded],
) -> None:
    client, alpha, _ = secured
    problems = []
    for case in _bodied(client):
        for name, raw in WRONG_KIND.items():
            response = client.request(case.method, case.url(alpha.ids), content=raw, headers=JSON)
            why = envelope_problem(response)
            if response.status_code != 422 or why is not None:
                problems.append(f"{case} with {name}: {response.status_code} {why}")
                continue
            details = response.json()["error"]["details"]
            named = (
                details if isinstance(details, list) else [details]
            )  # one problem may be an object (import)
            if any(not d["field"] or d["field"].isdigit() for d in named):
                problems.append(f"{case} with {name}: fields {details}")
    assert problems == []


def test_every_error_any_route_gives_is_the_envelope(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    # Ids outside the safe alphabet, query values out of range, no body: each route answers with some error.
    client, _, _ = secured
    bad_ids: dict[str, Any] = _AnyId("bad id!")
    query = {"day": "0", "time_of_day": "99", "limit": "-1", "offset": "x", "k": "0", "window_s": "-5"}
    problems, errors = [], 0
    for case in route_cases(client.app):
        if case.kind != "http" or str(case) in HTML_PAGES or case.method == "DELETE":
            continue
        response = client.request(
            case.method, case.url(bad_ids), params=query, headers=JSON, follow_redirects=False
        )
        if response.status_code >= 400:
            errors += 1
            if (why := envelope_problem(response)) is not None:
                problems.append(f"{case}: {response.status_code} {why}")
    for method, path in (("PATCH", "/v1/agents"), ("GET", "/v1/no-such-route")):
        response = client.request(method, path, headers=JSON)
        if response.status_code not in (404, 405) or envelope_problem(response) is not None:
            problems.append(f"{method} {path}: {response.status_code}")
    assert problems == [] and errors > 20


class _AnyId(dict):  # type: ignore[type-arg]
    """Every path parameter gets the same value."""

    def __init__(self, value: str) -> None:
        super().__init__()
        self.value = value

    def __missing__(self, _key: str) -> str:
        return self.value


@pytest.mark.parametrize("where", ["/v1/boom", "/boom-page"])
def test_an_unhandled_exception_is_a_json_500_envelope(tmp_path: Path, where: str) -> None:
    app = create_app(secured_settings(tmp_path), llm=ScriptedLLM(seed=0))

    def boom() -> None:
        raise RuntimeError("a bug the handlers do not know")

    app.add_api_route(where, boom, methods=["GET"])
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get(where, headers=ADMIN)
    assert response.status_code == 500 and envelope_problem(response) is None
    error = response.json()["error"]
    assert error["code"] == "internal_error" and "RuntimeError" not in error["message"]  # no internals leak
