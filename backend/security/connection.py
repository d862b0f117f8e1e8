"""Slow and idle clients: the limits `machi serve` gives uvicorn, and the deadline uvicorn lacks.

Every open connection holds a file descriptor; a client that opens many and sends half a request on each
used to exhaust them (`Too many open files` for everyone else). uvicorn closes an idle keep-alive connection
after HTTP_KEEP_ALIVE_S and answers 503 past HTTP_MAX_CONCURRENCY, but it waits for ever for a request's head
(the request line and headers). `protocol_class` adds that deadline, HTTP_HEADER_TIMEOUT_S, and answers the
concurrency limit with the API's JSON error envelope instead of uvicorn's plain text. A request's body has its
own deadline in `BodyLimitMiddleware`, since the app reads it. WebSockets leave this protocol when they
upgrade: no deadline here applies to them (MAX_EVENT_SOCKETS bounds them in backend/api/events.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from backend.config import Settings
from backend.errors import error_body
from backend.security.middleware import send_error

log = logging.getLogger(__name__)

#: Seconds between two warnings that requests are refused at the concurrency limit (a flood logs once).
WARN_EVERY_S = 60.0
#: The soft limit on open files `machi serve` raises itself to, within the hard limit: a common default soft
#: limit, 1024, is used up by about a thousand connections (and SQLite needs descriptors too).
OPEN_FILES_WANTED = 65_536


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The keyword arguments `uvicorn.run` / `uvicorn.Config` take for the connection settings, and whose
    proxy headers uvicorn believes: only FORWARDED_ALLOW_IPS's (uvicorn itself would believe 127.0.0.1's, so
    any local process, or anything a local proxy passes on, could name itself another client and dodge
    AUTH_FAILURE_LIMIT: backend/security/throttle.py counts by the address uvicorn gives the app)."""
    trusted = settings.forwarded_allow_ips
    return {
        "timeout_keep_alive": settings.http_keep_alive_s,
        "limit_concurrency": settings.http_max_concurrency or None,
        "http": protocol_class(settings.http_header_timeout_s),
        "proxy_headers": bool(trusted),
        "forwarded_allow_ips": trusted or None,
    }


def raise_open_files(wanted: int = OPEN_FILES_WANTED) -> int | None:
    """Raise this process's soft limit on open files towards `wanted`, never past the hard limit.

    Returns:
        The soft limit now; None where the system has no such limit (Windows).
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):  # a system that refuses keeps the old limit; the server still runs
            log.warning("could not raise the open files limit from %d to %d", soft, target)
    return int(soft)


#: `uvicorn.run(..., workers=N)` starts its processes by pickling its config, and a class built per setting
#: cannot be pickled: those processes get this import path instead, whose class each builds from the
#: environment's settings (module `__getattr__` below).
PROTOCOL_FROM_ENVIRONMENT = f"{__name__}:EnvironmentProtocol"


def __getattr__(name: str) -> Any:
    if name == "EnvironmentProtocol":
        from backend.config import load_settings

        return protocol_class(load_settings().http_header_timeout_s)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def protocol_class(header_timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools when installed, else h11) with the head deadline and the JSON 503."""
    return type("MachiHTTPProtocol", (_Guarded, AutoHTTPProtocol), {"header_timeout_s": header_timeout_s})


class Busy:
    """The ASGI answer to a request past the concurrency limit: 503 in the error envelope, then close."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = error_body(
            "service_unavailable",
            f"the server has {self.limit} connections open or requests in progress (HTTP_MAX_CONCURRENCY): "
            "retry in a moment",
            {"limit": self.limit},
        )
        await send_error(send, 503, body, [(b"retry-after", b"1"), (b"connection", b"close")])


class _Guarded(asyncio.Protocol):
    """Mixed into uvicorn's HTTP protocol class; reads the attributes both of uvicorn's implementations keep."""

    header_timeout_s: float
    _warned_at = -WARN_EVERY_S  # class-wide: one warning per WARN_EVERY_S for the whole server
    # Set by uvicorn's protocol (h11_impl / httptools_impl).
    cycle: Any
    transport: asyncio.Transport
    connections: set[Any]
    tasks: set[Any]
    loop: asyncio.AbstractEventLoop
    limit_concurrency: int | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._head_timer: asyncio.TimerHandle | None = None
        super().__init__(*args, **kwargs)
        # uvicorn's own check answers in plain text: the `app` property below makes the same check.
        self._limit, self.limit_concurrency = self.limit_concurrency, None
        self._busy = Busy(self._limit or 0)

    @property
    def app(self) -> ASGIApp:
        """What uvicorn runs for the request whose head just arrived (it reads this once per request)."""
        limit = self._limit
        if limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit):
            now = time.monotonic()
            if now - _Guarded._warned_at >= WARN_EVERY_S:
                _Guarded._warned_at = now
                log.warning("requests refused with 503: %d connections open (HTTP_MAX_CONCURRENCY)", limit)
            return self._busy
        return self._app

    @app.setter
    def app(self, value: ASGIApp) -> None:
        self._app = value

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._in_request() or self not in self.connections:  # a request to serve, or a WebSocket now
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing() and not self._in_request():
            self._arm()  # the next request's head has the same deadline (idle time included)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _in_request(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _expire(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self._in_request() or self not in self.connections:
            return
        log.debug("closing a connection that sent no complete request head in %g s", self.header_timeout_s)
        self.transport.close()
