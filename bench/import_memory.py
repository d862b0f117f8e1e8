"""World import benchmark: the served process's peak memory per MB imported, and /health while it imports.

Run: `.venv/bin/python bench/import_memory.py` (options: `--mb 50`, `--before REF` to serve an earlier commit's
tree side by side, e.g. `--before b3151b6`, the last commit that parsed the import whole).

Builds an export-shaped world document of about `--mb` MB (one agent per 1,000 memories, each memory with a
short text and a 384-float embedding, as an export carries them), starts a real server process for each tree
(scripted model, a SQLite file of its own), and POSTs the file to `/v1/world/import` streamed from disk while a
second client asks `/health` every 50 ms. The server's RSS comes from /proc (VmRSS before, VmHWM after: the
process's peak), so the figure counts everything the import made the process hold.

Prints, per tree: the import's status and duration, RSS before and at its peak, peak RSS per MB of import
(above the RSS before), and /health latency (median and worst) before and during the import.
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.serverproc import ROOT, ServerProcess  # noqa: E402

WORLD = {"X-Machi-World": "bench"}
MEMORY_BYTES = 2_300  # about what one row below takes in the document


def write_document(path: Path, megabytes: float) -> int:
    """An export-shaped document of about `megabytes` MB at `path`; returns its memory count."""
    count = int(megabytes * 1e6 / MEMORY_BYTES)
    rng = np.random.default_rng(0)
    agents = [
        {"id": f"a{n}", "name": f"Agent {n}", "language": "en", "backstory": "Lives in town."}
        for n in range(count // 1000 + 1)
    ]
    memories = [
        {
            "id": i + 1,
            "agent_id": f"a{i // 1000}",
            "type": "observation",
            "content": f"Memory {i}: saw a friend at the library and talked about the old map of the town.",
            "importance": 1 + i % 10,
            "importance_source": "caller",
            "created_day": 1 + i // 500,
            "tags": ["library", "map"],
            "embedding": base64.b64encode(rng.standard_normal(384).astype(np.float32).tobytes()).decode(),
        }
        for i in range(count)
    ]
    doc = {"format": "machi-world", "version": 1, "world_id": "bench", "agents": agents, "pois": []}
    path.write_text(json.dumps({**doc, "memories": memories}), encoding="utf-8")
    return count


def rss_kb(pid: int, field: str) -> int:
    """VmRSS (now) or VmHWM (the peak so far) of a process, in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise LookupError(field)


class HealthProbe:
    """Asks /health every `every_s` in a thread; latencies in ms."""

    def __init__(self, url: str, every_s: float = 0.05) -> None:
        self.url, self.every_s = url, every_s
        self.latencies: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=120) as http:
            while not self._stop.is_set():
                start = time.perf_counter()
                http.get(f"{self.url}/health")
                self.latencies.append((time.perf_counter() - start) * 1000)
                self._stop.wait(self.every_s)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def measure(root: Path, document: Path, workdir: Path) -> dict[str, Any]:
    """Serve `root`, import `document` into it, and return the figures."""
    server = ServerProcess(workdir / "machi.db", root=root, env={"LOAD_DEMO_WORLD": "false"})
    server.start()
    try:
        assert server.proc is not None
        pid = server.proc.pid
        with HealthProbe(server.url) as idle:
            time.sleep(1.0)
        rss_before = rss_kb(pid, "VmRSS")
        size = document.stat().st_size
        with HealthProbe(server.url) as busy, document.open("rb") as body, httpx.Client(timeout=600) as http:
            start = time.perf_counter()
            headers = {**WORLD, "Content-Type": "application/json", "Content-Length": str(size)}
            reply = http.post(f"{server.url}/v1/world/import", content=body, headers=headers)
            seconds = time.perf_counter() - start
        peak = rss_kb(pid, "VmHWM")
    finally:
        server.stop()
    mb = size / 1e6
    return {
        "status": reply.status_code,
        "seconds": seconds,
        "mb": mb,
        "rss_before_mb": rss_before / 1024,
        "rss_peak_mb": peak / 1024,
        "per_mb": (peak - rss_before) / 1024 / mb,
        "idle": idle.latencies,
        "busy": busy.latencies,
    }


def export_tree(ref: str, into: Path) -> Path:
    """The source tree of commit `ref`, unpacked into `into` (git archive: no worktree, no checkout)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _latency(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.1f} / {max(values):.1f} ms ({len(values)} asks)"


def report(name: str, figures: dict[str, Any]) -> None:
    print(f"\n{name}")
    print(f"  import: HTTP {figures['status']} in {figures['seconds']:.1f} s")
    print(f"  RSS: {figures['rss_before_mb']:.0f} MB before, {figures['rss_peak_mb']:.0f} MB at the peak")
    print(f"  peak RSS per MB of import (above the RSS before): {figures['per_mb']:.2f} MB")
    print(
        f"  /health median / worst: idle {_latency(figures['idle'])}; during the import {_latency(figures['busy'])}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the world document (default 50 MB)")
    parser.add_argument("--before", help="a commit to serve side by side (e.g. b3151b6)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="machi-import-bench-") as tmp:
        work = Path(tmp)
        document = work / "world.json"
        count = write_document(document, args.mb)
        print(
            f"world document: {document.stat().st_size / 1e6:.1f} MB, {count} memories with 384-d embeddings"
        )
        trees = [("after (this tree)", ROOT)]
        if args.before:
            trees.insert(0, (f"before ({args.before})", export_tree(args.before, work / "before")))
        for index, (name, root) in enumerate(trees):
            (work / f"run{index}").mkdir()
            report(name, measure(root, document, work / f"run{index}"))


if __name__ == "__main__":
    main()
