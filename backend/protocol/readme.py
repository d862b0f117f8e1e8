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

from backend import PROTOCOL_VERSION
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
from backend.protocol.walkthrough import BASE_URL, INTRO, MAX_TEXT_LINES, WALKTHROUGH

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


def _call(client: Any, step: dict[str, Any], context: dict[str, Any]) -> tuple[str, Any, Any, dict[str, str]]:
    """Make one documented call; returns its path, the body sent, the reply and the headers sent.

    Raises:
        RuntimeError: the server did not answer with the documented status.
    """
    path = step["path"].format(**context)
    # A body may be made from what earlier replies said (the history holds the line really stored).
    sent = step["body"](context) if callable(step.get("body")) else step.get("body")
    headers = {"X-Machi-Protocol": str(PROTOCOL_VERSION), **step.get("headers", {})}
    reply = client.request(step["method"], path, json=sent, headers=headers)
    if reply.status_code != step.get("status", 200 if step["method"] != "PUT" else reply.status_code):
        raise RuntimeError(f"{step['method']} {path}: {reply.status_code} {reply.text[:300]}")
    if "remember" in step:
        context.update(step["remember"](reply))
    return path, sent, reply, step.get("headers", {})


def _answer(step: dict[str, Any], reply: Any) -> str:
    schema = f" ({step['schema']})" if step.get("schema") else ""
    if step.get("sse"):
        return f"Reply `{reply.status_code}`{schema}:\n\n" + _block("text", reply.text)
    if step.get("text"):
        lines = reply.text.splitlines()
        shown = "\n".join(lines[:MAX_TEXT_LINES] + (["..."] if len(lines) > MAX_TEXT_LINES else []))
        return f"Reply `{reply.status_code}`{schema}:\n\n" + _block("markdown", shown)
    return f"Reply `{reply.status_code}`{schema}:\n\n" + _block("json", _pretty(reply.json()))


def run_steps(client: Any) -> list[str]:
    """Make each documented call on `client` (a TestClient); returns the README sections."""
    sections: list[str] = []
    context: dict[str, Any] = {}
    for number, step in enumerate(STEPS, start=1):
        path, sent, reply, headers = _call(client, step, context)
        request = f"{step['method']} {path}" + "".join(f"\n{k}: {v}" for k, v in headers.items())
        body = _block("json", _pretty(sent)) if sent is not None else ""
        sections.append(
            f"### {number}. {step['title']}\n\n{step['why']}\n\n"
            + _block("http", request)
            + body
            + _answer(step, reply)
        )
        if step.get("after"):
            step["after"](client)
    return sections


def curl(method: str, path: str, body: Any) -> str:
    """The curl command for one call, the body as the compact JSON it sends (quoted for a POSIX shell)."""
    command = f"curl -s -X {method} '{BASE_URL}{path}' \\\n  -H 'X-Machi-Protocol: {PROTOCOL_VERSION}'"
    if body is not None:
        data = json.dumps(body, ensure_ascii=False)
        if "'" in data:
            raise ValueError(f"{path}: a body with a single quote needs other shell quoting")
        command += f" -H 'Content-Type: application/json' \\\n  -d '{data}'"
    return command


def run_walkthrough(client: Any) -> list[str]:
    """The council, judge and interview calls as curl commands with the server's replies."""
    sections: list[str] = []
    context: dict[str, Any] = {}
    for step in WALKTHROUGH:
        path, sent, reply, _ = _call(client, step, context)
        sections.append(
            f"### {step['title']}\n\n{step['why']}\n\n"
            + _block("bash", curl(step["method"], path, sent))
            + _answer(step, reply)
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


#: The manifest entry that installs the package from a clone beside the Unity project.
FILE_ENTRY_PATH = "file:../../machi/unity_protocol/csharp"


def manifest(package: dict[str, Any]) -> dict[str, Any]:
    """The Packages/manifest.json entries that install the package from git (no tag: the repository has
    none; the reader pins a commit), its dependencies and UniVRM."""
    url = f"{EXAMPLE_REPO}?path=unity_protocol/csharp"
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
        file_entry=_block("json", json.dumps({package["name"]: FILE_ENTRY_PATH}, indent=2)),
        name=package["name"],
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
            walkthrough = run_walkthrough(client)
    return HEADER + render_unity() + RULES + "\n".join(sections) + FOOTER + INTRO + "\n".join(walkthrough)
