"""Machi's own log lines on stderr, at LOG_LEVEL: fallbacks, repairs, re-asks, timeouts and job retries.

Uvicorn configures only its own loggers, so without this the `backend.*` loggers had no handler and only
warnings reached stderr, through Python's last-resort handler, without a level or a source.
"""

from __future__ import annotations

import logging
import sys

#: The loggers Machi writes to: modules log under their own name (`backend.conversation.service` ...).
LOGGERS = ("backend", "machi")
FORMAT = "%(levelname)-8s %(name)s: %(message)s"
_MARK = "_machi_handler"


def configure_logging(level: str) -> None:
    """Send Machi's loggers to stderr at `level` (debug, info, warning, error); safe to call twice."""
    numeric = logging.getLevelName(level.upper())
    for name in LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(numeric)
        if not any(getattr(handler, _MARK, False) for handler in logger.handlers):
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter(FORMAT))
            setattr(handler, _MARK, True)
            logger.addHandler(handler)
        logger.propagate = False  # one line per record, whatever the root logger does


def reason(exc: BaseException) -> str:
    """Why a call failed, never empty (a bare TimeoutError has no message)."""
    text = str(exc).strip()
    if text:
        return text
    if isinstance(exc, TimeoutError):
        return "the deadline passed before the model answered"
    return type(exc).__name__
