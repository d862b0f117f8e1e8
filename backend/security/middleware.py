"""Pure ASGI middlewares (HTTP and WebSocket): the key check and the request body limit and deadline.

Both sit in front of every route, so a route added tomorrow is protected without opting in. Answers use the
API's error body `{"error": {"code", "message", "details"}}`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import quote

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.config import Settings
from backend.errors import PayloadTooLarge, RequestTimeout, error_body
from backend.security.keys import ROLE_STATE_KEY, VIEWER, KeyRing
from backend.security.throttle import FailureThrottle, client_address

#: Reachable without a key: liveness, the login page, static files and the API's own description
#: (the OpenAPI schema says what the routes are, not what is stored; it is public on purpose).
PUBLIC_PATHS = frozenset(
    {"/health", "/login", "/logout", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"}
)
PUBLIC_PREFIXES = ("/static/",)
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
IMPORT_PATH = "/v1/world/import"


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


class AuthMiddleware:
    """With MACHI_API_KEY set: 401 without a valid key, 403 when the viewer key tries to write, 429 for a
    wrong key from an address past AUTH_FAILURE_LIMIT failed authentications (see throttle.py).

    Dashboard pages (GETs outside /v1) send a browser without a key to the login page instead of a 401.
    """

    def __init__(self, app: ASGIApp, keys: KeyRing, throttle: FailureThrottle | None = None) -> None:
        self.app = app
        self.keys = keys
        self.throttle = throttle or FailureThrottle(0, 1.0)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        role = self.keys.role(scope)
        path: str = scope["path"]
        if role is None and not is_public(path):
            await self._refuse_unknown(scope, receive, send)
            return
        method = scope.get("method", "GET")
        if role == VIEWER and scope["type"] == "http" and method not in READ_METHODS and not is_public(path):
            message = (
                f"the viewer key is read-only: {method} {path} needs MACHI_API_KEY "
                "(viewers may read every GET route and the event WebSocket)"
            )
            await send_error(send, 403, error_body("forbidden", message, {"method": method, "path": path}))
            return
        scope = {**scope, "state": {**(scope.get("state") or {}), ROLE_STATE_KEY: role}}
        await self.app(scope, receive, send)

    async def _refuse_unknown(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        if self.keys.presents_credentials(scope):  # a wrong key is a failed authentication; none is not
            wait = self.throttle.record_failure(client_address(scope))
            if wait is not None:
                await refuse_throttled(scope, receive, send, wait)
                return
        if scope["type"] == "websocket":
            await deny_websocket(scope, receive, send)
        elif scope.get("method") in ("GET", "HEAD") and not path.startswith("/v1/"):
            query = scope.get("query_string", b"").decode("latin-1")
            target = path + (f"?{query}" if query else "")
            await send_redirect(send, f"/login?next={quote(target, safe='')}")
        else:
            await send_error(send, 401, unauthorized_body(), [(b"www-authenticate", b"Bearer")])


def unauthorized_body() -> dict[str, Any]:
    return error_body(
        "unauthorized",
        "a valid API key is required: send 'Authorization: Bearer <key>' or 'X-Api-Key: <key>' "
        "(WebSockets may use ?api_key=<key>)",
    )


def throttled_body(wait: int) -> dict[str, Any]:
    return error_body(
        "too_many_requests",
        f"too many failed authentications from this address: retry in {wait} s with the right key "
        "(AUTH_FAILURE_LIMIT wrong keys per AUTH_FAILURE_WINDOW_S)",
        {"retry_after_s": wait},
    )


async def refuse_throttled(scope: Scope, receive: Receive, send: Send, wait: int) -> None:
    """429 with Retry-After (a WebSocket handshake too, where the server can answer one over HTTP)."""
    retry_after = (b"retry-after", str(wait).encode("latin-1"))
    if scope["type"] == "websocket":
        await deny_websocket(scope, receive, send, 429, throttled_body(wait), [retry_after])
    else:
        await send_error(send, 429, throttled_body(wait), [retry_after])


class BodyLimitMiddleware:
    """413 for bodies past MAX_BODY_BYTES (MAX_IMPORT_BYTES for world import), counted on the stream; 408 for
    bodies that take longer than HTTP_BODY_TIMEOUT_S (HTTP_IMPORT_TIMEOUT_S) to arrive.

    The declared Content-Length is refused before reading; a chunked body is read up to the limit and
    refused as soon as it grows past it. A body still arriving at the deadline is answered 408 and its
    connection closed, so a client sending a byte now and then cannot hold a connection for ever. The
    accepted body is handed to the app whole, except a world import's: the route reads that as a stream
    (never held whole), through a receive that counts it and keeps its deadline, raising PayloadTooLarge or
    RequestTimeout in the route. WebSockets pass untouched (they have no body to time).
    """

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.default_limit = settings.max_body_bytes
        self.import_limit = settings.max_import_bytes
        self.default_timeout = settings.http_body_timeout_s
        self.import_timeout = settings.http_import_timeout_s

    def limit_for(self, path: str) -> int:
        return self.import_limit if path.rstrip("/") == IMPORT_PATH else self.default_limit

    def timeout_for(self, path: str) -> float:
        return self.import_timeout if path.rstrip("/") == IMPORT_PATH else self.default_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, timeout = self.limit_for(scope["path"]), self.timeout_for(scope["path"])
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await send_error(send, 413, too_large_body(limit, declared))
            return
        if scope["path"].rstrip("/") == IMPORT_PATH:
            await self.app(scope, _counted(receive, limit, timeout), send)
            return
        try:
            async with asyncio.timeout(timeout):
                read = await _read_body(receive, limit)
        except _TooLarge:
            await send_error(send, 413, too_large_body(limit, None))
            return
        except TimeoutError:
            await send_error(send, 408, slow_body(timeout), [(b"connection", b"close")])
            return
        if isinstance(read, bytes):
            read = {"type": "http.request", "body": read, "more_body": False}
        await self.app(scope, _replay([read], receive), send)  # a disconnect is the app's to see


class _TooLarge(Exception):
    """The body grew past its limit."""


async def _read_body(receive: Receive, limit: int) -> bytes | Message:
    """The whole body, or the first message that is not part of it (the client went away)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return message
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def slow_body(timeout: float) -> dict[str, Any]:
    return error_body(
        "request_timeout",
        f"the request body did not arrive within {timeout:g} s (HTTP_BODY_TIMEOUT_S; "
        "world import: HTTP_IMPORT_TIMEOUT_S)",
        {"timeout_s": timeout},
    )


def too_large_body(limit: int, declared: int | None) -> dict[str, Any]:
    error = too_large(limit, declared)
    return error_body(error.code, error.message, error.details)


def too_large(limit: int, declared: int | None) -> PayloadTooLarge:
    sent = f" (Content-Length {declared})" if declared is not None else ""
    return PayloadTooLarge(
        f"request body is larger than {limit} bytes{sent}",
        details={"limit_bytes": limit, "content_length": declared},
    )


def _counted(receive: Receive, limit: int, timeout: float) -> Receive:
    """A receive that passes the body on as it arrives and raises PayloadTooLarge once past `limit`, or
    RequestTimeout when the body is still arriving `timeout` seconds on (the app's error handler answers 413
    or 408, as for a buffered body)."""
    size, done = 0, False
    deadline = asyncio.get_running_loop().time() + timeout

    async def counted() -> Message:
        nonlocal size, done
        if done:  # the body is in: what follows (a disconnect) has no deadline
            return await receive()
        left = deadline - asyncio.get_running_loop().time()
        try:
            async with asyncio.timeout(max(left, 0.0)):
                message = await receive()
        except TimeoutError:
            raise RequestTimeout(
                f"the import body did not arrive within {timeout:g} s (HTTP_IMPORT_TIMEOUT_S)",
                details={"timeout_s": timeout},
            ) from None
        if message["type"] == "http.request":
            size += len(message.get("body", b""))
            if size > limit:
                raise too_large(limit, None)
            done = not message.get("more_body", False)
        return message

    return counted


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isascii() and text.isdigit() else None
    return None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A receive that gives the buffered messages first, then the real stream (disconnects)."""
    pending = list(messages)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay


async def send_error(
    send: Send, status: int, body: dict[str, Any], extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode("latin-1")),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


async def send_redirect(send: Send, location: str) -> None:
    headers = [(b"location", location.encode("latin-1")), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


async def deny_websocket(
    scope: Scope,
    receive: Receive,
    send: Send,
    status: int = 401,
    body: dict[str, Any] | None = None,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """Refuse the handshake: an HTTP answer (401 by default) where the server can send one, else a
    policy-violation close."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    if "websocket.http.response" in (scope.get("extensions") or {}):
        payload = json.dumps(body or unauthorized_body()).encode("utf-8")
        headers = [(b"content-type", b"application/json"), *(extra or [(b"www-authenticate", b"Bearer")])]
        await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": payload})
    else:
        reason = "unauthorized" if status == 401 else "too many failed authentications"
        await send({"type": "websocket.close", "code": 1008, "reason": reason})
