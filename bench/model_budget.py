"""Model budget: model calls and tokens per conversation and per agent per game hour, by purpose.

Run: `.venv/bin/python bench/model_budget.py` (options: `--conversations 6 --turns 7 --hours 4`).

With one local GPU every call delays the next line somewhere, so this counts what the town asks of the model.
It runs the real app in-process on the scripted engine (temporary SQLite, the demo town) and reads the
`llmcall` trace afterwards, background work included. Counts depend on pacing, since emotion evaluations and
importance ratings merge what arrives within EMOTION_MIN_INTERVAL_S / IMPORTANCE_BATCH_S; the run keeps a
real model's pace at a tenth of the time: each turn waits `--turn-s` (default 3 s, a gemma-3n reply on a
12 GB GPU) times `--scale` (0.1), and both intervals are scaled by the same factor. Prompt tokens are what
Machi counted when fitting each prompt (the estimate for the scripted engine); completion tokens are
estimated from the reply text. Target: at most 10 model calls per 7-turn conversation, all purposes.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.app import create_app
from backend.config import Settings
from backend.llm.budget import estimate_tokens
from backend.llm.models import LLMCall

PAIRS = [("aoi", "hikari"), ("ren", "yukino"), ("natsumi", "haruka"), ("hikari", "ren")]


def settings_for(folder: Path, scale: float, turns: int) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=f"sqlite:///{folder / 'machi.db'}",
        llm_provider="scripted",
        load_demo_world=True,
        max_turns=turns,
        importance_batch_s=5.0 * scale,
        emotion_min_interval_s=2.0 * scale,
        log_level="warning",
    )


def drain(client: TestClient) -> None:
    app: Any = client.app
    portal: Any = client.portal
    for _ in range(3):  # jobs start more work (a reflection after the last line is remembered)
        portal.call(app.state.tasks.drain, 120)
        while client.get("/health").json()["jobs"].get("pending", 0):
            time.sleep(0.05)


def converse(client: TestClient, conversations: int, turn_pause: float) -> int:
    """Hold `conversations` talks between demo pairs; returns the lines spoken."""
    names = {a["id"]: a["name"] for a in client.get("/v1/agents").json()}
    lines = 0
    for index in range(conversations):
        a, b = PAIRS[index % len(PAIRS)]
        history: list[str] = []
        speaker, partner = a, b
        while True:
            body = {"agent_id": speaker, "target_id": partner, "session_id": f"budget-{index}",
                    "location_name": "中央カフェ", "history": history, "time_of_day": 10.0 + index}  # fmt: skip
            reply = client.post("/v1/conversation/turn", json=body).json()
            lines += 1
            history.append(f"{names[speaker]}: {reply['dialogue']}")
            if reply["is_conversation_end"]:
                break
            speaker, partner = partner, speaker
            time.sleep(turn_pause)
        time.sleep(turn_pause)
    return lines


def by_purpose(engine: Any) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = defaultdict(lambda: {"calls": 0, "prompt": 0, "completion": 0})
    with Session(engine) as session:
        for call in session.exec(select(LLMCall)).all():
            row = table[call.purpose]
            row["calls"] += 1
            row["prompt"] += call.prompt_tokens_counted or 0
            row["completion"] += estimate_tokens(call.raw_reply or "")
    return dict(table)


def report(title: str, table: dict[str, dict[str, float]], per: float, unit: str) -> float:
    print(f"\n{title}")
    print(f"  {'purpose':<12} {'calls':>8} {'prompt tok':>11} {'completion tok':>15}   (per {unit})")
    total = {"calls": 0.0, "prompt": 0.0, "completion": 0.0}
    for purpose, row in sorted(table.items(), key=lambda item: -item[1]["calls"]):
        print(
            f"  {purpose:<12} {row['calls'] / per:>8.2f} {row['prompt'] / per:>11.0f} {row['completion'] / per:>15.0f}"
        )
        for key in total:
            total[key] += row[key]
    print(
        f"  {'all':<12} {total['calls'] / per:>8.2f} {total['prompt'] / per:>11.0f} {total['completion'] / per:>15.0f}"
    )
    return total["calls"] / per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=6)
    parser.add_argument("--turns", type=int, default=7, help="MAX_TURNS: every talk runs to it (default 7)")
    parser.add_argument("--hours", type=float, default=4.0, help="game hours of `machi simulate` (default 4)")
    parser.add_argument("--turn-s", type=float, default=3.0, help="a real model's seconds per line")
    parser.add_argument("--scale", type=float, default=0.1, help="real time per simulated second")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        settings = settings_for(Path(tmp), args.scale, args.turns)
        with TestClient(create_app(settings)) as client:
            lines = converse(client, args.conversations, args.turn_s * args.scale)
            drain(client)
            app: Any = client.app
            table = by_purpose(app.state.engine)
        per_talk = report(
            f"{args.conversations} conversations, {lines / args.conversations:.1f} lines each "
            f"(MAX_TURNS {args.turns}, a line every {args.turn_s:g} s of model time)",
            table,
            args.conversations,
            "conversation",
        )
        print(f"  model calls per conversation: {per_talk:.1f} (target <= 10 for 7 turns)")

    with tempfile.TemporaryDirectory() as tmp:
        from backend.simulate.cli import run_simulation
        from backend.simulate.server import ServerThread

        settings = settings_for(Path(tmp), args.scale, 8)
        with ServerThread(settings) as url:
            summary = run_simulation(url, hours=args.hours, seed=1, start_hour=8.0, pace=600.0 / args.scale)
            time.sleep(2.0)  # let the last reflections land
            engine = __import__("sqlmodel").create_engine(settings.database_url)
            table = by_purpose(engine)
        agents = len(summary["per_agent"]["memories"]) or 1
        report(
            f"machi simulate, {args.hours:g} game hours, {agents} agents, {summary['turns']} lines",
            table,
            agents * args.hours,
            "agent per game hour",
        )


if __name__ == "__main__":
    main()
