"""The dashboard with keys: a login form, a cookie (HttpOnly, SameSite=Strict, not the key itself) that the
pages' own fetches and WebSocket ride on, and no write controls for the viewer key."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.app import create_app
from backend.scripted import ScriptedLLM
from backend.security.keys import COOKIE_NAME
from tests.conftest import make_client
from tests.security.conftest import ADMIN, ADMIN_KEY, VIEWER_KEY, secured_settings


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[TestClient]:
    """A browser-like client (keeps cookies) on a keyed server with one agent."""
    with TestClient(create_app(secured_settings(tmp_path), llm=ScriptedLLM(seed=0))) as client:
        agent = {"name": "ハナ", "traits": ["明るい"]}
        assert client.put("/v1/agents/hana", json=agent, headers=ADMIN).status_code == 201
        yield client


def _login(client: TestClient, key: str, next_path: str = "/") -> Any:
    return client.post("/login", data={"key": key, "next": next_path}, follow_redirects=False)


def _boot(html: str) -> dict[str, Any]:
    match = re.search(r'<script id="machi-boot" type="application/json">(.*?)</script>', html, re.S)
    assert match, "page has no boot record"
    return json.loads(match.group(1))  # type: ignore[no-any-return]


def test_pages_send_a_browser_without_a_key_to_the_login_form(browser: TestClient) -> None:
    response = browser.get("/agents/hana?world=default", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/login?next=%2Fagents%2Fhana%3Fworld%3Ddefault"
    form = browser.get(response.headers["location"])
    assert form.status_code == 200 and 'name="key"' in form.text and 'type="password"' in form.text
    assert 'value="/agents/hana?world=default"' in form.text


def test_a_wrong_key_is_refused_and_sets_no_cookie(browser: TestClient) -> None:
    response = _login(browser, "not-the-key")
    assert response.status_code == 401 and "not right" in response.text
    assert COOKIE_NAME not in response.headers.get("set-cookie", "")
    assert browser.get("/", follow_redirects=False).status_code == 303


def test_login_sets_a_strict_httponly_cookie_that_is_not_the_key(browser: TestClient) -> None:
    response = _login(browser, ADMIN_KEY, "/agents/hana")
    assert response.status_code == 303 and response.headers["location"] == "/agents/hana"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE_NAME}=") and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert ADMIN_KEY not in cookie
    page = browser.get("/agents/hana")
    assert page.status_code == 200 and "Sign out" in page.text
    # The page's own fetches and WebSocket carry the cookie (same origin): no key in JavaScript.
    assert browser.get("/v1/agents/hana").status_code == 200
    assert browser.post("/v1/agents/hana/memories/retrieve", json={"query": "カフェ"}).status_code == 200
    with browser.websocket_connect("/v1/events") as ws:
        assert ws is not None


def test_viewer_login_hides_write_controls_and_cannot_write(browser: TestClient) -> None:
    assert _login(browser, VIEWER_KEY).status_code == 303
    caps = _boot(browser.get("/agents/hana").text)["caps"]
    assert caps["retrieve"] is False and caps["judge"] is False and caps["memories"] is True
    assert browser.get("/v1/agents/hana/memories").status_code == 200
    # The retrieval probe updates last_accessed_at (it steers what the agent recalls next): a write.
    refused = browser.post("/v1/agents/hana/memories/retrieve", json={"query": "カフェ"})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert browser.put("/v1/agents/hana", json={"name": "乗っ取り"}).status_code == 403
    assert browser.get("/v1/agents/hana").json()["name"] == "ハナ"


def test_admin_login_keeps_write_controls(browser: TestClient) -> None:
    assert _login(browser, ADMIN_KEY).status_code == 303
    caps = _boot(browser.get("/agents/hana").text)["caps"]
    assert caps["retrieve"] is True and caps["judge"] is True


@pytest.mark.parametrize("target", ["//evil.example/x", "https://evil.example/", "/\\evil.example"])
def test_login_never_redirects_off_site(browser: TestClient, target: str) -> None:
    response = _login(browser, ADMIN_KEY, target)
    assert response.status_code == 303 and response.headers["location"] == "/"


def test_logout_drops_the_cookie(browser: TestClient) -> None:
    assert _login(browser, ADMIN_KEY).status_code == 303
    out = browser.post("/logout", follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert f'{COOKIE_NAME}=""' in out.headers["set-cookie"] or "Max-Age=0" in out.headers["set-cookie"]
    browser.cookies.clear()  # what the browser does with the expired cookie
    assert browser.get("/", follow_redirects=False).status_code == 303


def test_a_changed_key_logs_the_browser_out(browser: TestClient, tmp_path: Path) -> None:
    assert _login(browser, ADMIN_KEY).status_code == 303
    token = browser.cookies[COOKIE_NAME]
    rotated = secured_settings(tmp_path, machi_api_key="a-brand-new-key-123")
    with TestClient(create_app(rotated, llm=ScriptedLLM(seed=0))) as other:
        other.cookies.set(COOKIE_NAME, token)
        assert other.get("/v1/agents").status_code == 401


def test_without_keys_there_is_no_login(settings: Any, scripted: ScriptedLLM) -> None:
    with make_client(settings, scripted) as client:
        assert client.get("/login", follow_redirects=False).headers["location"] == "/"
        page = client.get("/")
        assert page.status_code == 200 and "Sign out" not in page.text
        assert client.get("/v1/agents").status_code == 200
