"""The MachiError family. Domain code raises these; only `api/` turns them into HTTP answers."""

from __future__ import annotations

from typing import Any


class MachiError(Exception):
    """Base of every error Machi raises on purpose."""

    status_code = 400
    code = "bad_request"

    def __init__(self, message: str, *, details: Any = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        if code is not None:
            self.code = code


class NotFound(MachiError):
    status_code = 404
    code = "not_found"


class Conflict(MachiError):
    status_code = 409
    code = "conflict"


class InvalidInput(MachiError):
    """A request that is well-formed JSON but makes no sense (names the field in `details`)."""

    status_code = 422
    code = "invalid_input"


class RateLimited(MachiError):
    """Too many requests for a limit (named in `details.limit`); `details.retry_after_s` says when to retry."""

    status_code = 429
    code = "too_many_requests"


class PayloadTooLarge(MachiError):
    status_code = 413
    code = "payload_too_large"


class RequestTimeout(MachiError):
    """A request body that did not arrive in time (a streamed world import past HTTP_IMPORT_TIMEOUT_S)."""

    status_code = 408
    code = "request_timeout"


class Unauthorized(MachiError):
    status_code = 401
    code = "unauthorized"


class Forbidden(MachiError):
    status_code = 403
    code = "forbidden"


class ConfigError(MachiError):
    """Start-up configuration that cannot work."""

    status_code = 500
    code = "config_error"


class LLMError(MachiError):
    """A model call failed. Never reaches Unity as a 5xx: callers fall back."""

    status_code = 503
    code = "llm_error"


class LLMUnavailable(LLMError):
    """The provider could not be reached or refused the call.

    `retryable` is False when asking again cannot help (bad API key, unknown model, rejected request).
    """

    code = "llm_unavailable"

    def __init__(self, message: str, *, retryable: bool = True, details: Any = None) -> None:
        super().__init__(message, details=details)
        self.retryable = retryable


class LLMTimeout(LLMError):
    code = "llm_timeout"


class LLMReplyError(LLMError):
    """The model answered, but not with what the schema asks for."""

    code = "llm_bad_reply"

    def __init__(self, message: str, *, raw: str = "", details: Any = None) -> None:
        super().__init__(message, details=details)
        self.raw = raw


class MissingDependency(ConfigError):
    code = "missing_dependency"


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    """The JSON body of every error answer, an HTTP 4xx/5xx or a stream's `error` event (api/errors.py,
    security/, conversation/stream.py build theirs with this)."""
    return {"error": {"code": code, "message": message, "details": details}}
