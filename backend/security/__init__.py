"""Who may call the server and how much they may send: API keys, the read-only viewer key, the limit on
failed authentications per address, body limits and deadlines, slow and idle connections.

`install(app, settings)` adds the two pure ASGI middlewares (see `middleware.py`); `keys.py` decides which
role a request holds; `throttle.py` answers an address past its failed authentications; `connection.py`
gives uvicorn its connection limits (`machi serve`). Keeping this out of the routers means a new route is
covered without opting in.

Owns: no tables; the key ring (admin and viewer keys) and the in-memory failed-authentication throttle.
Imports: config and errors (its answers use the same envelope as the API's, `errors.error_body`). Never api.
"""

from __future__ import annotations

from fastapi import FastAPI

from backend.config import Settings
from backend.security.keys import ADMIN, VIEWER, KeyRing, request_role
from backend.security.middleware import AuthMiddleware, BodyLimitMiddleware
from backend.security.throttle import FailureThrottle

__all__ = ["ADMIN", "VIEWER", "FailureThrottle", "KeyRing", "install", "request_role"]


def install(app: FastAPI, settings: Settings) -> None:
    """Add the body limit and, outside it, the key check (a request without a key is never read). The
    failed-authentication throttle is shared with the dashboard's sign-in form (`app.state.auth_throttle`)."""
    throttle = FailureThrottle.from_settings(settings)
    app.state.auth_throttle = throttle
    app.add_middleware(BodyLimitMiddleware, settings=settings)
    app.add_middleware(AuthMiddleware, keys=KeyRing.from_settings(settings), throttle=throttle)
