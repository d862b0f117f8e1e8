"""Conversation-turn benchmark: the real server's processes over HTTP, against a bare FastAPI endpoint.

Run: `.venv/bin/python bench/turns.py` (options: `--seconds 10 --clients 1 10 --memories 2000 --rounds 1
--postgres URL`; MACHI_BENCH_POSTGRES_URL works as --postgres). On a noisy machine use `--rounds 3`: the
configurations are run in turn, round after round, and the medians printed.

Each configuration is started with the real command on a fresh database (scripted engine, two agents created
with PUT /v1/agents, N memories each added with the batch memory API):

- `one process`: `machi serve --workers 0`, HTTP and the background jobs in one process (before issue 23, the
  only way Machi ran);
- `1 API + worker`: `machi serve`, the default: one API process and one `machi worker`;
- `2 API + worker`: `machi serve --workers 2`: two API processes on one port, and the worker.

on SQLite (one WAL file) and, given a PostgreSQL URL whose role may create databases, on PostgreSQL. Clients
hold whole conversations (the history grows until the server ends the talk), so the background work a real
run causes (observations, importance ratings, reflections, person memory) is part of the load. For each it
prints turns/s, p50/p99 latency, and the server's CPU per turn summed over all its processes (split into API
and worker; a local PostgreSQL server's CPU apart), counted until the workers have caught up with the jobs
the run committed. A bare FastAPI endpoint that only validates the same request body gives the machine's
ceiling for reference.
Targets (issue 23): CPU per turn no worse than one process's; with 2 API processes within 15% of 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from databases import fresh_database

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

except ImportError:  # pragma: no cover - only the subprocess needs it
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Config:
    name: str
    serve_args: tuple[str, ...]


CONFIGS = [
    Config("one process", ("--workers", "0")),
    Config("1 API + worker", ()),
    Config("2 API + worker", ("--workers", "2")),
]


def start_machi(config: Config, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "backend.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
               *config.serve_args]  # fmt: skip
    return subprocess.Popen(command, env=env, cwd=str(ROOT))


def start_bare(port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "uvicorn", "turns:bare_app", "--host", "127.0.0.1", "--port", str(port),
               "--log-level", "warning", "--app-dir", str(ROOT / "bench")]  # fmt: skip
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


async def setup_world(url: str, memories: int) -> None:
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


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants (Linux /proc): the serve command, its uvicorn processes and its worker."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo += [int(child) for child in (task / "children").read_text().split()]
            except OSError:
                pass
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc), or NaN elsewhere."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def is_worker(pid: int) -> bool:
    try:
        return b"worker" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False


def cpu_by_kind(pid: int) -> dict[str, float]:
    """CPU seconds so far of the server's API processes (the serve command included), of its workers, and of
    a PostgreSQL server on this machine (all its processes: the database's share of the work)."""
    totals = {"api": 0.0, "worker": 0.0, "db": 0.0}
    for member in process_tree(pid):
        totals["worker" if is_worker(member) else "api"] += cpu_seconds(member)
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "comm").read_text().strip() == "postgres":
                totals["db"] += cpu_seconds(int(proc.name))
        except OSError:
            pass
    return totals


async def model_calls(url: str) -> dict[str, int]:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        stats = (await client.get("/v1/llm-calls/stats")).json()
    return {p["purpose"]: int(p["calls"]) for p in stats.get("purposes", [])}


async def measure_machi(url: str, pid: int, clients: int, seconds: float) -> dict[str, Any]:
    """`measure`, plus the server's CPU (all its processes) and model calls per turn, the background work
    included (counted until the workers have caught up with the jobs the run committed)."""
    calls_before, cpu_before = await model_calls(url), cpu_by_kind(pid)
    result: dict[str, Any] = dict(await measure(url, clients, seconds))
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        await settle(client)
    calls_after, cpu_after = await model_calls(url), cpu_by_kind(pid)
    turns = max(1.0, result["rps"] * result["elapsed"])
    for kind in ("api", "worker", "db"):
        result[f"{kind}_cpu_ms"] = (cpu_after[kind] - cpu_before[kind]) * 1000 / turns
    result["cpu_ms_per_turn"] = result["api_cpu_ms"] + result["worker_cpu_ms"]
    result["calls_per_turn"] = {
        purpose: (calls_after.get(purpose, 0) - calls_before.get(purpose, 0)) / turns
        for purpose in calls_after
    }
    return result


async def run_config(
    config: Config, database: str, env: dict[str, str], args: argparse.Namespace
) -> list[tuple[int, dict[str, Any]]]:
    port = free_port()
    machi = start_machi(config, port, {**env, "DATABASE_URL": database})
    url = f"http://127.0.0.1:{port}"
    try:
        await wait_ready(url, "/health")
        began = time.perf_counter()
        await setup_world(url, args.memories)
        print(
            f"  {config.name}: setup 2 agents x {args.memories} memories in {time.perf_counter() - began:.1f} s"
        )
        return [
            (clients, await measure_machi(url, machi.pid, clients, args.seconds)) for clients in args.clients
        ]
    finally:
        stop_tree(machi)


def stop_tree(machi: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the serve command, then wait until every process it started has gone (its database is
    dropped next)."""
    members = process_tree(machi.pid)
    machi.terminate()
    try:
        machi.wait(timeout=30)
    except subprocess.TimeoutExpired:
        machi.kill()
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() and not _zombie(pid) for pid in members[1:]):
        if time.monotonic() > deadline:
            for pid in members[1:]:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.1)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


Results = dict[tuple[str, str, int], list[dict[str, Any]]]


async def run(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="machi-bench-"))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MACHI_", "LLM_", "DATABASE_", "OLLAMA_", "PROCESS_", "JOB_"))
    }
    env.update({"LLM_PROVIDER": "scripted", "LOAD_DEMO_WORLD": "false", "LOG_LEVEL": "warning",
                "EMBEDDING_PROVIDER": "local"})  # fmt: skip
    databases = ["sqlite"] + (["postgresql"] if args.postgres else [])
    if not args.postgres:
        print("PostgreSQL: skipped (give --postgres URL or MACHI_BENCH_POSTGRES_URL)")
    results: Results = {}
    # Rounds interleave the configurations, so a slow spell of a shared machine falls on all of them.
    for round_ in range(args.rounds):
        for kind in databases:
            print(f"round {round_ + 1}, {kind}:")
            for config in CONFIGS:
                with fresh_database(kind, tmp, args.postgres) as database:
                    for clients, result in await run_config(config, database, env, args):
                        results.setdefault((kind, config.name, clients), []).append(result)
    bare_port = free_port()
    bare = start_bare(bare_port, env)
    try:
        await wait_ready(f"http://127.0.0.1:{bare_port}", "/docs")
        bare_rows = {c: await measure(f"http://127.0.0.1:{bare_port}", c, args.seconds) for c in args.clients}
    finally:
        bare.terminate()
        bare.wait(timeout=20)
    report(results, bare_rows, args)


def median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(run[key] for run in runs))


def report(results: Results, bare: dict[int, dict[str, float]], args: argparse.Namespace) -> None:
    print(f"\nturns: scripted engine, {args.memories} memories per agent, {args.seconds:g} s per run, median of "
          f"{args.rounds} round(s). CPU per turn: every process of the server summed (API processes + worker),")  # fmt: skip
    print("background work included; `db` is a PostgreSQL server's own processes on this machine, apart")
    print(f"{'database':<10} {'configuration':<15} {'clients':>7} | {'turns/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'errors':>6} | {'CPU ms/turn':>11} {'(API':>6} {'+ worker)':>9} {'db':>6} | {'of bare':>7}")  # fmt: skip
    for (kind, name, clients), runs in results.items():
        rps = median(runs, "rps")
        share = rps / bare[clients]["rps"] if bare[clients]["rps"] else float("nan")
        print(f"{kind:<10} {name:<15} {clients:>7} | {rps:>8.1f} {median(runs, 'p50'):>8.1f} "
              f"{median(runs, 'p99'):>8.1f} {sum(r['errors'] for r in runs):>6.0f} | "
              f"{median(runs, 'cpu_ms_per_turn'):>11.1f} {median(runs, 'api_cpu_ms'):>6.1f} "
              f"{median(runs, 'worker_cpu_ms'):>9.1f} {median(runs, 'db_cpu_ms'):>6.1f} | {share:>7.1%}")  # fmt: skip
    for clients, r in bare.items():
        print(
            f"{'bare FastAPI endpoint':<26} {clients:>7} | {r['rps']:>8.1f} {r['p50']:>8.1f} {r['p99']:>8.1f}"
        )
    if args.rounds > 1:
        print("\neach round's turns/s and CPU ms per turn (the spread is this machine's noise):")
        for (kind, name, clients), runs in results.items():
            spread = ", ".join(f"{r['rps']:.1f}/{r['cpu_ms_per_turn']:.1f}" for r in runs)
            print(f"{kind:<10} {name:<15} {clients:>7}: {spread}")
    print(
        "\nmodel calls one turn causes (the dialogue itself, then ratings, emotion, person memory, reflections):"
    )
    for (kind, name, clients), runs in results.items():
        calls = runs[-1]["calls_per_turn"]
        listed = ", ".join(f"{p} {n:.2f}" for p, n in sorted(calls.items()) if n)
        print(f"{kind:<10} {name:<15} {clients:>7}: {listed}")
    print(
        "\nratios of medians (issue 23: CPU per turn no worse than one process; 2 API within 15% of 1 API):"
    )
    for kind in dict.fromkeys(k for k, _, _ in results):
        for clients in args.clients:
            one, split, two = (results[(kind, c.name, clients)] for c in CONFIGS)
            cpu = [median(runs, "cpu_ms_per_turn") for runs in (one, split, two)]
            rps = [median(runs, "rps") for runs in (one, split, two)]
            print(f"{kind:<10} {clients:>3} clients: CPU/turn 1 API+worker / one process = {cpu[1] / cpu[0]:.2f}, "
                  f"2 API / 1 API = {cpu[2] / cpu[1]:.2f}; turns/s 1 API+worker / one process = "
                  f"{rps[1] / rps[0]:.2f}, 2 API / 1 API = {rps[2] / rps[1]:.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=1, help="runs of every configuration, interleaved")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("MACHI_BENCH_POSTGRES_URL"),
        help="a PostgreSQL URL whose role may create databases (each configuration gets a fresh one)",
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
