"""`MachiClient`: the Machi protocol over HTTP with httpx, with the C# client's rules.

- every request carries `X-Machi-Protocol`, the world (`X-Machi-World`) and the API key when given;
- each attempt is bounded by a timeout; network errors, timeouts and 5xx are retried with exponential
  backoff and jitter; a 4xx is never retried and surfaces as `MachiApiError` with the server's code;
- a 429 (a rate limit, e.g. a visitor's PLAYER_LINES_PER_MINUTE) is waited out once when its Retry-After is
  within `RetryPolicy.max_rate_limit_wait_s`, otherwise raised as `MachiRateLimitError` naming the limit;
- streamed turns (agents' and visitors') read `delta`/`reset`/`reply`/`error` server-sent events.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote

import httpx

from machi_client.sse import SseEvent, SseParser

PROTOCOL_VERSION = 2
JSON = dict[str, Any]
PLAYER_PREFIX = "player:"


class MachiApiError(Exception):
    """The server refused the request (4xx), or failed it on the last attempt (5xx)."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(f"Machi {status} {code}: {message}")
        self.status, self.code, self.message, self.details = status, code, message, details


class MachiRateLimitError(MachiApiError):
    """429: a rate limit, named in `limit` (e.g. PLAYER_LINES_PER_MINUTE, WORLD_PLAYER_LINES_PER_MINUTE; None
    when the server named none); `retry_after_s` says when to send the (unstored) line again."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Any,
        limit: str | None,
        retry_after_s: float | None,
    ) -> None:
        super().__init__(status, code, message, details)
        self.limit, self.retry_after_s = limit, retry_after_s


class MachiTransportError(Exception):
    """No answer after the last attempt (network error, timeout or a stream cut before its reply)."""

    def __init__(self, failure: str, attempts: int, message: str) -> None:
        super().__init__(f"Machi request failed after {attempts} attempt(s) ({failure}): {message}")
        self.failure, self.attempts = failure, attempts


@dataclass
class RetryPolicy:
    max_retries: int = 3
    initial_backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    #: The longest Retry-After of a 429 waited out (once per call) before asking again (C#: MaxRateLimitWait).
    max_rate_limit_wait_s: float = 2.0

    @staticmethod
    def is_retryable(status: int, network_error: bool = False, timed_out: bool = False) -> bool:
        return network_error or timed_out or 500 <= status <= 599

    def waits_for_rate_limit(self, status: int, retry_after_s: float | None, waited_before: bool) -> bool:
        """A 429 is asked again once, when the server said how long and that is within the budget."""
        return (
            status == 429
            and not waited_before
            and retry_after_s is not None
            and retry_after_s <= self.max_rate_limit_wait_s
        )

    def backoff(self, attempt: int, jitter01: float) -> float:
        """initial * 2^attempt, capped, scaled by 0.5-1.0 (the C# RetryPolicy.Backoff)."""
        base = min(self.initial_backoff_s * 2 ** min(max(attempt, 0), 16), self.max_backoff_s)
        return base * (0.5 + 0.5 * min(max(jitter01, 0.0), 1.0))


@dataclass
class CallLog:
    """What the client saw: status codes per call and every failure (the e2e test asserts on this)."""

    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    retries: int = 0


class MachiClient:
    """One server, one world. Methods return the decoded JSON of the 2xx answer."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        use_bearer: bool = False,
        world_id: str | None = None,
        timeout_s: float = 30.0,
        turn_timeout_s: float = 25.0,
        retry: RetryPolicy | None = None,
        seed: int | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        headers = {"X-Machi-Protocol": str(PROTOCOL_VERSION), "Accept": "application/json"}
        if world_id:
            headers["X-Machi-World"] = world_id
        if api_key:
            headers["Authorization" if use_bearer else "X-Api-Key"] = (
                f"Bearer {api_key}" if use_bearer else api_key
            )
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, transport=transport)
        self.timeout_s, self.turn_timeout_s = timeout_s, turn_timeout_s
        self.retry = retry or RetryPolicy()
        self._jitter = random.Random(seed)
        self._sleep = sleep
        self.log = CallLog()

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MachiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the calls, in the order a Unity agent makes them (unity_protocol/README.md) ---
    def health(self) -> JSON:
        return self._send("GET", "/health")

    def pois(self) -> list[JSON]:
        return self._send("GET", "/v1/pois")

    def put_poi(self, poi_id: str, poi: JSON) -> JSON:
        return self._send("PUT", f"/v1/pois/{poi_id}", poi)

    def agents(self) -> list[JSON]:
        return self._send("GET", "/v1/agents")

    def agent(self, agent_id: str) -> JSON:
        return self._send("GET", f"/v1/agents/{agent_id}")

    def put_agent(self, agent_id: str, persona: JSON) -> JSON:
        return self._send("PUT", f"/v1/agents/{agent_id}", persona)

    def report_state(self, agent_id: str, report: JSON) -> JSON:
        return self._send("POST", f"/v1/agents/{agent_id}/state", report)

    def make_plan(self, agent_id: str, request: JSON) -> JSON:
        return self._send("POST", f"/v1/agents/{agent_id}/plan", request, timeout=self.turn_timeout_s)

    def plan(self, agent_id: str, day: int) -> JSON:
        return self._send("GET", f"/v1/agents/{agent_id}/plan", params={"day": day})

    def plan_now(self, agent_id: str, day: int, time_of_day: float) -> JSON:
        params = {"day": day, "time_of_day": round(time_of_day, 4)}
        return self._send(
            "GET", f"/v1/agents/{agent_id}/plan/now", params=params, timeout=self.turn_timeout_s
        )

    def world_actions(self) -> JSON:
        """The action types a reply may carry and this world's gestures."""
        return self._send("GET", "/v1/world/actions")

    def put_gestures(self, gestures: list[str] | None) -> JSON:
        """Declare the gestures Unity's animator plays (None: back to the default list)."""
        return self._send("PUT", "/v1/world/gestures", {"gestures": gestures})

    def turn(self, request: JSON) -> JSON:
        """One line. Retrying is safe: the same session_id and history length returns the stored reply. A
        group sends `participants` (the same list every turn); ask the reply's `next_speaker` next."""
        return self._send("POST", "/v1/conversation/turn", request, timeout=self.turn_timeout_s)

    def put_player(self, player_id: str, player: JSON) -> JSON:
        """Register (or rename) a visitor: `player:` and an id (the prefix is added when left out)."""
        return self._send("PUT", f"/v1/players/{player_path(player_id)}", player)

    def player(self, player_id: str) -> JSON:
        return self._send("GET", f"/v1/players/{player_path(player_id)}")

    def players(self) -> JSON:
        return self._send("GET", "/v1/players")

    def player_turn(self, request: JSON) -> JSON:
        """A visitor's line and the agent's reply. Retry-safe like `turn` (the same history gets the stored
        line and reply). Raises MachiRateLimitError on a 429 not waited out, MachiApiError 422 naming
        PLAYER_MAX_CHARS for a line too long."""
        return self._send("POST", "/v1/conversation/player-turn", request, timeout=self.turn_timeout_s)

    def action_result(self, agent_id: str, result: JSON) -> JSON:
        """What became of a reply's action (`{"action", "outcome", "detail", "session_id", "day",
        "time_of_day"}`); the reply is the memory the agent keeps."""
        return self._send("POST", f"/v1/agents/{agent_id}/action-result", result)

    def end(
        self, session_id: str, reason: str, *, day: int | None = None, time_of_day: float | None = None
    ) -> JSON:
        body: JSON = {"session_id": session_id, "reason": reason}
        if day is not None:
            body["day"] = day
        if time_of_day is not None:
            body["time_of_day"] = round(time_of_day, 4)
        return self._send("POST", "/v1/conversation/end", body)

    def conversation(self, session_id: str) -> JSON:
        return self._send("GET", f"/v1/conversations/{session_id}")

    def llm_stats(self, window_s: int = 3600) -> JSON:
        """Model call counts per purpose (errors, repaired and invalid replies), queue and fallback turns."""
        return self._send("GET", "/v1/llm-calls/stats", params={"window_s": window_s})  # type: ignore[no-any-return]

    def memories(self, agent_id: str, *, type: str | None = None, limit: int = 50) -> JSON:  # noqa: A002
        params: JSON = {"limit": limit} | ({"type": type} if type else {})
        return self._send("GET", f"/v1/agents/{agent_id}/memories", params=params)

    def add_memory(self, agent_id: str, memory: JSON) -> JSON:
        return self._send("POST", f"/v1/agents/{agent_id}/memories", memory)

    def retrieve(self, agent_id: str, query: str, *, k: int | None = None) -> JSON:
        body: JSON = {"query": query} | ({"k": k} if k else {})
        return self._send("POST", f"/v1/agents/{agent_id}/memories/retrieve", body)

    def interview(self, agent_id: str, question: str, **when: Any) -> JSON:
        """The agent answers from memory and nothing it remembers changes (`when`: day, time_of_day)."""
        body: JSON = {"question": question, **when}
        return self._send("POST", f"/v1/agents/{agent_id}/interview", body, timeout=self.turn_timeout_s + 15)

    def start_council(self, proposal: JSON) -> JSON:
        """202 `{id, number, label, status}`: the council deliberates in the background (`council(id)`).
        Not retry-safe: a retry after a lost answer may start a second council."""
        return self._send("POST", "/v1/council", proposal)

    def council(self, council_id: str) -> JSON:
        return self._send("GET", f"/v1/council/{council_id}")

    def judge(self, request: JSON) -> JSON:
        """Scores `content` on each criterion (1-10); 503 llm_error when the judge model fails twice."""
        return self._send("POST", "/v1/judge", request, timeout=self.turn_timeout_s + 15)

    def turn_stream(
        self,
        request: JSON,
        on_delta: Callable[[str], None] | None = None,
        on_reset: Callable[[], None] | None = None,
    ) -> JSON:
        """A streamed turn: `on_delta` gets each new piece of the line, `on_reset` says to clear it."""
        return self._stream("/v1/conversation/turn/stream", request, on_delta, on_reset)

    def player_turn_stream(
        self,
        request: JSON,
        on_delta: Callable[[str], None] | None = None,
        on_reset: Callable[[], None] | None = None,
    ) -> JSON:
        """A visitor's line with the agent's reply streamed (as `turn_stream`); returns the PlayerTurnResult."""
        return self._stream("/v1/conversation/player-turn/stream", request, on_delta, on_reset)

    # --- transport ---
    def _stream(
        self,
        path: str,
        request: JSON,
        on_delta: Callable[[str], None] | None,
        on_reset: Callable[[], None] | None,
    ) -> JSON:
        attempt, waited = 0, False
        while True:
            collected = _StreamedTurn(on_delta, on_reset)
            failure = self._attempt_stream(path, request, collected)
            if failure is None and collected.reply is not None:
                return collected.reply
            failure = failure or collected.failure()
            if self._wait_for_rate_limit(failure, waited):
                waited = True  # refused before streaming: nothing was shown
                continue
            if collected.shown and on_reset is not None and failure.retryable:
                on_reset()  # the next attempt streams the whole line again
            self._backoff_or_raise(failure, attempt)
            attempt += 1

    def _send(self, method: str, path: str, body: Any = None, *, params: JSON | None = None,
              timeout: float | None = None) -> Any:  # fmt: skip
        attempt, waited = 0, False
        while True:
            outcome = self._attempt(method, path, body, params, timeout or self.timeout_s)
            if not isinstance(outcome, _Failure):
                return outcome
            if self._wait_for_rate_limit(outcome, waited):
                waited = True  # a rate limit's wait is not one of the max_retries
                continue
            self._backoff_or_raise(outcome, attempt)
            attempt += 1

    def _wait_for_rate_limit(self, failure: _Failure, waited_before: bool) -> bool:
        if not self.retry.waits_for_rate_limit(failure.status, failure.retry_after_s, waited_before):
            return False
        self.log.failures.append(f"rate limit 429: waiting {failure.retry_after_s} s")
        self._sleep(failure.retry_after_s or 0.0)
        return True

    def _attempt(self, method: str, path: str, body: Any, params: JSON | None, timeout: float) -> Any:
        try:
            reply = self._http.request(method, path, json=body, params=params, timeout=timeout)
        except httpx.TimeoutException as exc:
            return _Failure("timeout", True, 0, str(exc) or "timed out")
        except httpx.TransportError as exc:
            return _Failure("network", True, 0, str(exc))
        self.log.statuses[reply.status_code] += 1
        if 200 <= reply.status_code < 300:
            return reply.json() if reply.content else None
        return _Failure.of(reply)

    def _attempt_stream(self, path: str, request: JSON, collected: _StreamedTurn) -> _Failure | None:
        parser = SseParser()
        try:
            with self._http.stream(
                "POST", path, json=request, timeout=self.turn_timeout_s, headers={"Accept": "text/event-stream"},
            ) as reply:  # fmt: skip
                self.log.statuses[reply.status_code] += 1
                if reply.status_code >= 300:
                    reply.read()
                    return _Failure.of(reply)
                for text in reply.iter_text():
                    for event in parser.feed(text):
                        collected.handle(event)
                for event in parser.feed("\n\n"):
                    collected.handle(event)
        except httpx.TimeoutException as exc:
            return _Failure("timeout", True, 0, str(exc) or "timed out")
        except httpx.TransportError as exc:
            return _Failure("network", True, 0, str(exc))
        return None

    def _backoff_or_raise(self, failure: _Failure, attempt: int) -> None:
        self.log.failures.append(f"{failure.kind} {failure.status}: {failure.text[:200]}")
        if not failure.retryable:
            raise failure.api_error()
        if attempt >= self.retry.max_retries:
            if failure.status >= 500:
                raise failure.api_error()
            raise MachiTransportError(failure.kind, attempt + 1, failure.text[:300])
        self.log.retries += 1
        self._sleep(self.retry.backoff(attempt, self._jitter.random()))


def player_id(player: str) -> str:
    """`guest-1` or `player:guest-1` as the protocol's `player:guest-1`."""
    return player if player.startswith(PLAYER_PREFIX) else PLAYER_PREFIX + player


def player_path(player: str) -> str:
    """A visitor's id as a path segment (the colon escaped, as the C# client's Uri.EscapeDataString does)."""
    return quote(player_id(player), safe="")


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """A Retry-After header in seconds: delay-seconds or an HTTP date (a past one is 0); None when absent or
    unreadable (the C# RetryPolicy.ParseRetryAfter)."""
    if not value or not value.strip():
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        try:
            at = parsedate_to_datetime(value.strip())
        except (TypeError, ValueError):
            return None
        if at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
        return max(0.0, (at - (now or datetime.now(UTC))).total_seconds())
    return seconds if seconds >= 0 and math.isfinite(seconds) else None


@dataclass
class _Failure:
    kind: str  # network | timeout | server | stream
    retryable: bool
    status: int
    text: str
    retry_after_s: float | None = None

    @classmethod
    def of(cls, reply: httpx.Response) -> _Failure:
        """A non-2xx answer (its Retry-After kept for a 429)."""
        retryable = RetryPolicy.is_retryable(reply.status_code)
        retry_after = parse_retry_after(reply.headers.get("Retry-After"))
        return cls("server", retryable, reply.status_code, reply.text, retry_after)

    def api_error(self) -> MachiApiError:
        try:
            error = json.loads(self.text)["error"]
            code, message, details = error["code"], error["message"], error.get("details")
        except (ValueError, KeyError, TypeError):
            code, message, details = f"http_{self.status}", self.text[:500], None
        if self.status != 429:
            return MachiApiError(self.status, code, message, details)
        named = details if isinstance(details, dict) else {}
        limit = named.get("limit")
        wait = self.retry_after_s
        if wait is None and isinstance(named.get("retry_after_s"), int | float):
            wait = float(named["retry_after_s"])
        return MachiRateLimitError(self.status, code, message, details, limit, wait)


class _StreamedTurn:
    def __init__(self, on_delta: Callable[[str], None] | None, on_reset: Callable[[], None] | None) -> None:
        self.on_delta, self.on_reset = on_delta, on_reset
        self.reply: JSON | None = None
        self.error: str | None = None
        self.shown = False

    def handle(self, event: SseEvent) -> None:
        if event.name == "delta":
            self.shown = True
            if self.on_delta:
                self.on_delta(json.loads(event.data)["text"])
        elif event.name == "reset" and self.on_reset:
            self.on_reset()
        elif event.name == "reply":
            self.reply = json.loads(event.data)
        elif event.name == "error":
            self.error = event.data

    def failure(self) -> _Failure:
        if self.error is None:
            return _Failure("stream", True, 200, "the stream ended without a reply event")
        code = json.loads(self.error).get("error", {}).get("code")
        # internal_error: the turn could not be stored, asking again is safe; other codes would repeat.
        return _Failure("server", code == "internal_error", 200, self.error)
