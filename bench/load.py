"""Load benchmark: 100 simulated Unity clients for 60 s against a real server process (scripted engine).

Run: `.venv/bin/python bench/load.py` (options: `--clients 100 --seconds 60`).

Each client is one character's Unity instance doing a realistic mix: conversation turns (whole conversations,
the history growing until the server ends the talk), state reports (POST /v1/agents/{id}/state), the current
plan item (GET /v1/agents/{id}/plan/now, which plans a new day first) and memory retrieval. Only loopback
traffic; every loop is bounded by the run time. After the run it waits (bounded) for the background jobs to
finish, stops the server, and audits the SQLite file: acknowledged turns missing from the transcript or from
either agent's memories (lost data, must be 0) and duplicated memories.

Prints requests, errors, p50/p99 latency per kind, the LLM queue figures from /health, and the audit.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.audit import Ack, audit  # noqa: E402
from bench.serverproc import ServerProcess  # noqa: E402

#: kind -> weight of the mix (turns dominate: they are what players see).
MIX = {"turn": 50, "state": 25, "plan_now": 10, "retrieve": 15}
STATES = ["moving_to_poi", "wandering_in_poi", "talking", "cooldown"]
QUERIES = ["カフェで話したこと", "昨日の図書館", "ひかりについて", "今日の予定", "公園の散歩"]
# Exact audit (see bench/audit.py); caps high enough that a minute of load evicts nothing.
ENV = {"MEMORY_DEDUP": "false", "MEMORY_CAP_OBSERVATION": "1000000", "MEMORY_CAP_REFLECTION": "1000000"}


class Client:
    """One simulated Unity client: its own character, and a partner for its conversations."""

    def __init__(self, index: int, agents: list[dict[str, Any]], pois: list[str], stats: Stats) -> None:
        self.rng = random.Random(index)
        self.index = index
        me = agents[index % len(agents)]
        other = agents[(index + 1 + self.rng.randrange(len(agents) - 1)) % len(agents)]
        self.me, self.other = me["id"], other["id"]
        self.names = {a["id"]: a["name"] for a in agents}
        self.pois, self.stats = pois, stats
        self.conversation, self.history = 0, []

    async def run(self, http: httpx.AsyncClient, until: float) -> None:
        kinds, weights = list(MIX), list(MIX.values())
        while time.monotonic() < until:
            kind = self.rng.choices(kinds, weights)[0]
            await getattr(self, kind)(http)

    async def _call(self, http: httpx.AsyncClient, kind: str, method: str, url: str, **kw: Any) -> Any:
        start = time.perf_counter()
        try:
            response = await http.request(method, url, **kw)
        except httpx.HTTPError as exc:
            self.stats.record(kind, time.perf_counter() - start, f"{type(exc).__name__}")
            return None
        error = None if response.status_code < 400 else str(response.status_code)
        self.stats.record(kind, time.perf_counter() - start, error)
        return response.json() if error is None else None

    async def turn(self, http: httpx.AsyncClient) -> None:
        session_id = f"load-{self.index}-{self.conversation}"
        speaker, partner = (self.me, self.other) if len(self.history) % 2 == 0 else (self.other, self.me)
        body = {"agent_id": speaker, "target_id": partner, "session_id": session_id, "history": self.history,
                "location_name": self.pois[self.index % len(self.pois)], "time_of_day": 9 + self.conversation % 12}  # fmt: skip
        reply = await self._call(http, "turn", "POST", "/v1/conversation/turn", json=body)
        if reply is None:
            return
        self.stats.acks.append(
            Ack("default", session_id, reply["turn_index"], speaker, partner, reply["dialogue"])
        )
        self.history = [*self.history, f"{self.names[speaker]}: {reply['dialogue']}"]
        if reply["is_conversation_end"]:
            self.conversation, self.history = self.conversation + 1, []

    async def state(self, http: httpx.AsyncClient) -> None:
        body = {"state": self.rng.choice(STATES), "location_name": self.rng.choice(self.pois), "day": 1,
                "time_of_day": round(self.rng.uniform(6, 22), 2)}  # fmt: skip
        await self._call(http, "state", "POST", f"/v1/agents/{self.me}/state", json=body)

    async def plan_now(self, http: httpx.AsyncClient) -> None:
        params = {"day": 1, "time_of_day": round(self.rng.uniform(6, 22), 2)}
        await self._call(http, "plan_now", "GET", f"/v1/agents/{self.me}/plan/now", params=params)

    async def retrieve(self, http: httpx.AsyncClient) -> None:
        body = {"query": self.rng.choice(QUERIES), "k": 5}
        await self._call(http, "retrieve", "POST", f"/v1/agents/{self.me}/memories/retrieve", json=body)


class Stats:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.acks: list[Ack] = []

    def record(self, kind: str, seconds: float, error: str | None) -> None:
        self.latency[kind].append(seconds)
        if error is not None:
            self.errors[kind][error] += 1


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0


async def drive(url: str, clients: int, seconds: float) -> Stats:
    stats = Stats()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
        agents = (await http.get("/v1/agents")).json()
        pois = [p["name"] for p in (await http.get("/v1/pois")).json()]
        until = time.monotonic() + seconds
        await asyncio.gather(*(Client(i, agents, pois, stats).run(http, until) for i in range(clients)))
    return stats


def report(stats: Stats, seconds: float, health: dict[str, Any]) -> None:
    total = sum(len(v) for v in stats.latency.values())
    errors = sum(sum(v.values()) for v in stats.errors.values())
    print(f"requests {total} in {seconds:g} s ({total / seconds:.0f}/s), errors {errors}")
    print(f"{'kind':10} {'requests':>9} {'errors':>7} {'p50 ms':>8} {'p99 ms':>8}")
    for kind in MIX:
        values = stats.latency.get(kind, [])
        print(f"{kind:10} {len(values):9d} {sum(stats.errors[kind].values()):7d} "
              f"{_pct(values, 0.5):8.1f} {_pct(values, 0.99):8.1f}  {dict(stats.errors[kind]) or ''}")  # fmt: skip
    queue = health.get("llm_queue") or {}
    print(f"llm queue: concurrency {queue.get('concurrency')}, fallbacks {queue.get('fallbacks')}")
    for name, figures in (queue.get("priorities") or {}).items():
        print(f"  {name:10} granted {figures['granted']:6d}  wait p50 {figures['wait_p50_s'] * 1000:7.1f} ms"
              f"  p95 {figures['wait_p95_s'] * 1000:7.1f} ms  errors {figures['errors']}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--jobs-timeout", type=float, default=300.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "machi.db"
        server = ServerProcess(database, env=ENV)
        server.start()
        try:
            stats = asyncio.run(drive(server.url, args.clients, args.seconds))
            health = httpx.get(f"{server.url}/health", timeout=30).json()
            started = time.monotonic()
            counts = server.wait_for_jobs(timeout=args.jobs_timeout)
            print(f"background jobs drained {time.monotonic() - started:.1f} s after the run: {counts}")
        finally:
            server.stop()
        report(stats, args.seconds, health)
        result = audit(database, stats.acks)
    print(f"acknowledged turns {result.acknowledged}; lost data {result.lost} "
          f"(missing turns {result.missing_turns}, missing memories {result.missing_memories}); "
          f"duplicated memories {result.duplicated_memories}, duplicated reflections "
          f"{result.duplicated_reflections}; jobs {result.jobs}")  # fmt: skip
    return 0 if result.lost == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
