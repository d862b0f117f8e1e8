"""Every input has a bound, checked from the app's OpenAPI schema so a new field or route is covered:
strings have a maximum length, lists a maximum size, and integers too large for the database get a 422."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.scripted import ScriptedLLM
from tests.conftest import make_client

HUGE = 10**19  # past the 64-bit integers SQLite and PostgreSQL store
DEMO_IDS = {"agent_id": "aoi", "other_id": "hikari", "poi_id": "cafe", "player_id": "player:guest"}
#: Bodies taken whole on purpose: a world document (bounded by MAX_IMPORT_BYTES) and the memory
#: endpoint's single-or-batch body (validated as MemoryCreate / MemoryBatchCreate inside the route).
FREE_FORM_BODIES = {("POST", "/v1/world/import"), ("POST", "/v1/agents/{agent_id}/memories")}


@pytest.fixture
def demo(settings: Any, scripted: ScriptedLLM) -> Iterator[TestClient]:
    with make_client(settings, scripted, load_demo_world=True) as client:
        yield client


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        node = schema["components"]["schemas"][name]
    return node


def _unbounded(schema: dict[str, Any], node: dict[str, Any], where: str, seen: set[str]) -> Iterator[str]:
    """Paths inside a request schema to strings without maxLength or arrays without maxItems."""
    if "$ref" in node:
        if node["$ref"] in seen:
            return
        seen = seen | {node["$ref"]}
    node = _resolve(schema, node)
    for key in ("anyOf", "oneOf", "allOf"):
        for option in node.get(key, []):
            yield from _unbounded(schema, option, where, seen)
    kind = node.get("type")
    # A pattern without * or + ("^[A-Za-z0-9_.-]{1,64}$", "^(done|failed)$") bounds the length too.
    bounded_pattern = "pattern" in node and not re.search(r"[*+]", node["pattern"])
    if kind == "string" and not ({"maxLength", "enum", "const"} & node.keys()) and not bounded_pattern:
        yield where
    if kind == "array":
        if "maxItems" not in node:
            yield f"{where}[]"
        yield from _unbounded(schema, node.get("items", {}), f"{where}[]", seen)
    for name, prop in node.get("properties", {}).items():
        yield from _unbounded(schema, prop, f"{where}.{name}", seen)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        yield from _unbounded(schema, extra, f"{where}.*", seen)


def _operations(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in schema["paths"].items():
        for method, op in item.items():
            yield method.upper(), path, op


def test_every_request_string_and_list_has_a_limit(demo: TestClient) -> None:
    schema = demo.app.openapi()  # type: ignore[attr-defined]
    problems = []
    for method, path, op in _operations(schema):
        for param in op.get("parameters", []):
            problems += [
                f"{method} {path} {param['in']} {w}"
                for w in _unbounded(schema, param["schema"], param["name"], set())
            ]
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if body and (method, path) not in FREE_FORM_BODIES:
            problems += [f"{method} {path} body {w}" for w in _unbounded(schema, body, "body", set())]
    # Path parameters are bounded by the URL itself (and the server's request-line limit).
    problems = [p for p in problems if " path " not in p]
    assert problems == [], "\n".join(problems)


def test_every_integer_parameter_refuses_a_value_past_64_bits(demo: TestClient) -> None:
    schema = demo.app.openapi()  # type: ignore[attr-defined]
    checked, problems = 0, []
    for method, path, op in _operations(schema):
        params = op.get("parameters", [])
        ints = [p for p in params if _resolve(schema, p["schema"]).get("type") == "integer"
                or any(o.get("type") == "integer" for o in _resolve(schema, p["schema"]).get("anyOf", []))]  # fmt: skip
        for param in ints:
            ids = {**DEMO_IDS, "session_id": "s", "council_id": "c", "memory_id": 1, "call_id": 1}
            if param["in"] == "path":
                ids[param["name"]] = HUGE
            url = path.format(**{name: ids.get(name, "1") for name in re.findall(r"{(\w+)}", path)})
            query = {param["name"]: HUGE} if param["in"] == "query" else {}
            required = {
                p["name"]: 1 for p in params if p["in"] == "query" and p.get("required") and p is not param
            }
            body = {} if "requestBody" in op else None
            response = demo.request(method, url, params={**required, **query}, json=body)
            checked += 1
            if response.status_code >= 500:
                problems.append(f"{method} {path} {param['name']}={HUGE}: {response.status_code}")
    assert checked >= 8 and problems == []


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("POST", "/v1/agents/aoi/memories", {"type": "observation", "content": "x", "day": HUGE}, "day"),
        ("POST", "/v1/agents/aoi/memories", {"type": "observation", "content": "x", "evidence_ids": [HUGE]}, "evidence_ids.0"),
        ("POST", "/v1/agents/aoi/memories", {"type": "observation", "content": "x", "tags": ["長" * 101]}, "tags.0"),
        ("POST", "/v1/agents/aoi/memories/retrieve", {"query": "カフェ", "day": HUGE}, "day"),
        ("POST", "/v1/agents/aoi/reflect", {"day": HUGE}, "day"),
        ("GET", f"/v1/agents/aoi/memories?offset={HUGE}", None, "offset"),
        ("DELETE", f"/v1/agents/aoi/memories/{HUGE}", None, "memory_id"),
        ("GET", f"/v1/council?offset={HUGE}", None, "offset"),
        ("GET", f"/v1/llm-calls?offset={HUGE}", None, "offset"),
        ("GET", f"/v1/llm-calls/{HUGE}", None, "call_id"),
    ],
)  # fmt: skip
def test_values_the_database_cannot_hold_are_named_422s(
    demo: TestClient, method: str, path: str, body: Any, field: str
) -> None:
    """Each of these was a 500 (integer overflow in SQLite, or an unbounded tag) before it got a bound."""
    response = demo.request(method, path, json=body)
    assert response.status_code == 422, response.text
    assert field in {problem["field"] for problem in response.json()["error"]["details"]}


def test_a_protocol_header_of_non_ascii_digits_is_a_4xx(demo: TestClient) -> None:
    # "²".isdigit() is True but int("²") raises: that was a 500 on every /v1 route. (The test client sends
    # header text as UTF-8, so the server's latin-1 reading of "²" is checked where it is parsed.)
    from backend.api.protocol import parse_major
    from backend.security.middleware import _content_length

    assert [parse_major(v) for v in ("²", "1²", "١", "1", "1.2")] == [None, None, None, 1, 1]
    assert _content_length({"headers": [(b"content-length", "²".encode("latin-1"))]}) is None
    for value in ("²".encode("latin-1"), "١".encode()):
        reply = demo.get("/v1/agents", headers={"X-Machi-Protocol": value})
        assert reply.status_code == 400 and reply.json()["error"]["code"] == "unsupported_protocol"


def test_memory_search_text_is_literal_not_a_like_pattern(demo: TestClient) -> None:
    demo.post(
        "/v1/agents/aoi/memories", json={"type": "observation", "content": "割引は50%だった", "importance": 3}
    )
    demo.post(
        "/v1/agents/aoi/memories", json={"type": "observation", "content": "snake_case の話", "importance": 3}
    )
    total = demo.get("/v1/agents/aoi/memories").json()["total"]
    assert total >= 2
    percent = demo.get("/v1/agents/aoi/memories", params={"q": "%"}).json()
    assert [m["content"] for m in percent["memories"]] == ["割引は50%だった"]
    underscore = demo.get("/v1/agents/aoi/memories", params={"q": "_"}).json()
    assert [m["content"] for m in underscore["memories"]] == ["snake_case の話"]


def test_non_finite_retrieval_weights_are_refused(demo: TestClient) -> None:
    for body in (
        '{"query": "カフェ", "weights": {"recency": Infinity}}',
        '{"query": "カフェ", "weights": {"relevance": NaN}}',
    ):
        reply = demo.post(
            "/v1/agents/aoi/memories/retrieve", content=body, headers={"content-type": "application/json"}
        )
        assert reply.status_code == 422, reply.text
        assert "weights" in str(reply.json()["error"])
