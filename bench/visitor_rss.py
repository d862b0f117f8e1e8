"""Memory of a long-running booth: 5,000 visitor turns against a real `machi serve` (SQLite, scripted engine).

Run: `.venv/bin/python bench/visitor_rss.py` (options: `--turns 5000 --clients 8 --players 20 --every 500`).

Visitors (`player:visitor-N`) talk with the demo world's characters over POST /v1/conversation/player-turn,
each conversation a few lines long, several clients at once; the rate limits are raised for the run (a booth's
visitors are many people, here a few clients). Every `--every` turns it samples the resident memory (VmRSS in
/proc/<pid>/status) of the API process and of its worker process, and counts the model-call trace's rows
against LLM_CALL_RETENTION_ROWS, and the characters' memories. Memory that levels off once the caches are
full is what to see; one that keeps growing with the turns is a leak (tracemalloc snapshots in a diagnostic
run find what grows). The memory indexes hold every memory's vector, so a process's memory also follows the
memories up to MEMORY_CAP_OBSERVATION per character: `--memory-cap 100` reaches the caps within the run.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.serverproc import ServerProcess  # noqa: E402

#: The trace's row limit for the run: below the calls of 5,000 turns (about one each), so the cap shows.
TRACE_ROWS = 2000
ENV = {
    "PLAYER_LINES_PER_MINUTE": "10000",
    "WORLD_PLAYER_LINES_PER_MINUTE": "1000000",
    "LLM_CALL_RETENTION_ROWS": str(TRACE_ROWS),
}
LINES = ["こんにちは!", "今日は何をしているの?", "おすすめの場所はある?", "Nice to meet you.", "また来るね。"]
CONVERSATION_LINES = 5


def rss_mb(pid: int | None) -> float:
    """The process's resident memory in MB (0 when it is gone)."""
    if pid is None:
        return 0.0
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    kb = next((line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")), "0")
    return int(kb) / 1024


def child_pid(pid: int) -> int | None:
    """The first child of `pid` (the worker process `machi serve` starts beside the API)."""
    for task in Path(f"/proc/{pid}/task").glob("*"):
        children = (task / "children").read_text().split()
        if children:
            return int(children[0])
    return None


def counts(database: Path) -> tuple[int, int]:
    """The trace's rows and the memories (the characters' memory indexes grow with them, up to MEMORY_CAP_*)."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30) as conn:
        trace = conn.execute("SELECT COUNT(*) FROM llmcall").fetchone()[0]
        return int(trace), int(conn.execute("SELECT COUNT(*) FROM memory").fetchone()[0])


class Visitors:
    """Hands out the next visitor line: whose, to whom, in which conversation, with what history."""

    def __init__(self, agents: list[dict[str, Any]], players: int) -> None:
        self.agents, self.players = agents, players
        self.histories: dict[str, list[str]] = {}
        self.sent = 0

    def next(self) -> dict[str, Any]:
        n = self.sent
        self.sent += 1
        player, conversation = n % self.players, n // (self.players * CONVERSATION_LINES)
        agent = self.agents[(player + conversation) % len(self.agents)]
        session = f"rss-{player}-{conversation}"
        history = self.histories.setdefault(session, [])
        return {"session_id": session, "player_id": f"player:visitor-{player}", "agent_id": agent["id"],
                "text": LINES[n % len(LINES)], "history": list(history), "time_of_day": 10 + n % 8,
                "location_name": "中央カフェ"}  # fmt: skip

    def answered(self, body: dict[str, Any], reply: dict[str, Any], name: str) -> None:
        history = self.histories.get(body["session_id"])
        if history is None:  # the conversation ended meanwhile
            return
        if reply["is_conversation_end"] or len(history) >= 2 * CONVERSATION_LINES:
            self.histories.pop(body["session_id"], None)
        elif len(history) == len(body["history"]):  # no other client's line in between
            history += [reply["player_line"], f"{name}: {reply['dialogue']}"]


async def drive(server: ServerProcess, database: Path, args: argparse.Namespace) -> list[tuple[Any, ...]]:
    assert server.proc is not None
    api, worker = server.proc.pid, child_pid(server.proc.pid)
    rows: list[tuple[Any, ...]] = [(0, rss_mb(api), rss_mb(worker), *counts(database), 0, 0.0)]
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as http:
        agents = (await http.get("/v1/agents")).json()
        names = {agent["id"]: agent["name"] for agent in agents}
        visitors, done, errors, started = Visitors(agents, args.players), 0, 0, time.monotonic()

        async def client() -> None:
            nonlocal done, errors
            while visitors.sent < args.turns:
                body = visitors.next()
                reply = await http.post("/v1/conversation/player-turn", json=body)
                if reply.status_code == 200:
                    visitors.answered(body, reply.json(), names[body["agent_id"]])
                else:
                    errors += 1
                    if errors <= 3:  # the first few, to say why
                        print(f"{reply.status_code}: {reply.text[:300]}", file=sys.stderr)
                done += 1
                if done % args.every == 0:
                    sample = (done, rss_mb(api), rss_mb(worker), *counts(database), errors)
                    rows.append((*sample, time.monotonic() - started))

        await asyncio.gather(*(client() for _ in range(args.clients)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--players", type=int, default=20)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument(
        "--memory-cap", type=int, help="MEMORY_CAP_OBSERVATION/REFLECTION (default: the setting's)"
    )
    args = parser.parse_args()
    caps = {"MEMORY_CAP_OBSERVATION": str(args.memory_cap), "MEMORY_CAP_REFLECTION": str(args.memory_cap)}
    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "machi.db"
        server = ServerProcess(database, env={**ENV, **(caps if args.memory_cap else {})})
        server.start()
        try:
            rows = asyncio.run(drive(server, database, args))
        finally:
            server.stop()
    print(f"{'turns':>6} {'api RSS MB':>11} {'worker RSS MB':>14} {'trace rows':>11} {'limit':>6} "
          f"{'memories':>9} {'errors':>7} {'seconds':>8}")  # fmt: skip
    for turns, api, worker, trace, memories, errors, seconds in rows:
        print(f"{turns:6d} {api:11.1f} {worker:14.1f} {trace:11d} {TRACE_ROWS:6d} {memories:9d} {errors:7d} "
              f"{seconds:8.1f}")  # fmt: skip
    over = [row for row in rows if row[3] > TRACE_ROWS]
    print(f"trace rows within LLM_CALL_RETENTION_ROWS at every sample: {not over}")
    return 1 if over or rows[-1][5] else 0


if __name__ == "__main__":
    raise SystemExit(main())
