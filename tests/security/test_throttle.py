"""Failed authentications per address: past AUTH_FAILURE_LIMIT wrong keys in AUTH_FAILURE_WINDOW_S, an address's
wrong keys get 429 with Retry-After (the JSON envelope; the sign-in form for the dashboard), on HTTP routes, the
events WebSocket and the login form. A right key is never refused, a success does not reset the count, a missing
key is not a failure, other addresses are not affected, and the addresses remembered stay bounded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketDenialResponse

from backend.app import create_app
from backend.scripted import ScriptedLLM
from backend.security.throttle import FailureThrottle
from tests.security.conftest import ADMIN, ADMIN_KEY, VIEWER, secured_settings

LIMIT = 3
WRONG = {"X-Api-Key": "guess-0001"}


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[TestClient]:
    settings = secured_settings(tmp_path, auth_failure_limit=LIMIT, auth_failure_window_s=600)
    with TestClient(create_app(settings, llm=ScriptedLLM(seed=0)), client=("10.0.0.7", 40000)) as client:
        yield client


def other_address(client: TestClient) -> TestClient:
    other = TestClient(client.app, client=("10.0.0.8", 40000))
    other.portal = client.portal  # the same running app (lifespan started by `client`)
    return other


def assert_throttled(response: object) -> None:
    assert response.status_code == 429, response.text  # type: ignore[attr-defined]
    assert int(response.headers["retry-after"]) >= 1  # type: ignore[attr-defined]
    error = response.json()["error"]  # type: ignore[attr-defined]
    assert error["code"] == "too_many_requests" and error["details"]["retry_after_s"] >= 1
    assert "AUTH_FAILURE_LIMIT" in error["message"]


def test_wrong_keys_past_the_limit_get_429_and_the_right_key_still_works(guarded: TestClient) -> None:
    answers = [guarded.get("/v1/agents", headers=WRONG).status_code for _ in range(LIMIT)]
    assert answers == [401] * LIMIT
    assert_throttled(guarded.get("/v1/agents", headers={"Authorization": "Bearer guess-0002"}))
    # A right key from the same address is not slowed, and does not reset the count.
    assert guarded.get("/v1/agents", headers=ADMIN).status_code == 200
    assert guarded.get("/v1/agents", headers=VIEWER).status_code == 200
    assert_throttled(guarded.post("/v1/agents/x/state", json={}, headers=WRONG))
    # Another address is judged on its own failures.
    assert other_address(guarded).get("/v1/agents", headers=WRONG).status_code == 401


def test_a_missing_key_is_not_a_failed_authentication(guarded: TestClient) -> None:
    for _ in range(LIMIT * 3):
        assert guarded.get("/v1/agents").status_code == 401
    assert guarded.get("/v1/agents", headers=WRONG).status_code == 401  # the first wrong key


def test_the_events_websocket_and_forged_cookies_count_too(guarded: TestClient) -> None:
    for _ in range(LIMIT):
        with pytest.raises(WebSocketDenialResponse) as denied:
            with guarded.websocket_connect("/v1/events?api_key=guess"):
                pass
        assert denied.value.status_code == 401
    with pytest.raises(WebSocketDenialResponse) as denied:
        with guarded.websocket_connect("/v1/events", headers={"Cookie": "machi_session=forged"}):
            pass
    assert_throttled(denied.value)
    with guarded.websocket_connect(f"/v1/events?api_key={ADMIN_KEY}") as ws:
        ws.close()


def test_the_sign_in_form_counts_wrong_keys(guarded: TestClient) -> None:
    for _ in range(LIMIT):
        form = guarded.post("/login", data={"key": "guess", "next": "/"}, follow_redirects=False)
        assert form.status_code == 401 and "That key is not right." in form.text
    refused = guarded.post("/login", data={"key": "guess", "next": "/"}, follow_redirects=False)
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert "Too many wrong keys" in refused.text
    assert_throttled(guarded.get("/v1/agents", headers=WRONG))  # one count for the form and the API
    signed_in = guarded.post("/login", data={"key": ADMIN_KEY, "next": "/"}, follow_redirects=False)
    assert signed_in.status_code == 303


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_window_slides_and_keeps_refusing_an_address_that_keeps_guessing() -> None:
    clock = Clock()
    throttle = FailureThrottle(2, 60.0, clock=clock)
    assert [throttle.record_failure("a"), throttle.record_failure("a")] == [None, None]
    clock.now += 10
    assert throttle.record_failure("a") == 50  # the first failure leaves the window in 50 s
    clock.now += 1
    assert throttle.record_failure("a") == 59  # a refused guess counts: guessing on keeps it refused
    assert throttle.record_failure("b") is None  # another address
    clock.now += 61
    assert throttle.record_failure("a") is None  # it stopped for a window: within the limit again
    assert FailureThrottle(0, 60.0, clock=clock).record_failure("a") is None  # 0: off


def test_the_addresses_remembered_stay_bounded() -> None:
    throttle = FailureThrottle(2, 60.0, max_addresses=100, clock=Clock())
    for i in range(5_000):
        throttle.record_failure(f"10.1.{i // 256}.{i % 256}")
    assert throttle.tracked() == 100
    throttle.record_failure("10.9.9.9")
    throttle.record_failure("10.9.9.9")
    assert throttle.record_failure("10.9.9.9") is not None  # the most recent ones are the ones kept
