"""`machi simulate --hours 24 --seed 1 [--speed max|N] [--server URL] [--visitors N]`: a day of the town
without Unity (with `--visitors`, scripted visitors talk with the agents too: visitors.py).

Without `--server` the command serves the configured app itself (same database, same model) on a free
loopback port; either way the stand-in world talks to it only over HTTP, as Unity would.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import uuid
from pathlib import Path
from typing import Any, TextIO

from backend.config import Settings

#: The most scripted visitors one run may have (their lines stay under WORLD_PLAYER_LINES_PER_MINUTE's default).
MAX_VISITORS = 20


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sim = subparsers.add_parser("simulate", help="drive the server with a headless stand-in for Unity")
    sim.add_argument("--hours", type=float, default=24.0, help="game hours to simulate (default 24)")
    sim.add_argument("--seed", type=int, default=1, help="seed of the world's layout and choices (default 1)")
    sim.add_argument(
        "--speed",
        default="60",
        help="game minutes per real second, or 'max' for as fast as the server answers",
    )
    sim.add_argument("--server", help="URL of a running server (default: start one in-process)")
    sim.add_argument("--api-key", help="the server's MACHI_API_KEY (default: the configured one)")
    sim.add_argument("--world", help="X-Machi-World to play in (default: the server's default world)")
    sim.add_argument("--day", type=int, default=1, help="game day to start on (default 1)")
    sim.add_argument("--start-hour", type=float, default=6.0, help="hour of day to start at (default 6)")
    sim.add_argument(
        "--visitors",
        type=int,
        default=0,
        help="scripted visitors (player:visitor-1...) who walk up to agents and talk a little (default 0)",
    )
    sim.add_argument("--json", type=Path, help="also write the summary as JSON to this file")
    sim.add_argument(
        "--max-fallback-share",
        type=float,
        default=0.1,
        help="exit with 3 when more than this share of the lines fell back (default 0.1; 1 never)",
    )
    sim.set_defaults(func=_simulate)


def _simulate(args: argparse.Namespace, settings: Settings) -> int:
    pace = _pace(args.speed)
    if pace == -1.0:
        print(f"--speed must be 'max' or a positive number, not {args.speed!r}", file=sys.stderr)
        return 2
    if not 0 <= args.visitors <= MAX_VISITORS:
        print(f"--visitors must be 0-{MAX_VISITORS}, not {args.visitors}", file=sys.stderr)
        return 2
    from backend.simulate.server import api_key as key_for
    from backend.simulate.server import serving

    api_key = key_for(settings, args.api_key)
    with serving(settings, args.server) as url:
        summary = run_simulation(url, hours=args.hours, seed=args.seed, pace=pace, api_key=api_key,
                                 world_id=args.world, start_day=args.day, start_hour=args.start_hour,
                                 progress=ProgressBar(args.hours), visitors=args.visitors)  # fmt: skip
    from backend.simulate.summary import fallback_share, render

    print(render(summary))
    if args.json:
        args.json.write_text(json.dumps(summary, ensure_ascii=False, indent=2), encoding="utf-8")
    if summary["errors"]:
        return 1
    share = fallback_share(summary)
    if share > args.max_fallback_share:
        print(
            f"{100 * share:.0f}% of the lines fell back (more than --max-fallback-share "
            f"{args.max_fallback_share:g}): see GET /v1/llm-calls and the server log for why",
            file=sys.stderr,
        )
        return 3
    return 0


def _pace(speed: str) -> float | None:
    if speed == "max":
        return None
    try:
        value = float(speed)
    except ValueError:
        return -1.0
    return value if value > 0 else -1.0


def run_simulation(
    url: str, *, hours: float, seed: int, pace: float | None = None, api_key: str | None = None,
    world_id: str | None = None, start_day: int = 1, start_hour: float = 6.0,
    progress: Any = None, run_id: str | None = None, visitors: int = 0, rough_share: float | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Run the stand-in world against the server at `url`, with `visitors` scripted visitors (a share
    `rough_share` of their visits holds a rough line); returns the summary (see summary.build_summary)."""
    from backend.simulate import load_client_package
    from backend.simulate.summary import build_summary, own_counts, server_counts
    from backend.simulate.visitors import DEFAULT_ROUGH_SHARE, VisitedTown

    machi_client = load_client_package()
    run_id = run_id or f"sim{seed}-{uuid.uuid4().hex[:6]}"
    rough = DEFAULT_ROUGH_SHARE if rough_share is None else rough_share
    with machi_client.MachiClient(url, api_key=api_key, world_id=world_id, seed=seed) as client:
        world = VisitedTown(client, visitors=visitors, rough_share=rough, seed=seed, start_day=start_day,
                            start_hour=start_hour, run_id=run_id)  # fmt: skip
        agent_ids = [w.id for w in world.walkers]
        before = server_counts(client, {}, agent_ids)
        report = world.run(hours, pace=pace, progress=progress)
        if progress is not None:
            progress.close()
        log_during_run = copy.deepcopy(client.log)
        counts = own_counts(before, server_counts(client, report.plan_days, agent_ids))
    return build_summary(report, counts, log_during_run, hours, seed, world.visitors.report)


class ProgressBar:
    """Progress on stderr: on a terminal a one-line bar redrawn every game quarter hour; elsewhere (a log
    file, CI, a pipe) one plain line per game hour, since a carriage return there only grows one line."""

    WIDTH = 30

    def __init__(self, hours: float, stream: TextIO | None = None) -> None:
        self.hours = hours
        self.stream = stream or sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last = -1

    def __call__(self, done_min: float, total_min: float) -> None:
        step = int(done_min // (15 if self.live else 60))
        if step == self._last and done_min < total_min:
            return
        self._last = step
        hours = f"{done_min / 60:5.1f}/{self.hours:g} game hours"
        if self.live:
            filled = int(self.WIDTH * done_min / total_min) if total_min else self.WIDTH
            self.stream.write(f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] {hours}")
        else:
            share = 100 * done_min / total_min if total_min else 100
            self.stream.write(f"simulated {hours.strip()} ({share:.0f}%)\n")
        self.stream.flush()

    def close(self) -> None:
        if self.live:
            self.stream.write("\n")
            self.stream.flush()
