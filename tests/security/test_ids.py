"""Ids a client chooses follow one rule (backend/ids.py): an id that could not be read back is a 422 that says why.

`a/b` and `../../etc/passwd-sess` used to be accepted as session ids by the turn route and then 404 on
`GET /v1/conversations/{id}`. The route-list test keeps every id parameter of a new route on the same rule.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.cli import main
from backend.ids import ID_PATTERN, MAX_ID_CHARS, MAX_SESSION_ID_CHARS, PARTICIPANT_PATTERN
from backend.scripted import ScriptedLLM
from tests.conftest import make_client
from tests.conversation.helpers import add_agents, snapshot, turn
from tests.security.test_input_bounds import _operations, _resolve

UNREADABLE = ["a/b", "../../etc/passwd-sess", "..", ".", "a b", "会話1", "a%2Fb", "a?b", "a#b", "a\\b", "{x}"]
#: Look-ups of a stored row by an id the server made, or one that earlier versions took freely: checked for
#: length only (a conversation stored under another id must stay readable and endable).
LOOKUPS = {"council_id", "session_id", "POST /v1/conversation/end body.session_id"}


@pytest.fixture
def demo(settings: Any, scripted: ScriptedLLM) -> Iterator[TestClient]:
    with make_client(settings, scripted, load_demo_world=True) as client:
        yield client


@pytest.mark.parametrize("session_id", UNREADABLE)
@pytest.mark.parametrize("path", ["/v1/conversation/turn", "/v1/conversation/turn/stream"])
def test_a_session_id_that_cannot_be_read_back_is_422_and_stores_nothing(
    client: TestClient, path: str, session_id: str
) -> None:
    add_agents(client)
    before = snapshot(client)
    response = client.post(path, json=turn("aoi", "hikari", session_id, []))
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "validation_error" and error["details"][0]["field"] == "session_id"
    assert "letters A-Z a-z, digits 0-9, '_', '-' and '.'" in error["message"]
    assert snapshot(client) == before


def test_every_id_the_rule_allows_reads_back(client: TestClient) -> None:
    add_agents(client)
    for session_id in ("Aoi_hikari-day1.0001", "...x", "s" * MAX_SESSION_ID_CHARS):
        assert (
            client.post("/v1/conversation/turn", json=turn("aoi", "hikari", session_id, [])).status_code
            == 200
        )
        assert client.get(f"/v1/conversations/{session_id}").json()["session_id"] == session_id
    too_long = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s" * 129, []))
    assert too_long.status_code == 422


@pytest.mark.parametrize("bad", ["...", "a b", "会話", "a" * (MAX_ID_CHARS + 1)])
def test_agent_poi_and_world_ids_follow_the_same_rule(client: TestClient, bad: str) -> None:
    persona = {"name": "葵"}
    poi = {"name": "カフェ", "position": {"x": 0, "z": 0}}
    assert client.put(f"/v1/agents/{bad}", json=persona).status_code == 422
    assert client.put(f"/v1/pois/{bad}", json=poi).status_code == 422
    assert client.put("/v1/agents/aoi", json={**persona, "home_poi": bad}).status_code == 422
    world = client.get("/v1/agents", headers={"X-Machi-World": bad.encode()})
    assert world.status_code == 422 and "x-machi-world" in world.json()["error"]["message"].lower()
    body = turn("aoi", "hikari", "s", [])
    for field in ("agent_id", "target_id"):
        refused = client.post("/v1/conversation/turn", json={**body, field: bad})
        assert refused.status_code == 422 and refused.json()["error"]["details"][0]["field"] == field


def test_an_import_with_an_agent_or_poi_id_off_the_rule_is_422_naming_the_row(demo: TestClient) -> None:
    doc = demo.get("/v1/world/export").json()
    for section in ("agents", "pois"):
        broken = {**doc, section: [{**doc[section][0], "id": "a/b"}, *doc[section][1:]]}
        response = demo.post("/v1/world/import", json=broken)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["details"]["field"] == f"{section}[0].id"
    assert demo.post("/v1/world/import", json=doc).status_code == 200  # the demo town itself still imports


def _id_schemas(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, string schema) of every path parameter and request-body field named like an id."""
    for method, path, op in _operations(schema):
        for param in op.get("parameters", []):
            if param["name"].endswith("_id") and param["in"] == "path":
                yield f"{method} {path} {param['name']}", param["schema"]
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if body is None:
            continue
        node = _resolve(schema, body)
        for name, prop in node.get("properties", {}).items():
            if name.endswith("_id") or name in ("members", "moderator", "home_poi"):
                for option in prop.get("anyOf", [prop]):
                    yield f"{method} {path} body.{name}", _resolve(schema, option.get("items", option))


def test_every_id_parameter_and_field_of_every_route_uses_the_one_rule(demo: TestClient) -> None:
    schema = demo.app.openapi()  # type: ignore[attr-defined]
    off_rule = [
        where
        for where, node in _id_schemas(schema)
        if node.get("type") == "string"
        and where.rsplit(" ", 1)[-1] not in LOOKUPS
        and where not in LOOKUPS
        and node.get("pattern") not in (ID_PATTERN, PARTICIPANT_PATTERN)
    ]
    assert off_rule == []
    checked = [where for where, _ in _id_schemas(schema)]
    assert any("body.session_id" in where for where in checked)  # the turn's own session id is ruled


def test_the_cli_takes_world_ids_by_the_same_rule(
    settings: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    with pytest.raises(SystemExit) as usage:
        main(["world", "reset", "--world", "a/b"])
    assert usage.value.code == 2 and "'/'" in capsys.readouterr().err
    saved = tmp_path / "town.json"
    assert main(["world", "reset"]) == 0 and main(["world", "export", str(saved)]) == 0
    doc = json.loads(saved.read_text(encoding="utf-8"))
    saved.write_text(json.dumps({**doc, "world_id": "../other"}), encoding="utf-8")
    assert main(["world", "import", str(saved)]) == 2  # the file's own world id is checked too
    assert "--world" in capsys.readouterr().err
    assert main(["world", "import", str(saved), "--world", "other"]) == 0
