"""API keys: which role (admin, viewer or none) a request holds, compared in constant time.

A key arrives as `Authorization: Bearer <key>`, `X-Api-Key: <key>`, the dashboard's cookie (a token derived
from the key, so the key itself is not stored in the browser), or, for WebSockets only, `?api_key=` /
`?key=` (browsers cannot set headers on a WebSocket; HTTP clients can, and keys in URLs end up in logs).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl

from starlette.requests import HTTPConnection
from starlette.types import Scope

from backend.config import Settings

ADMIN = "admin"
VIEWER = "viewer"
#: The dashboard's session cookie (HttpOnly, SameSite=Strict): an HMAC of the key, never the key.
COOKIE_NAME = "machi_session"
#: Where the middleware leaves the role for the app (`request.state.machi_role`).
ROLE_STATE_KEY = "machi_role"
QUERY_KEYS = ("api_key", "key")


def cookie_token(key: str) -> str:
    """The cookie value standing for `key`: changing the key logs every browser out."""
    return hmac.new(key.encode("utf-8"), b"machi-dashboard-session", hashlib.sha256).hexdigest()


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


@dataclass(frozen=True)
class KeyRing:
    """The configured keys. With no admin key the server is open (every request is admin)."""

    admin_key: str = ""
    viewer_key: str = ""

    @classmethod
    def from_settings(cls, settings: Settings) -> KeyRing:
        admin = settings.machi_api_key.get_secret_value() if settings.machi_api_key else ""
        viewer = settings.machi_viewer_key.get_secret_value() if settings.machi_viewer_key else ""
        return cls(admin_key=admin, viewer_key=viewer if admin else "")

    @property
    def enabled(self) -> bool:
        return bool(self.admin_key)

    def role_for_key(self, key: str) -> str | None:
        """The role a presented key grants (both keys are always compared: no early exit)."""
        is_admin = _same(key, self.admin_key)
        is_viewer = bool(self.viewer_key) and _same(key, self.viewer_key)
        return ADMIN if is_admin else VIEWER if is_viewer else None

    def role_for_cookie(self, token: str) -> str | None:
        is_admin = _same(token, cookie_token(self.admin_key))
        is_viewer = bool(self.viewer_key) and _same(token, cookie_token(self.viewer_key))
        return ADMIN if is_admin else VIEWER if is_viewer else None

    def presents_credentials(self, scope: Scope) -> bool:
        """Whether the request carries a key or a dashboard cookie (a wrong one is a failed authentication;
        none at all is not)."""
        headers = _headers(scope.get("headers", []))
        return bool(_presented_keys(scope, headers) or _cookie(headers.get("cookie", "")))

    def role(self, scope: Scope) -> str | None:
        """The role the request's credentials grant; None when it has none or a wrong one."""
        if not self.enabled:
            return ADMIN
        headers = _headers(scope.get("headers", []))
        for key in _presented_keys(scope, headers):
            return self.role_for_key(key)  # the first credential presented decides: a wrong one is 401
        token = _cookie(headers.get("cookie", ""))
        return self.role_for_cookie(token) if token else None


def _headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}


def _presented_keys(scope: Scope, headers: dict[str, str]) -> list[str]:
    found = []
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        found.append(value.strip())
    if headers.get("x-api-key", "").strip():
        found.append(headers["x-api-key"].strip())
    if scope["type"] == "websocket":
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        found.extend(query[name] for name in QUERY_KEYS if query.get(name))
    return found


def _cookie(header: str) -> str:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:  # noqa: BLE001 - a malformed Cookie header is "no cookie", not a 500
        return ""
    morsel = jar.get(COOKIE_NAME)
    return morsel.value if morsel else ""


def request_role(connection: HTTPConnection) -> str | None:
    """The role the middleware granted this request (admin when no key is configured)."""
    state = connection.scope.get("state") or {}
    role = state.get(ROLE_STATE_KEY)
    return role if isinstance(role, str) else None
