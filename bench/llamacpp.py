"""The in-process llama.cpp engine on a real small model: streaming, and turns beside background work.

Run: `.venv/bin/python bench/llamacpp.py` (options: `--model package:smollm2 --turns 3 --threads 1`).

Serves the app with uvicorn on a loopback port in this process (two English characters, a temporary SQLite file,
LLM_PROVIDER=llamacpp on SmolLM2-135M from its PyPI package, LLM_SEED fixed so every phase gets the same
replies) and talks HTTP to it as Unity does:
1. streamed turns (`/v1/conversation/turn/stream`) of a conversation between the two, a short background
   call between two lines: time to the first `delta` event against the time to the final `reply` event;
2. plain turns, idle;
3. plain turns while a background generation holds the model (a long reflection-priority call, restarted
   whenever it ends), with preemption (the llamacpp provider as shipped) and without it (the same provider
   marked not preemptible: the turn queues behind the running call, as before).
Prints figures only; nothing is asserted (tests/real_engine asserts the behaviour).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from backend.app import create_app
from backend.config import Settings
from backend.errors import MissingDependency
from backend.llm import packaged
from backend.llm.base import PRIORITY_BACKGROUND, PRIORITY_TURN, GenerateOptions
from backend.llm.llamacpp import LlamaCppLLM
from backend.llm.scheduler import find_scheduler

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.serverproc import free_port  # noqa: E402

#: SmolLM2 is an English model: two English characters (the demo town speaks Japanese).
AGENTS = {
    "mia": {"name": "Mia", "language": "en", "backstory": "A student who loves the library.",
            "speaking_style": "Warm and brief."},
    "leo": {"name": "Leo", "language": "en", "backstory": "The barista of the corner cafe.",
            "speaking_style": "Cheerful, short sentences."},
}  # fmt: skip
BACKGROUND = [{"role": "user", "content": "Write a very long story about a cat who sails around the world."}]


def turn_body(session: str, speaker: str = "mia", history: list[str] | None = None) -> dict[str, Any]:
    target = "leo" if speaker == "mia" else "mia"
    return {"agent_id": speaker, "target_id": target, "session_id": session, "location_name": "the cafe",
            "history": history or [], "time_of_day": 10.0 + len(history or []) / 60}  # fmt: skip


@contextmanager
def serve(settings: Settings, *, preemptible: bool) -> Iterator[tuple[str, Any, asyncio.AbstractEventLoop]]:
    """The app on a loopback port, served from a thread; yields (url, app, the server's loop)."""
    provider = LlamaCppLLM.from_settings(settings)
    provider.preemptible = preemptible
    app = create_app(settings, llm=provider)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(),), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    for agent_id, persona in AGENTS.items():
        httpx.put(f"{url}/v1/agents/{agent_id}", json=persona, timeout=30).raise_for_status()
    try:
        yield url, app, loop
    finally:
        server.should_exit = True
        thread.join(60)


def streamed_turn(url: str, body: dict[str, Any]) -> tuple[float, float, dict[str, Any]]:
    """(seconds to the first delta, seconds to the reply event, the reply) of one streamed turn."""
    start, first = time.perf_counter(), None
    with httpx.stream("POST", f"{url}/v1/conversation/turn/stream", json=body, timeout=300) as r:
        event = ""
        for line in r.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "delta" and first is None:
                first = time.perf_counter() - start
            elif line.startswith("data: ") and event == "reply":
                return first or 0.0, time.perf_counter() - start, json.loads(line[6:])
    raise RuntimeError("the stream ended without a reply event")


def meet(url: str, meeting: float, partner: bool) -> None:
    """Both report `talking` (naming each other when `partner`), then Unity takes `meeting` seconds to turn
    them to face each other before it asks for the first line."""
    for agent, other in (("mia", "leo"), ("leo", "mia")):
        body = {"state": "talking", "location_name": "the cafe", "day": 1, "time_of_day": 10.0}
        httpx.post(f"{url}/v1/agents/{agent}/state", json=body | ({"partner_id": other} if partner else {}),
                   timeout=30).raise_for_status()  # fmt: skip
    time.sleep(meeting)


def streamed_conversations(
    url: str, app: Any, loop: Any, turns: int, shown: float, meeting: float, partner: bool
) -> list[tuple[float, float, bool, bool]]:
    """`turns` streamed lines of Mia and Leo taking turns, as Unity streams a conversation, with a short
    background call between two lines (what runs between them in a town: the context is replaced). A
    conversation that ends is followed by a new one, the two meeting again first (`meet`). `shown`: seconds a
    line is shown before the next turn. Returns (first delta, whole line, fallback, opening line) per line."""
    results, history, session = [], [], 0
    names = {"mia": "Mia", "leo": "Leo"}
    for _ in range(turns):
        if not history:
            meet(url, meeting, partner)
        speaker = "mia" if len(history) % 2 == 0 else "leo"
        first, whole, reply = streamed_turn(url, turn_body(f"stream-{session}", speaker, history))
        results.append((first, whole, bool(reply["fallback"]), not history))
        history.append(f"{names[speaker]}: {reply['dialogue']}")
        if reply["is_conversation_end"]:
            history, session = [], session + 1
        time.sleep(shown)  # Unity shows (or speaks) the line before it asks for the next
        background_calls(app, loop)
    return results


def plain_turn(url: str, session: str) -> tuple[float, bool]:
    start = time.perf_counter()
    reply = httpx.post(f"{url}/v1/conversation/turn", json=turn_body(session), timeout=300).json()
    return time.perf_counter() - start, bool(reply["fallback"])


class BackgroundLoad:
    """Keeps one long background-priority generation on the model, starting a new one when it ends."""

    def __init__(self, app: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.app, self.loop, self.stop = app, loop, False
        self.future = asyncio.run_coroutine_threadsafe(self._run(), loop)

    async def _run(self) -> None:
        options = GenerateOptions(purpose="reflection", priority=PRIORITY_BACKGROUND, max_tokens=400)
        while not self.stop:
            await self.app.state.llm.complete(BACKGROUND, options=options)

    def generating(self) -> bool:
        return find_scheduler(self.app.state.llm).in_flight > 0  # type: ignore[union-attr]

    def close(self) -> None:
        self.stop = True
        self.future.result(timeout=600)


def background_calls(app: Any, loop: asyncio.AbstractEventLoop) -> None:
    """One short background-priority call, run to its end (in a town, a rating or a reflection)."""
    options = GenerateOptions(purpose="reflection", priority=PRIORITY_BACKGROUND, max_tokens=16)
    call = app.state.llm.complete(BACKGROUND, options=options)
    asyncio.run_coroutine_threadsafe(call, loop).result(timeout=600)


def phase_with_background(url: str, app: Any, loop: Any, turns: int, tag: str) -> list[tuple[float, bool]]:
    load = BackgroundLoad(app, loop)
    results = []
    try:
        for index in range(turns):
            while not load.generating():
                time.sleep(0.05)
            time.sleep(1.0)  # well into the background generation
            results.append(plain_turn(url, f"{tag}-{index}"))
    finally:
        load.close()
    return results


def turn_waits(app: Any) -> list[float]:
    """Every live turn's wait for the model so far (the scheduler's queue; a preempting turn's wait is the
    running call's last token)."""
    return list(find_scheduler(app.state.llm).stats[PRIORITY_TURN].recent)  # type: ignore[union-attr]


def report_streamed(streamed: list[tuple[float, float, bool, bool]]) -> None:
    line("time to first delta", [s[0] for s in streamed])
    line("time to the reply event (whole line)", [s[1] for s in streamed], sum(s[2] for s in streamed))
    for label, lines in [
        ("first delta / whole line, lines from the model", [s for s in streamed if not s[2]]),
        ("  of them opening lines", [s for s in streamed if not s[2] and s[3]]),
        (
            "  of them later lines (read ahead after the partner's)",
            [s for s in streamed if not s[2] and not s[3]],
        ),
    ]:
        if lines:  # a fallback line's deltas are not the model's
            line(label, [s[0] / s[1] for s in lines], unit="x")


def line(label: str, values: list[float], fallbacks: int | None = None, unit: str = "s") -> None:
    figures = " ".join(f"{v:6.2f}" for v in values)
    extra = "" if fallbacks is None else f"  fallbacks {fallbacks}/{len(values)}"
    print(f"  {label:<58} median {statistics.median(values):6.2f} {unit}   [{figures}]{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="package:smollm2")
    parser.add_argument("--turns", type=int, default=3, help="turns a phase of plain turns")
    parser.add_argument("--streamed", type=int, default=8, help="streamed lines (a conversation or more)")
    parser.add_argument(
        "--shown", type=float, default=2.0, help="seconds Unity shows a line before it asks for the next"
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="LLAMACPP_THREADS (1 is fastest on 2 shared cores)"
    )
    parser.add_argument(
        "--batch-threads", type=int, default=None, help="LLAMACPP_BATCH_THREADS (default: --threads)"
    )
    parser.add_argument(
        "--prefix-cache-mb",
        type=int,
        default=None,
        help="LLAMACPP_PREFIX_CACHE_MB (0: off; default: the setting's)",
    )
    parser.add_argument(
        "--meeting",
        type=float,
        default=1.0,
        help="seconds from the `talking` reports to a conversation's first turn",
    )
    parser.add_argument("--streamed-only", action="store_true", help="only the streamed turns")
    args = parser.parse_args()
    try:
        if importlib.util.find_spec("llama_cpp") is None:
            raise MissingDependency("llama-cpp-python is not installed")
        packaged.resolve(args.model)  # the model's package is installed (a file path is checked on load)
    except MissingDependency as exc:
        print(f"skipped ({exc}): pip install -e '.[llamacpp,smollm2]'")
        return
    folder = Path(tempfile.mkdtemp(prefix="machi-bench-llamacpp-"))

    def settings(name: str) -> Settings:
        return Settings(
            _env_file=None,  # type: ignore[call-arg]
            database_url=f"sqlite:///{folder / name}.db",
            llm_provider="llamacpp",
            llamacpp_model_path=args.model,
            llamacpp_threads=args.threads,
            llamacpp_batch_threads=args.batch_threads,
            llamacpp_n_gpu_layers=0,
            llamacpp_n_ctx=2048,
            llm_seed=7,
            load_demo_world=False,
            log_level="warning",
            turn_deadline_s=120,  # the model's time is measured, not the fallback's (a busy 2-core VM is slow)
            **({} if args.prefix_cache_mb is None else {"llamacpp_prefix_cache_mb": args.prefix_cache_mb}),
        )

    cache = settings("preemptive").llamacpp_prefix_cache_mb
    print(
        f"model {args.model}, {args.threads} thread(s) ({args.batch_threads or args.threads} reading prompts), n_ctx 2048, LLM_SEED 7, TURN_DEADLINE_S 120, "
        f"{args.turns} turns a phase, prefix cache {cache} MB"
    )
    print(
        f"streamed turns (/v1/conversation/turn/stream), each line shown {args.shown} s, then a background call; "
        f"before a conversation both report `talking`, its first turn {args.meeting} s later:"
    )
    for partner in (False, True):
        with serve(settings(f"opening-{partner}"), preemptible=True) as (url, app, loop):
            streamed = streamed_conversations(
                url, app, loop, args.streamed, args.shown, args.meeting, partner
            )
        print(f" the `talking` reports {'name' if partner else 'do not name'} the partner (partner_id):")
        report_streamed(streamed)
    if args.streamed_only:
        return
    with serve(settings("preemptive"), preemptible=True) as (url, app, loop):
        seen = len(turn_waits(app))
        idle = [plain_turn(url, f"idle-{i}") for i in range(args.turns)]
        idle_waits, seen = turn_waits(app)[seen:], len(turn_waits(app))
        busy = phase_with_background(url, app, loop, args.turns, "busy")
        busy_waits = turn_waits(app)[seen:]
        preempted = find_scheduler(app.state.llm).snapshot()["priorities"]["background"]["preempted"]  # type: ignore[union-attr]
    with serve(settings("queued"), preemptible=False) as (url, app, loop):
        queued = phase_with_background(url, app, loop, args.turns, "queued")
        queued_waits = turn_waits(app)
    print("plain turn latency (/v1/conversation/turn), and each model call's wait for the model within it:")
    for label, turns, waits in [
        ("idle model", idle, idle_waits),
        ("background generation running, preempted", busy, busy_waits),
        ("background generation running, not preempted", queued, queued_waits),
    ]:
        line(f"{label}: turn", [t for t, _ in turns], sum(f for _, f in turns))
        line(f"{label}: wait", waits)
    print(f"  background generations preempted: {preempted}")


if __name__ == "__main__":
    main()
