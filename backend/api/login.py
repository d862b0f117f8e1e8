"""The dashboard's sign-in: `GET/POST /login` keeps the key as a cookie, `POST /logout` drops it.

Only matters when MACHI_API_KEY is set. The cookie holds an HMAC of the key (not the key), is HttpOnly (page
scripts cannot read it) and SameSite=Strict (other sites cannot make the browser send it), so the pages'
own fetches and WebSocket are authenticated without any key in JavaScript.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from backend.api.dashboard import templates
from backend.security.keys import COOKIE_NAME, KeyRing, cookie_token
from backend.security.throttle import FailureThrottle, client_address

router = APIRouter(include_in_schema=False)

COOKIE_MAX_AGE_S = 7 * 24 * 3600
MAX_FORM_BYTES = 4096


def _safe_next(target: str | None) -> str:
    # Only paths on this site: "//evil.example" or "https://..." would make the login an open redirect.
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def _keys(request: Request) -> KeyRing:
    return KeyRing.from_settings(request.app.state.settings)


def _form(request: Request, status: int, next_path: str, error: str | None = None) -> HTMLResponse:
    context = {"next": next_path, "error": error}
    return templates.TemplateResponse(request, "login.html", context, status_code=status)


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str | None = Query(None, max_length=2000)) -> Response:  # noqa: A002
    """The key form; without a configured key there is nothing to sign in to."""
    if not _keys(request).enabled:
        return RedirectResponse(_safe_next(next), status_code=303)
    return _form(request, 200, _safe_next(next))


@router.post("/login")
async def login(request: Request) -> Response:
    """Check the key from the form; a right one becomes the session cookie and goes back to `next`."""
    raw = (await request.body())[:MAX_FORM_BYTES].decode("utf-8", errors="replace")
    fields = {name: values[0] for name, values in parse_qs(raw).items()}
    next_path = _safe_next(fields.get("next"))
    keys = _keys(request)
    if not keys.enabled:
        return RedirectResponse(next_path, status_code=303)
    key = fields.get("key", "").strip()
    if not key or keys.role_for_key(key) is None:
        return _wrong_key(request, next_path, bool(key))
    response = RedirectResponse(next_path, status_code=303)
    response.set_cookie(
        COOKIE_NAME,
        cookie_token(key),
        max_age=COOKIE_MAX_AGE_S,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


def _wrong_key(request: Request, next_path: str, tried: bool) -> Response:
    """The form again: 401, or 429 with Retry-After once this address is past AUTH_FAILURE_LIMIT."""
    throttle: FailureThrottle = request.app.state.auth_throttle
    wait = throttle.record_failure(client_address(request.scope)) if tried else None
    if wait is None:
        return _form(request, 401, next_path, "That key is not right.")
    response = _form(request, 429, next_path, f"Too many wrong keys: try again in {wait} seconds.")
    response.headers["Retry-After"] = str(wait)
    return response


@router.post("/logout")
def logout() -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE_NAME, path="/", httponly=True, samesite="strict")
    return response
