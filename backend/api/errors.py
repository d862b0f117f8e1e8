"""The one place errors become HTTP answers: {"error": {"code", "message", "details"}}."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from backend.errors import MachiError

log = logging.getLogger(__name__)


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details}}


def _field_name(loc: tuple[Any, ...] | list[Any]) -> str:
    # The first part says where the value came from (body/query/path/header); the rest names the field,
    # which may itself be called "query" (the retrieval request's field).
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    return ".".join(parts) or "body"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(MachiError)
    async def _machi_error(_request: Request, exc: MachiError) -> JSONResponse:
        if exc.status_code >= 500:
            log.error("server error: %s", exc.message)
        return JSONResponse(error_body(exc.code, exc.message, exc.details), status_code=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            field = _field_name(err.get("loc", ()))
            problems.append({"field": field, "message": err.get("msg", "invalid"), "type": err.get("type")})
        summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:5])
        return JSONResponse(
            error_body("validation_error", f"invalid request: {summary}", problems), status_code=422
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}.get(
            exc.status_code, "http_error"
        )
        return JSONResponse(
            error_body(code, str(exc.detail)), status_code=exc.status_code, headers=exc.headers
        )
