"""The one place errors become HTTP answers: {"error": {"code", "message", "details"}}, every status.

A 4xx names the field it is about (`details[].field`); a body that cannot be read as JSON at all is a 400
`invalid_json` about the field `body`, and JSON sent without `Content-Type: application/json` (read as text)
a 422 about `body` saying to send that header; anything unexpected is a 500 `internal_error` in the same envelope.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from backend.errors import MachiError, error_body

log = logging.getLogger(__name__)

#: FastAPI's words for a body it could not read (its cause: bad UTF-8, nesting past the recursion limit,
#: a number too long to convert); the answer says which instead.
UNREADABLE_BODY = "There was an error parsing the body"
#: pydantic's types for a body that is not an object (a model's, a dict's).
_NOT_AN_OBJECT = ("model_attributes_type", "dict_type")
HTTP_CODES = {
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    413: "payload_too_large",
    429: "too_many_requests",
    503: "service_unavailable",
}


def _field_name(loc: tuple[Any, ...] | list[Any]) -> str:
    # The first part says where the value came from (body/query/path/header); the rest names the field,
    # which may itself be called "query" (the retrieval request's field).
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    return ".".join(parts) or "body"


def invalid_json(reason: str) -> JSONResponse:
    """400 for a body that is not JSON the server can read; the field is the body itself."""
    problem = {"field": "body", "message": reason, "type": "json_invalid"}
    return JSONResponse(
        error_body("invalid_json", f"the request body is not valid JSON: {reason}", [problem]),
        status_code=400,
    )


def _unreadable_reason(cause: BaseException | None) -> str:
    if isinstance(cause, UnicodeDecodeError):
        return f"it is not UTF-8 (byte {cause.object[cause.start]:#04x} at position {cause.start})"
    if isinstance(cause, RecursionError):
        return "it nests too deeply"
    if isinstance(cause, ValueError) and "digits" in str(cause):
        return "a number in it has too many digits"
    return "it could not be parsed"


async def _machi_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MachiError)
    if exc.status_code >= 500:
        log.error("server error: %s", exc.message)
    headers = None
    if exc.status_code == 429 and isinstance(exc.details, dict) and "retry_after_s" in exc.details:
        headers = {"Retry-After": str(max(1, math.ceil(float(exc.details["retry_after_s"]))))}
    return JSONResponse(
        error_body(exc.code, exc.message, exc.details), status_code=exc.status_code, headers=headers
    )


def _not_an_object(request: Request, err: dict[str, Any]) -> str | None:
    """What to send instead when the body as a whole is not a JSON object: most often JSON sent without
    `Content-Type: application/json` (plain `curl -d`, `UnityWebRequest.Post(url, string)`), which the
    server reads as text. None for any other error."""
    if tuple(err.get("loc", ())) != ("body",) or err.get("type") not in _NOT_AN_OBJECT:
        return None
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if not _is_json(content_type):
        sent = f"Content-Type {content_type!r}" if content_type else "no Content-Type"
        return (
            f"the body must be JSON sent with the header `Content-Type: application/json` (this request has "
            f"{sent}, so the body was not read as JSON): curl -H 'Content-Type: application/json' -d '{{...}}'; "
            'Unity: UnityWebRequest.Post(url, json, "application/json") or '
            'SetRequestHeader("Content-Type", "application/json")'
        )
    kind = type(err.get("input")).__name__
    shown = {"str": "a string", "list": "an array", "int": "a number", "float": "a number"}.get(kind, kind)
    return (
        f'the body must be a JSON object ({{"field": value, ...}}), not {shown} (an object serialized to '
        "JSON twice arrives as a string)"
    )


def _is_json(content_type: str) -> bool:
    return content_type == "application/json" or (
        content_type.startswith("application/") and content_type.endswith("+json")
    )


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    broken = next((err for err in errors if err.get("type") == "json_invalid"), None)
    if broken is not None:  # not JSON at all: where it broke, not a field named after the offset
        loc = broken.get("loc", ())
        at = f" at character {loc[-1]}" if len(loc) > 1 else ""
        return invalid_json(f"{(broken.get('ctx') or {}).get('error', 'JSON decode error')}{at}")
    problems = []
    for err in errors:
        field = _field_name(err.get("loc", ()))
        # pydantic's "Value error, " prefix says nothing to a client: the message after it is the server's own.
        message = _not_an_object(request, err) or str(err.get("msg", "invalid")).removeprefix("Value error, ")
        problems.append({"field": field, "message": message, "type": err.get("type")})
    summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:5])
    return JSONResponse(
        error_body("validation_error", f"invalid request: {summary}", problems), status_code=422
    )


async def _http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400 and exc.detail == UNREADABLE_BODY:
        return invalid_json(_unreadable_reason(exc.__cause__))
    code = HTTP_CODES.get(exc.status_code, "http_error")
    return JSONResponse(error_body(code, str(exc.detail)), status_code=exc.status_code, headers=exc.headers)


async def _unexpected(_request: Request, _exc: Exception) -> JSONResponse:
    # A bug: Starlette re-raises it after this answer, so the server's log keeps the traceback.
    message = "the server failed on this request (a bug, logged on the server)"
    return JSONResponse(error_body("internal_error", message), status_code=500)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(MachiError, _machi_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
