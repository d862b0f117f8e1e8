"""X-Machi-Protocol: the current major (2) and version 1 are served, others are refused with a 400 naming
what is served."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from backend import PROTOCOL_VERSION
from backend.api.protocol import parse_major


def test_health_reports_protocol_version_and_tags_answers(client: TestClient) -> None:
    reply = client.get("/health")
    assert reply.status_code == 200
    assert reply.json()["protocol_version"] == PROTOCOL_VERSION
    assert reply.headers["X-Machi-Protocol"] == str(PROTOCOL_VERSION)


@pytest.mark.parametrize("value", [None, "1", "1.0", " 1.3 ", "2", "2.0"])
def test_current_major_or_missing_header_is_served(client: TestClient, value: str | None) -> None:
    headers = {} if value is None else {"X-Machi-Protocol": value}
    reply = client.get("/v1/llm-calls", headers=headers)
    assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("value", ["3", "0", "99.1", "v1", "latest"])
def test_unsupported_major_is_refused_with_the_served_versions(client: TestClient, value: str) -> None:
    reply = client.get("/v1/llm-calls", headers={"X-Machi-Protocol": value})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["code"] == "unsupported_protocol"
    assert error["details"]["supported"] == [1, PROTOCOL_VERSION]
    assert f"version(s) 1, {PROTOCOL_VERSION}" in error["message"]
    assert reply.headers["X-Machi-Protocol"] == str(PROTOCOL_VERSION)


def test_refused_request_changes_nothing(client: TestClient) -> None:
    body = {"name": "テスト", "kind": "place", "position": {"x": 0, "z": 0}}
    reply = client.put("/v1/pois/p1", json=body, headers={"X-Machi-Protocol": "3"})
    assert reply.status_code == 400
    assert client.get("/v1/pois").json() == []
    assert client.put("/v1/pois/p1", json=body, headers={"X-Machi-Protocol": "1"}).status_code == 201


def test_health_answers_any_version_so_clients_can_discover_it(client: TestClient) -> None:
    reply = client.get("/health", headers={"X-Machi-Protocol": "7"})
    assert reply.status_code == 200
    assert reply.json()["protocol_version"] == PROTOCOL_VERSION


def test_parse_major() -> None:
    assert parse_major(None) == PROTOCOL_VERSION
    assert parse_major("") == PROTOCOL_VERSION
    assert parse_major("3.1") == 3
    assert parse_major("x") is None


def test_health_reply_is_exactly_the_exported_health_schema(client: TestClient) -> None:
    from backend.protocol.wire import HealthPublic

    body = client.get("/health").json()
    assert set(body) == set(HealthPublic.model_fields), "update HealthPublic in backend/api/health.py"
    HealthPublic.model_validate(body)
