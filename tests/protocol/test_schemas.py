"""The committed schemas and C# DTOs are exactly what the server's models export today."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend import PROTOCOL_VERSION
from backend.protocol.cli import DEFAULT_CSHARP_DIR, DEFAULT_SCHEMA_DIR
from backend.protocol.codegen import GENERATED_FILE, find_quicktype, generate_csharp
from backend.protocol.export import INDEX, SUFFIX, export_documents, write_export
from backend.protocol.registry import PROTOCOL_MODELS
from tests.protocol.unity_tools import install_line, missing_tools

FIX = "run `machi protocol export --csharp` and commit unity_protocol/"


def test_committed_schemas_match_a_fresh_export() -> None:
    fresh = export_documents()
    committed = {p.name: p.read_text(encoding="utf-8") for p in DEFAULT_SCHEMA_DIR.glob("*.json")}
    assert sorted(committed) == sorted(fresh), f"schema files differ; {FIX}"
    for name, text in fresh.items():
        assert committed[name] == text, f"{name} is stale; {FIX}"


def test_every_wire_model_has_a_schema_and_references_resolve(tmp_path: Path) -> None:
    write_export(tmp_path)
    index = json.loads((tmp_path / INDEX).read_text(encoding="utf-8"))
    names = {item["name"] for item in index["schemas"]}
    assert {entry.name for entry in PROTOCOL_MODELS} <= names
    for path in tmp_path.glob("*" + SUFFIX):
        for ref in _refs(json.loads(path.read_text(encoding="utf-8"))):
            assert (tmp_path / ref).is_file(), f"{path.name} refers to missing {ref}"


def test_turn_reply_schema_keeps_the_fields_unity_relies_on() -> None:
    schema = json.loads(export_documents()["TurnResult" + SUFFIX])
    required = set(schema["required"])
    assert {
        "dialogue",
        "emotion",
        "is_conversation_end",
        "end_reason",
        "session_id",
        "turn_index",
    } <= required
    emotions = schema["properties"]["emotion"]["enum"]
    assert sorted(emotions) == ["angry", "happy", "neutral", "relaxed", "sad", "surprised"]


def test_export_removes_schemas_of_models_that_no_longer_exist(tmp_path: Path) -> None:
    (tmp_path / ("Gone" + SUFFIX)).write_text("{}", encoding="utf-8")
    write_export(tmp_path)
    assert not (tmp_path / ("Gone" + SUFFIX)).exists()


def test_committed_csharp_dtos_match_a_fresh_quicktype_run(tmp_path: Path) -> None:
    missing = missing_tools(["quicktype"])
    if missing:
        pytest.skip(install_line(missing))
    executable = find_quicktype()
    generated = generate_csharp(DEFAULT_SCHEMA_DIR, tmp_path, executable)
    committed = (DEFAULT_CSHARP_DIR / GENERATED_FILE).read_text(encoding="utf-8")
    assert generated.read_text(encoding="utf-8") == committed, f"C# DTOs are stale; {FIX}"


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def test_readme_examples_come_from_a_real_run_of_every_call() -> None:
    from backend.protocol.readme import render_readme
    from backend.protocol.readme_text import STEPS
    from backend.protocol.walkthrough import WALKTHROUGH

    fresh = render_readme()  # raises if any documented call did not answer as documented
    committed = (DEFAULT_SCHEMA_DIR.parent / "README.md").read_text(encoding="utf-8")
    headings = _headings(fresh)
    assert len(headings) == len(STEPS) + len(WALKTHROUGH)
    assert headings == _headings(committed), "unity_protocol/README.md is stale; run `machi protocol readme`"
    assert f'"protocol_version": {PROTOCOL_VERSION}' in committed and "event: reply" in committed
    assert '"code": "unsupported_protocol"' in committed and "X-Machi-Protocol: 3" in committed
    for route in ("/v1/agents/hikari/interview", "/v1/council", "/v1/judge"):
        assert f"curl -s -X POST 'http://127.0.0.1:8000{route}'" in committed
    assert '"fallback": false' in committed and '"status": "done"' in committed


def _headings(markdown: str) -> list[str]:
    """The `### ` headings outside code blocks (a council record shown as markdown has its own)."""
    found, fenced = [], False
    for line in markdown.splitlines():
        fenced = fenced != line.startswith("```")
        if not fenced and line.startswith("### "):
            found.append(line)
    return found


def test_council_judge_and_interview_calls_are_in_the_export() -> None:
    """Unity can build the council, judge and interview requests and read their replies from the schemas."""
    documents = export_documents()
    index = json.loads(documents[INDEX])
    used_by = {item["name"]: item.get("used_by", "") for item in index["schemas"]}
    expected = {
        "CouncilCreate": "POST /v1/council",
        "CouncilAccepted": "POST /v1/council",
        "CouncilPublic": "GET /v1/council/{council_id}",
        "CouncilList": "GET /v1/council",
        "JudgeRequest": "POST /v1/judge",
        "JudgeResult": "POST /v1/conversations/{session_id}/judge",
        "InterviewRequest": "POST /v1/agents/{agent_id}/interview",
        "InterviewResult": "POST /v1/agents/{agent_id}/interview",
    }
    for name, route in expected.items():
        assert route in used_by.get(name, ""), f"{name} is not exported for {route}"
    interview = json.loads(documents["InterviewRequest" + SUFFIX])
    assert interview["required"] == ["question"] and interview["properties"]["question"]["maxLength"] == 500
    council = json.loads(documents["CouncilCreate" + SUFFIX])
    assert council["required"] == ["title"] and council["properties"]["rounds"]["maximum"] == 5
    assert {"InterviewMemory" + SUFFIX, "CouncilSummary" + SUFFIX} <= set(documents)
