"""Believability: the Generative Agents paper's party scenario, measured (backend/simulate/scenario.py).

Run: `.venv/bin/python bench/believability.py` (options: `--town demo|town25|town5_en|town5_ja|all`, `--seed 1`,
`--provider scripted|llamacpp|ollama|openai|vllm`; a real provider reads its model settings from the
environment as `machi serve` does). Also `machi scenario party --town NAME` on a configured server.

Each town is loaded into a fresh SQLite database in a temporary folder; the host is whispered her party
("tomorrow at 19:00 in the park, I want everyone to come") and the headless stand-in for Unity plays two
game days over HTTP. It prints who knew of the party after each day (by memory and by interview), how many
of the invited planned it and were there when it started, the relationship density at the start and end,
model calls and prompt tokens per agent per game day, and how varied and honest the lines were
(backend/simulate/variety.py). `--json FILE` also writes the figures.
Targets (scripted engine, 25-agent town): knowledge >= 60% after two days (paper 52%), >= 50% of the
invited plan it and >= 40% are there (paper 5 of 12), density rising at least as the paper's (0.167 ->
0.74); measured on sentences: no sentence more than twice in a conversation, < 20% of a day's sentences
repeating one said earlier that day, no line where the speaker names itself in the third person, no small
talk passed on as news (issue 34).
The scripted figures are printed with a note that they are the mechanism's ceiling (telling, ratings and
acceptance are decided by rule there), not a measure of a model.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from backend.config import Settings, load_settings
from backend.simulate import scenario, scenario_cli
from backend.simulate.server import ServerThread
from backend.transfer.demo import bundled_names

#: Printed beside the scripted engine's figures: they show what the mechanism yields at best, not a model.
SCRIPTED_CEILING = (
    "(scripted engine: these figures are the mechanism's ceiling, produced largely by construction: its lines "
    "tell news from the slots by rule, it rates any invitation important by rule and accepts by a hash. They "
    "measure no model; run --provider llamacpp (or ollama/openai/vllm) for that.)"
)


def caveat(provider: str) -> str | None:
    """What to print beside a run's figures: the scripted engine's are a ceiling, not a measure of a model."""
    return SCRIPTED_CEILING if provider == "scripted" else None


def settings_for(folder: Path, provider: str) -> Settings:
    base = load_settings() if provider != "scripted" else Settings(_env_file=None)  # type: ignore[call-arg]
    return base.model_copy(
        update={
            "database_url": f"sqlite:///{folder / 'machi.db'}",
            "llm_provider": provider,
            "load_demo_world": False,
            "machi_api_key": None,
        }
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--town", default="all", help="a bundled town, or all (default)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--provider", default="scripted")
    parser.add_argument("--days", type=int, choices=(1, 2), default=2, help="1: the first game day only")
    parser.add_argument("--hours", type=float, default=18.0, help="with --days 1: game hours from 06:00")
    parser.add_argument("--json", type=Path, help="also write each town's figures as JSON to this file")
    args = parser.parse_args()
    towns = [name for name in bundled_names() if args.town in ("all", name)]
    if not towns:
        print(f"no town {args.town!r}; bundled: {', '.join(bundled_names())}", file=sys.stderr)
        return 2
    reports: dict[str, dict[str, object]] = {}
    for town in towns:
        with tempfile.TemporaryDirectory() as folder:
            started = time.monotonic()
            with ServerThread(settings_for(Path(folder), args.provider)) as url:
                # A real model on a CPU takes minutes for a day's first plan: Unity's 30 s would time out.
                timeout = 30.0 if args.provider == "scripted" else 900.0
                report = scenario_cli.run(
                    url,
                    town,
                    seed=args.seed,
                    api_key=None,
                    days=args.days,
                    timeout_s=timeout,
                    first_hours=args.hours,
                )
            print(f"== {town} on {args.provider}, seed {args.seed} ({time.monotonic() - started:.0f} s wall)")
            print(scenario.render(report))
            note = caveat(args.provider)
            if note:
                print(note)
            reports[town] = {**report, "provider": args.provider, "caveat": note}
    if args.json:
        args.json.write_text(json.dumps(reports, ensure_ascii=False, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
