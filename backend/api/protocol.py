"""Protocol versioning: clients send `X-Machi-Protocol: <major>[.<minor>]`; unsupported majors get a 400.

A pure ASGI middleware rather than a per-router dependency so every `/v1` route (present and future) is
covered without each router opting in. `/health` and the dashboard stay reachable with any header, so a
client on the wrong version can still ask which version the server speaks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend import PROTOCOL_VERSION
from backend.errors import error_body

HEADER = "X-Machi-Protocol"
_HEADER_KEY = HEADER.lower().encode("latin-1")
#: Protocol majors this server answers; a missing header means the current one. Version 1 clients (before
#: visitors, groups and actions) are served: their requests are valid version-2 requests, and the replies only
#: gained fields, which Unity's JsonUtility and the v1 C# package ignore.
SUPPORTED_VERSIONS: tuple[int, ...] = (1, PROTOCOL_VERSION)
#: Only the versioned API is checked; /health, /docs and the dashboard answer any client.
CHECKED_PREFIX = "/v1/"


def parse_major(value: str | None) -> int | None:
    """The major version in a header value ("1", "1.2"), the current one when absent, None when unreadable."""
    if value is None or not value.strip():
        return PROTOCOL_VERSION
    major, _, _ = value.strip().partition(".")
    # isdigit() alone takes "²" and other digits int() refuses (a 500): ASCII digits only.
    return int(major) if major.isascii() and major.isdigit() else None


def _header(scope: Scope) -> str | None:
    headers: Iterable[tuple[bytes, bytes]] = scope.get("headers", [])
    for key, value in headers:
        if key == _HEADER_KEY:
            return value.decode("latin-1")
    return None


def rejection(value: str) -> dict[str, object]:
    served = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
    return error_body(
        "unsupported_protocol",
        f"{HEADER}: {value[:40]!r} is not served; this server speaks protocol version(s) {served}. "
        "Update the client package or run a matching server.",
        {"header": HEADER, "value": value[:40], "supported": list(SUPPORTED_VERSIONS)},
    )


class ProtocolVersionMiddleware:
    """Rejects `/v1` requests with an unsupported protocol major; tags every HTTP answer with the version."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        value = _header(scope)
        if scope["path"].startswith(CHECKED_PREFIX) and parse_major(value) not in SUPPORTED_VERSIONS:
            await _send_json(send, 400, rejection(value or ""))
            return

        async def tagged(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((_HEADER_KEY, str(PROTOCOL_VERSION).encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, tagged)


async def _send_json(send: Send, status: int, body: dict[str, object]) -> None:
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode("latin-1")),
        (_HEADER_KEY, str(PROTOCOL_VERSION).encode("latin-1")),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
