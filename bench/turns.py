"""Conversation-turn benchmark: the real server over HTTP against a bare FastAPI endpoint on the same machine.

Run: `.venv/bin/python bench/turns.py` (options: `--seconds 10 --clients 1 10 50 --memories 2000`).

Starts Machi in a uvicorn subprocess (scripted engine, a temporary SQLite file, two agents created with
PUT /v1/agents, N memories each added with the batch memory API), then drives POST /v1/conversation/turn
from 1, 10 and 50 concurrent clients for a fixed time each. Every client holds whole conversations (the
history grows until the server ends the talk, then a new session starts), so the background work a real
run causes (observation memories, importance ratings, reflections) is part of the load. It then does the
same against a bare FastAPI endpoint that only validates the same request body and returns a fixed reply,
and prints turns/s, p50/p99 latency and the ratio. Target: >= 30% of the bare endpoint's throughput.

`--request-path-only` is a diagnostic: the server runs with nothing after the reply (no job runs, no
observation, emotion or event work; the jobs are still committed with each turn, as that is request-path
work), so the figures show what the request path alone can reach. A real server never runs like this: its
characters would remember nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
AGENTS = {
    "aoi": {
        "name": "葵",
        "language": "ja",
        "backstory": "図書館が好きな学生。",
        "speaking_style": "丁寧な口調。",
    },
    "hikari": {
        "name": "ひかり",
        "language": "ja",
        "backstory": "カフェのバリスタ。",
        "speaking_style": "元気な話し方。",
    },
}
PLACES = ["カフェ", "図書館", "公園", "駅前", "商店街"]
ACTS = ["話した", "本を読んだ", "散歩した", "ケーキを食べた", "写真を撮った"]

try:  # the bare endpoint, run by the second uvicorn subprocess as `turns:bare_app`
    from fastapi import FastAPI
    from pydantic import BaseModel, Field

    class _BareRequest(BaseModel):
        agent_id: str = Field(min_length=1, max_length=64)
        target_id: str = Field(min_length=1, max_length=64)
        session_id: str = Field(min_length=1, max_length=128)
        location_name: str | None = None
        history: list[str] = Field(default_factory=list, max_length=64)
        time_of_day: float = Field(ge=0, lt=24)

    bare_app = FastAPI()

    @bare_app.post("/v1/conversation/turn")
    async def _bare_turn(body: _BareRequest) -> dict[str, Any]:
        return {"dialogue": "こんにちは。", "emotion": "neutral", "is_conversation_end": len(body.history) >= 7,
                "end_reason": None, "session_id": body.session_id, "turn_index": len(body.history),
                "fallback": False}  # fmt: skip

    def request_path_app() -> FastAPI:
        """Machi with its after-turn work switched off once started (`--request-path-only`)."""
        from contextlib import asynccontextmanager

        from backend.app import create_app
        from backend.conversation.aftermath import Aftermath

        app = create_app()
        started = app.router.lifespan_context
        # This process serves the bench alone: the class itself can go quiet (events, emotion, observations).
        Aftermath.after_turn = lambda *args, **kwargs: None  # type: ignore[method-assign]

        @asynccontextmanager
        async def lifespan(app: FastAPI) -> Any:
            async with started(app) as state:
                await app.state.jobs.stop()  # no poll for due jobs
                app.state.jobs.submit = lambda jobs: None
                app.state.jobs.submit_after = lambda first, then: None
                yield state

        app.router.lifespan_context = lifespan
        return app
except ImportError:  # pragma: no cover - only the subprocess needs it
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(app: str, port: int, env: dict[str, str], app_dir: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port),
               "--log-level", "warning", "--app-dir", str(app_dir)]  # fmt: skip
    if app.endswith(("create_app", "request_path_app")):
        command.append("--factory")
    return subprocess.Popen(command, env=env, cwd=str(ROOT))


async def wait_ready(url: str, path: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            try:
                if (await client.get(url + path)).status_code < 500:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError(f"{url} did not start within {timeout:g} s")


async def setup_world(url: str, memories: int, *, background: bool = True) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        for agent_id, persona in AGENTS.items():
            (await client.put(f"/v1/agents/{agent_id}", json=persona)).raise_for_status()
            for start in range(0, memories, 1000):
                batch = [
                    {"type": "observation", "content": f"{PLACES[i % 5]}で{ACTS[(i // 5) % 5]}（{i}）",
                     "importance": 1 + i % 10, "day": 1 + i // 500, "time_of_day": (i % 96) / 4}
                    for i in range(start, min(memories, start + 1000))
                ]  # fmt: skip
                (
                    await client.post(f"/v1/agents/{agent_id}/memories", json={"memories": batch})
                ).raise_for_status()
        if background:
            await settle(client)


async def settle(client: httpx.AsyncClient, timeout: float = 300.0) -> None:
    """Wait until the server has no background work left, in-memory tasks and persisted jobs alike (so
    each run starts from the same state and its background work is counted with it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        health = (await client.get("/health")).json()
        jobs = health.get("jobs") or {}
        if (
            not health.get("background_tasks", 0)
            and not jobs.get("pending", 0)
            and not jobs.get("running", 0)
        ):
            return
        await asyncio.sleep(0.2)


async def client_loop(client: httpx.AsyncClient, worker: str, stop_at: float, latencies: list[float]) -> int:
    """One Unity-like client: whole conversations, alternating speakers. Returns the number of errors."""
    errors, session = 0, 0
    while time.monotonic() < stop_at:
        session += 1
        history: list[str] = []
        speakers = ("aoi", "hikari") if session % 2 else ("hikari", "aoi")
        while time.monotonic() < stop_at:
            me, other = speakers[len(history) % 2], speakers[(len(history) + 1) % 2]
            body = {"agent_id": me, "target_id": other, "session_id": f"{worker}-s{session}",
                    "location_name": "カフェ", "history": history, "time_of_day": 14.5}  # fmt: skip
            started = time.perf_counter()
            response = await client.post("/v1/conversation/turn", json=body)
            latencies.append(time.perf_counter() - started)
            if response.status_code != 200:
                errors += 1
                break
            reply = response.json()
            history = [*history, f"{AGENTS[me]['name']}: {reply['dialogue']}"]
            if reply["is_conversation_end"]:
                break
    return errors


async def measure(url: str, clients: int, seconds: float) -> dict[str, float]:
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        stop_at = time.monotonic() + seconds
        started = time.perf_counter()
        # Session ids unique to this run: a repeated (session, history length) is a retry, answered from
        # storage without the model, and would flatter the figures.
        run = uuid.uuid4().hex[:8]
        workers = (client_loop(client, f"{run}-w{w}", stop_at, latencies) for w in range(clients))
        errors = await asyncio.gather(*workers)
        elapsed = time.perf_counter() - started
    latencies.sort()

    def pct(p: float) -> float:
        return (
            latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000 if latencies else float("nan")
        )

    return {"rps": len(latencies) / elapsed, "p50": pct(0.50), "p99": pct(0.99), "errors": float(sum(errors)),
            "elapsed": elapsed}  # fmt: skip


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc), or NaN elsewhere."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


async def model_calls(url: str) -> dict[str, int]:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        stats = (await client.get("/v1/llm-calls/stats")).json()
    return {p["purpose"]: int(p["calls"]) for p in stats.get("purposes", [])}


async def measure_machi(
    url: str, pid: int, clients: int, seconds: float, *, background: bool = True
) -> dict[str, float]:
    """`measure`, plus the server's CPU and model calls per turn, the background work included
    (counted until the server has caught up with the work the run caused)."""
    calls_before, cpu_before = await model_calls(url), cpu_seconds(pid)
    result = await measure(url, clients, seconds)
    if background:
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            await settle(client)
    calls_after, cpu_after = await model_calls(url), cpu_seconds(pid)
    turns = max(1.0, result["rps"] * result["elapsed"])
    result["cpu_ms_per_turn"] = (cpu_after - cpu_before) * 1000 / turns
    result["calls_per_turn"] = {
        purpose: (calls_after.get(purpose, 0) - calls_before.get(purpose, 0)) / turns
        for purpose in calls_after
    }
    return result


async def run(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="machi-bench-"))
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("MACHI_", "LLM_", "DATABASE_", "OLLAMA_"))
    }
    env.update({"DATABASE_URL": f"sqlite:///{tmp / 'bench.db'}", "LLM_PROVIDER": "scripted",
                "LOAD_DEMO_WORLD": "false", "LOG_LEVEL": "warning", "EMBEDDING_PROVIDER": "local"})  # fmt: skip
    machi_port, bare_port = free_port(), free_port()
    background = not args.request_path_only
    if background:
        machi = start_server("backend.app:create_app", machi_port, env, ROOT)
    else:
        machi = start_server("turns:request_path_app", machi_port, env, ROOT / "bench")
    bare = start_server("turns:bare_app", bare_port, env, ROOT / "bench")
    machi_url, bare_url = f"http://127.0.0.1:{machi_port}", f"http://127.0.0.1:{bare_port}"
    try:
        await wait_ready(machi_url, "/health")
        await wait_ready(bare_url, "/docs")
        began = time.perf_counter()
        await setup_world(machi_url, args.memories, background=background)
        print(f"setup: 2 agents x {args.memories} memories in {time.perf_counter() - began:.1f} s")
        rows = []
        for clients in args.clients:
            machi_result = await measure_machi(
                machi_url, machi.pid, clients, args.seconds, background=background
            )
            rows.append((clients, machi_result, await measure(bare_url, clients, args.seconds)))
        report(rows, args)
    finally:
        for process in (machi, bare):
            process.terminate()
            process.wait(timeout=20)


def report(rows: list[tuple[int, dict[str, float], dict[str, float]]], args: argparse.Namespace) -> None:
    print(f"\nturns: scripted engine, {args.memories} memories per agent, {args.seconds:g} s per run")
    if args.request_path_only:
        print(
            "REQUEST PATH ONLY (diagnostic): nothing runs after the reply; CPU per turn excludes background"
        )
    print(f"{'clients':>7} | {'turns/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6} | "
          f"{'bare/s':>8} {'p50 ms':>8} {'p99 ms':>8} | {'ratio':>6}")  # fmt: skip
    for clients, machi, bare in rows:
        ratio = machi["rps"] / bare["rps"] if bare["rps"] else float("nan")
        print(f"{clients:>7} | {machi['rps']:>8.1f} {machi['p50']:>8.1f} {machi['p99']:>8.1f} {machi['errors']:>6.0f} | "
              f"{bare['rps']:>8.1f} {bare['p50']:>8.1f} {bare['p99']:>8.1f} | {ratio:>6.1%}")  # fmt: skip
    scope = "the request path alone" if args.request_path_only else "background work included"
    print(f"\nwhere a turn's time goes: the server's CPU per turn, {scope}, and the model calls")
    print("one turn causes (the dialogue itself, then ratings, emotion, person memory, reflections):")
    for clients, machi, _ in rows:
        calls = ", ".join(f"{purpose} {n:.2f}" for purpose, n in sorted(machi["calls_per_turn"].items()) if n)
        print(
            f"{clients:>7} clients: {machi['cpu_ms_per_turn']:6.1f} ms CPU per turn; calls per turn: {calls}"
        )
    best_machi = max(rows, key=lambda row: row[1]["rps"])
    best_bare = max(rows, key=lambda row: row[2]["rps"])
    print(
        f"\npeak against peak: {best_machi[1]['rps']:.1f} turns/s ({best_machi[0]} clients) vs "
        f"{best_bare[2]['rps']:.1f} bare requests/s ({best_bare[0]} clients) = "
        f"{best_machi[1]['rps'] / best_bare[2]['rps']:.1%} (the load generator shares the 2 cores: at 50 clients "
        "it slows the bare endpoint most, which flatters that row's ratio)"
    )
    print("target: turn throughput >= 30% of the bare endpoint's")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument(
        "--request-path-only",
        action="store_true",
        help="diagnostic: the server does nothing after the reply (module docstring)",
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
