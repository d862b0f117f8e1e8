"""`machi interview AGENT "question" [--world W] [--server URL]`: ask an agent, print its answer.

Over HTTP, like any client: with `--server` it asks a running server (the way to interview a town that a
server is playing); without, it serves the configured app itself on a free loopback port for the one
question (refused while a server holds the database: pass that server's URL then).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx

from backend.config import Settings

#: Seconds the command waits for the answer (the server answers within INTERVIEW_DEADLINE_S anyway).
REQUEST_TIMEOUT_S = 660.0


def register(subparsers: Any) -> None:
    """Add `machi interview` to the CLI."""
    cmd = subparsers.add_parser("interview", help="ask an agent a question; it answers from its memory")
    cmd.add_argument("agent", help="the agent's id")
    cmd.add_argument("question", help="what to ask, in any language")
    cmd.add_argument("--world", help="X-Machi-World (default: the server's default world)")
    cmd.add_argument("--server", help="URL of a running server (default: serve the configured app here)")
    cmd.add_argument("--api-key", help="the server's MACHI_API_KEY (default: the configured one)")
    cmd.add_argument("--day", type=int, help="game day of the interview (default: the agent's last report)")
    cmd.add_argument("--time", type=float, dest="time_of_day", help="hours into the game day, e.g. 20.5")
    cmd.add_argument("--json", action="store_true", help="print the whole reply as JSON")
    cmd.set_defaults(func=_interview)


def _interview(args: argparse.Namespace, settings: Settings) -> int:
    body: dict[str, Any] = {"question": args.question}
    body.update({k: v for k, v in (("day", args.day), ("time_of_day", args.time_of_day)) if v is not None})
    headers = {"X-Machi-World": args.world} if args.world else {}
    from backend.simulate.server import api_key, serving

    key = api_key(settings, args.api_key)
    if key:
        headers["X-Api-Key"] = key
    with serving(settings, args.server) as url:
        try:
            response = httpx.post(
                f"{url}/v1/agents/{args.agent}/interview",
                json=body,
                headers=headers,
                timeout=REQUEST_TIMEOUT_S,
            )
        except httpx.HTTPError as exc:
            print(f"error: cannot reach {url}: {exc}", file=sys.stderr)
            return 1
    if response.status_code != 200:
        error = response.json().get("error", {}) if _is_json(response) else {}
        print(f"error: {response.status_code} {error.get('message') or response.text[:300]}", file=sys.stderr)
        return 2 if response.status_code in (404, 422) else 1
    reply = response.json()
    if args.json:
        print(json.dumps(reply, ensure_ascii=False, indent=2))
    else:
        print(reply["answer"])
        note = " (fallback: the model failed or was late)" if reply["fallback"] else ""
        print(f"[{len(reply['memories_used'])} memories used{note}]", file=sys.stderr)
    return 0


def _is_json(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith("application/json")
