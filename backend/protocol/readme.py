"""unity_protocol/README.md: installing the Unity package, its C#, and every call in the order a Unity agent
makes them, with real server replies.

`machi protocol readme` runs the sequence against a fresh in-process server (scripted engine, demo world,
temporary SQLite) and writes the README, so the examples are what the server really answers. The manifest
comes from the package's package.json, the C# from the `// README: name` ... `// README end` regions of the
sample's .cs files (which CI compiles), so neither can drift from the package.
"""

from __future__ import annotations

import json
import re
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from backend.protocol.readme_text import (
    EXAMPLE_REPO,
    FOOTER,
    HEADER,
    OPENUPM,
    RULES,
    STEPS,
    UNITASK_GIT,
    UNITY,
    UNIVRM,
    UNIVRM_PACKAGES,
)

PACKAGE = Path(__file__).resolve().parents[2] / "unity_protocol" / "csharp"
REGION = re.compile(r"^[ \t]*// README: (?P<name>[\w-]+)\n(?P<code>.*?)^[ \t]*// README end$", re.M | re.S)

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
        # A body may be made from what earlier replies said (the history holds the line really stored).
        sent = step["body"](context) if callable(step.get("body")) else step.get("body")
        reply = client.request(step["method"], path, json=sent, headers=headers)
        if reply.status_code != step.get("status", 200 if step["method"] != "PUT" else reply.status_code):
            raise RuntimeError(f"{step['method']} {path}: {reply.status_code} {reply.text[:300]}")
        if "remember" in step:
            context.update(step["remember"](reply))
        body = _block("json", _pretty(sent)) if sent is not None else ""
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


def snippets(folder: Path = PACKAGE / "Samples~") -> dict[str, str]:
    """The C# regions of the sample, by name, dedented."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*.cs")):
        for match in REGION.finditer(path.read_text(encoding="utf-8")):
            found[match["name"]] = textwrap.dedent(match["code"]).rstrip()
    return found


def manifest(package: dict[str, Any]) -> dict[str, Any]:
    """The Packages/manifest.json entries that install the package, its dependencies and UniVRM."""
    url = f"{EXAMPLE_REPO}?path=unity_protocol/csharp#v{package['version']}"
    dependencies = {package["name"]: url, **package["dependencies"], **UNIVRM_PACKAGES}
    return {"scopedRegistries": [OPENUPM], "dependencies": dependencies}


def render_unity(package_dir: Path = PACKAGE) -> str:
    """Install in Unity, the Agent Town scene, and the C# examples.

    Raises:
        KeyError: the text names a snippet that no sample file has.
    """
    package = json.loads((package_dir / "package.json").read_text(encoding="utf-8"))
    code = {f"snippet_{name.replace('-', '_')}": _block("csharp", text) for name, text in snippets().items()}
    return UNITY.format(
        manifest=_block("json", json.dumps(manifest(package), indent=2)),
        unity=package["unity"],
        version=package["version"],
        repo=EXAMPLE_REPO,
        unitask_git=UNITASK_GIT,
        univrm=UNIVRM,
        **code,
    )


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
    return HEADER + render_unity() + RULES + "\n".join(sections) + FOOTER
