"""`machi scenario party [--town demo] [--seed 1] [--days 2] [--server URL]`: the party scenario (scenario.py).

It loads the town into a fresh world of its own (`party-<id>`) on the configured database, so the figures
are this run's and no other world is touched; without `--server` it serves the configured app in-process
(same database, same model). On a real model, a small town:
`LLM_PROVIDER=llamacpp LLAMACPP_MODEL_PATH=package:smollm2 machi scenario party --town town5_en --days 2`
(a real provider's requests may take minutes: the time limit per request is then REAL_MODEL_TIMEOUT_S).
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path
from typing import Any

from backend.config import Settings

#: The bundled towns the party scenario knows a host, a place and a whisper for (scenario.PARTIES).
PARTY_TOWNS = ("demo", "town25", "town5_en", "town5_ja")
#: How long one request may take on a real model (a day's first plans on a CPU take minutes); the
#: scripted engine answers at once, so Unity's 30 s stays its limit.
REAL_MODEL_TIMEOUT_S = 900.0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    scenario = subparsers.add_parser("scenario", help="run an evaluation scenario of the town")
    sub = scenario.add_subparsers(dest="scenario", required=True)
    party = sub.add_parser(
        "party", help="a host's party: does the news travel, and who comes? (two game days)"
    )
    party.add_argument(
        "--town", default="demo", choices=sorted(PARTY_TOWNS), help="bundled town (default: demo)"
    )
    party.add_argument("--seed", type=int, default=1, help="seed of the stand-in world (default 1)")
    party.add_argument("--server", help="URL of a running server (default: start one in-process)")
    party.add_argument("--api-key", help="the server's MACHI_API_KEY (default: the configured one)")
    party.add_argument("--json", type=Path, help="also write the figures as JSON to this file")
    party.add_argument(
        "--days", type=int, choices=(1, 2), default=2, help="game days to play (1: the first only)"
    )
    party.add_argument(
        "--hours", type=float, default=18.0, help="with --days 1: game hours played from 06:00 (default 18)"
    )
    party.set_defaults(func=_party)


def load_town(client: Any, town: str, world_id: str) -> None:
    """Import the bundled town (places, agents, their relationships as person memory) into `world_id`."""
    from backend.transfer.demo import bundled_world

    client._send("POST", "/v1/world/import", bundled_world(town, world_id))


def run(
    url: str,
    town: str,
    *,
    seed: int,
    api_key: str | None,
    progress: Any = None,
    days: int = 2,
    timeout_s: float = 30.0,
    first_hours: float = 18.0,
) -> dict[str, Any]:
    from backend.simulate import load_client_package, scenario

    machi_client = load_client_package()
    world_id = f"party-{uuid.uuid4().hex[:8]}"
    with machi_client.MachiClient(url, api_key=api_key, world_id=world_id, seed=seed) as client:
        load_town(client, town, world_id)
    party = scenario.party_for(town)
    report = scenario.run_party(
        url,
        party,
        seed=seed,
        api_key=api_key,
        world_id=world_id,
        progress=progress,
        days=days,
        timeout_s=timeout_s,
        first_hours=first_hours,
    )
    return {"town": town, "world_id": world_id, "seed": seed, **report}


def _party(args: argparse.Namespace, settings: Settings) -> int:
    from backend.simulate import scenario
    from backend.simulate.server import api_key, serving

    with serving(settings, args.server) as url:
        report = run(
            url,
            args.town,
            seed=args.seed,
            api_key=api_key(settings, args.api_key),
            days=args.days,
            progress=lambda text: print(text, file=sys.stderr),
            timeout_s=30.0 if settings.llm_provider == "scripted" else REAL_MODEL_TIMEOUT_S,
            first_hours=args.hours,
        )
    print(scenario.render(report))
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
    return 0
