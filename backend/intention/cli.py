"""`machi whisper AGENT "text"`: put a thought in an agent's mind on a running server (its inner voice)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import httpx

from backend.config import Settings

DEFAULT_SERVER = "http://127.0.0.1:8000"


def register(subparsers: Any) -> None:
    whisper = subparsers.add_parser("whisper", help="whisper a thought to an agent (it becomes an intention)")
    whisper.add_argument("agent", help="the agent's id")
    whisper.add_argument("text", help="the thought, in the agent's language (at most 160 characters)")
    whisper.add_argument("--server", default=None, help=f"the server's URL (default {DEFAULT_SERVER})")
    whisper.add_argument("--world", help="X-Machi-World (default: the server's default world)")
    whisper.add_argument("--day", type=int, default=1, help="game day now (default 1)")
    whisper.add_argument("--time", type=float, default=8.0, help="game hour now (default 8)")
    whisper.add_argument("--api-key", help="the server's MACHI_API_KEY (default: the configured one)")
    whisper.set_defaults(func=_whisper)


def _whisper(args: argparse.Namespace, settings: Settings) -> int:
    url = args.server or DEFAULT_SERVER
    key = args.api_key or (settings.machi_api_key.get_secret_value() if settings.machi_api_key else None)
    headers = {"X-Machi-World": args.world} if args.world else {}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body = {"text": args.text, "day": args.day, "time_of_day": args.time}
    try:
        reply = httpx.post(f"{url}/v1/agents/{args.agent}/whisper", json=body, headers=headers, timeout=30)
    except httpx.HTTPError as exc:
        print(f"cannot reach the Machi server at {url}: {exc} (start it with `make serve`)", file=sys.stderr)
        return 2
    data = reply.json()
    if reply.status_code >= 400:
        print(
            f"not whispered ({reply.status_code}): {data.get('error', {}).get('message', data)}",
            file=sys.stderr,
        )
        return 2
    print(f"{args.agent} now has in mind:\n{data['intentions']['text']}")
    return 0
