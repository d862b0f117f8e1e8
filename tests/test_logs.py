"""Machi's log lines reach stderr at LOG_LEVEL with their source, and a failure's reason is never empty."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from backend.errors import LLMTimeout
from backend.logs import reason

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import logging, sys
from backend.logs import configure_logging
configure_logging(sys.argv[1])
configure_logging(sys.argv[1])  # twice: still one line per record
logging.getLogger("backend.conversation.service").info("turn s/0 falls back: %s", "why")
logging.getLogger("backend.jobs.runner").debug("polling")
logging.getLogger("machi").warning("schema upgraded")
"""


def _run(level: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, level], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines()


def test_info_lines_appear_once_with_level_and_source() -> None:
    assert _run("info") == [
        "INFO     backend.conversation.service: turn s/0 falls back: why",
        "WARNING  machi: schema upgraded",
    ]


def test_the_level_filters() -> None:
    assert _run("warning") == ["WARNING  machi: schema upgraded"]
    assert "DEBUG    backend.jobs.runner: polling" in _run("debug")


def test_a_reason_is_never_empty() -> None:
    assert reason(TimeoutError()) == "the deadline passed before the model answered"
    assert (
        reason(LLMTimeout("the model did not answer within 30 s")) == "the model did not answer within 30 s"
    )
    assert reason(KeyError()) == "KeyError"
