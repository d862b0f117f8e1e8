"""The app's routes, read from `app.routes`, so the security tests cover a route the day it is added."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from starlette.routing import Mount, WebSocketRoute

from backend.security.middleware import is_public

READS = ("GET", "HEAD", "OPTIONS")
_PARAM = re.compile(r"{([^}:]+)(?::[^}]+)?}")


@dataclass(frozen=True)
class RouteCase:
    kind: str  # "http" | "websocket"
    method: str
    path: str  # the template, e.g. /v1/agents/{agent_id}
    takes_body: bool = False  # the route declares a request body (FastAPI reads and validates it)

    @property
    def is_read(self) -> bool:
        return self.method in READS

    def url(self, ids: dict[str, Any]) -> str:
        """The path with each `{param}` filled from `ids` (a KeyError names a param nobody seeded)."""
        return _PARAM.sub(lambda m: str(ids[m.group(1)]), self.path)

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


def _flatten(routes: list[Any]) -> list[Any]:
    flat: list[Any] = []
    for route in routes:
        if hasattr(route, "effective_route_contexts"):  # FastAPI >= 0.16x keeps included routers whole
            for ctx in route.effective_route_contexts():
                flat.append(
                    (ctx.path or (ctx.starlette_route or ctx.original_route).path, ctx.original_route)
                )
        else:
            flat.append((route.path, route))
    return flat


def route_cases(app: Any) -> list[RouteCase]:
    """Every HTTP method and WebSocket the app answers (HEAD left out: it follows GET); mounts skipped."""
    cases = []
    for path, route in _flatten(app.routes):
        if isinstance(route, Mount):
            continue
        if isinstance(route, WebSocketRoute) or type(route).__name__ == "APIWebSocketRoute":
            cases.append(RouteCase("websocket", "GET", path))
            continue
        # A route that reads its body as a stream (world import) declares it in the OpenAPI schema only.
        body = getattr(route, "body_field", None) is not None or "requestBody" in (
            getattr(route, "openapi_extra", None) or {}
        )
        for method in sorted(set(getattr(route, "methods", None) or ()) - {"HEAD"}):
            cases.append(RouteCase("http", method, path, body))
    return cases


def protected_cases(app: Any) -> list[RouteCase]:
    return [case for case in route_cases(app) if not is_public(case.path)]
