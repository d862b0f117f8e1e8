"""unity_protocol/README.md: every call in the order a Unity agent makes them, with real server replies.

`machi protocol readme` runs the sequence against a fresh in-process server (scripted engine, demo world,
temporary SQLite) and writes the README, so the examples are what the server really answers.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from backend.protocol.readme_text import FOOTER, HEADER, STEPS

MAX_LIST = 2
MAX_TEXT = 160


def _trim(value: Any) -> Any:
    """Keep examples short: lists cut to two items, long strings shortened."""
    if isinstance(value, dict):
        return {k: _trim(v) for k, v in value.items()}
    if isinstance(value, list):
        cut = [_trim(v) for v in value[:MAX_LIST]]
        return cut + ([f"... {len(value) - MAX_LIST} more"] if len(value) > MAX_LIST else [])
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return value[:MAX_TEXT] + "..."
    return value


def _block(language: str, text: str) -> str:
    return f"```{language}\n{text.rstrip()}\n```\n"


def _pretty(value: Any) -> str:
    return json.dumps(_trim(value), ensure_ascii=False, indent=2)


def run_steps(client: Any) -> list[str]:
    """Make each documented call on `client` (a TestClient); returns the README sections."""
    sections: list[str] = []
    context: dict[str, Any] = {}
    headers = {"X-Machi-Protocol": "1"}
    for number, step in enumerate(STEPS, start=1):
        path = step["path"].format(**context)
        reply = client.request(step["method"], path, json=step.get("body"), headers=headers)
        if reply.status_code != step.get("status", 200 if step["method"] != "PUT" else reply.status_code):
            raise RuntimeError(f"{step['method']} {path}: {reply.status_code} {reply.text[:300]}")
        if "remember" in step:
            context.update(step["remember"](reply))
        body = _block("json", _pretty(step["body"])) if step.get("body") is not None else ""
        answer = reply.text if step.get("sse") else _pretty(reply.json())
        sections.append(
            f"### {number}. {step['title']}\n\n{step['why']}\n\n"
            + _block("http", f"{step['method']} {path}")
            + body
            + f"Reply `{reply.status_code}`"
            + (f" ({step['schema']})" if step.get("schema") else "")
            + ":\n\n"
            + _block("text" if step.get("sse") else "json", answer)
        )
        if step.get("after"):
            step["after"](client)
    return sections


def render_readme() -> str:
    """Serve a fresh demo town in-process, make every call, and return the README text."""
    from fastapi.testclient import TestClient

    from backend.app import create_app
    from backend.config import Settings

    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(
            _env_file=None,
            database_url=f"sqlite:///{Path(folder) / 'machi.db'}",
            llm_provider="scripted",
            load_demo_world=True,
        )
        with TestClient(create_app(settings)) as client:
            sections = run_steps(client)
    return HEADER + "\n".join(sections) + FOOTER
