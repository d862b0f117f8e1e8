"""`machi whisper AGENT "text"`: put a thought in an agent's mind (its inner voice), over HTTP: a running
server (`--server URL`), else one served for the whisper on the configured database (refused, like every
command that serves, while another server holds it)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import httpx

from backend.config import Settings

REQUEST_TIMEOUT_S = 60.0


def register(subparsers: Any) -> None:
    whisper = subparsers.add_parser("whisper", help="whisper a thought to an agent (it becomes an intention)")
    whisper.add_argument("agent", help="the agent's id")
    whisper.add_argument("text", help="the thought, in the agent's language (at most 160 characters)")
    whisper.add_argument(
        "--server", help="URL of a running server (default: serve the configured app for it)"
    )
    whisper.add_argument("--world", help="X-Machi-World (default: the server's default world)")
    whisper.add_argument("--day", type=int, default=1, help="game day now (default 1)")
    whisper.add_argument("--time", type=float, default=8.0, help="game hour now (default 8)")
    whisper.add_argument("--api-key", help="the server's MACHI_API_KEY (default: the configured one)")
    whisper.set_defaults(func=_whisper)


def _whisper(args: argparse.Namespace, settings: Settings) -> int:
    from backend.simulate.server import api_key, serving

    key = api_key(settings, args.api_key)
    headers = {"X-Machi-World": args.world} if args.world else {}
    if key:
        headers["X-Api-Key"] = key
    body = {"text": args.text, "day": args.day, "time_of_day": args.time}
    with serving(settings, args.server) as url:
        try:
            reply = httpx.post(
                f"{url}/v1/agents/{args.agent}/whisper", json=body, headers=headers, timeout=REQUEST_TIMEOUT_S
            )
        except httpx.HTTPError as exc:
            print(f"error: cannot reach {url}: {exc}", file=sys.stderr)
            return 1
    data = reply.json() if reply.headers.get("content-type", "").startswith("application/json") else {}
    if reply.status_code != 200:
        message = (data.get("error") or {}).get("message") or reply.text[:300]
        print(f"error: {reply.status_code} {message}", file=sys.stderr)
        return 2 if reply.status_code in (404, 422) else 1
    print(f"{args.agent} now has in mind:\n{data['intentions']['text']}")
    return 0
