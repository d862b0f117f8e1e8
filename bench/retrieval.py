"""Retrieval benchmark: one agent with N = 1k, 10k, 100k memories, k = 30, 384-d vectors.

Run: `.venv/bin/python bench/retrieval.py` (optionally `--sizes 1000 10000 --queries 200`).

The index is built directly (no database, no HTTP): the matrix holds synthetic random unit vectors, which
cost exactly what real embeddings cost to multiply; memory texts are synthetic Japanese sentences made from a
fixed vocabulary so the keyword posting lists look like real ones. Query time covers everything
`ranking.rank` does under the index lock: candidates, relevance, normalised scoring and top-k
(embedding the query text is excluded; the local embedder takes ~0.05 ms for a short query).
"""

from __future__ import annotations

import os

# As in the server (backend/__init__.py): one BLAS thread, set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import random
import time
import tracemalloc

import numpy as np

from backend.memory.index import AgentIndex, IndexRow
from backend.memory.retrieval import Weights, cosine, hybrid, keyword_overlap, score_candidates, top_k
from backend.text import token_set

DIM, K = 384, 30
PLACES = ["カフェ", "図書館", "公園", "駅前", "商店街", "学校", "神社", "海辺", "パン屋", "花屋"]
PEOPLE = ["ヒカリ", "ソラ", "ミナト", "ユイ", "ハルト", "サクラ", "レン", "アオイ"]
ACTS = [
    "話した",
    "ケーキを食べた",
    "本を読んだ",
    "散歩した",
    "宿題をした",
    "写真を撮った",
    "歌を聞いた",
    "絵を描いた",
]


def texts(n: int, rng: random.Random) -> list[str]:
    return [f"{rng.choice(PLACES)}で{rng.choice(PEOPLE)}と{rng.choice(ACTS)}" for _ in range(n)]


def build(n: int, seed: int = 0) -> tuple[AgentIndex, float, float]:
    """The index and (build seconds, bytes per memory measured with tracemalloc)."""
    rng = random.Random(seed)
    vectors = np.random.default_rng(seed).standard_normal((n, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = [
        IndexRow(
            i + 1, float(rng.randint(1, 10)), float(rng.uniform(0, 14 * 1440)), "observation", t, vectors[i]
        )
        for i, t in enumerate(texts(n, rng))
    ]
    tracemalloc.start()
    started = time.perf_counter()
    index = AgentIndex(DIM)
    index.append(rows)
    seconds = time.perf_counter() - started
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return index, seconds, held / n


def query_once(index: AgentIndex, mode: str, vector: np.ndarray, tokens: set[str]) -> np.ndarray:
    rows = index.candidates()
    emb = cosine(index.vectors[: index.size], vector)[rows] if mode != "keyword" else None
    if mode != "embedding":
        kw = keyword_overlap(index.shared_tokens(tokens)[rows], index.token_counts[rows], len(tokens))
        raw = kw if emb is None else hybrid(emb, kw)
    else:
        raw = emb
    parts = score_candidates(
        accessed_minutes=index.accessed[rows],
        importance=index.importance[rows],
        relevance=raw,
        now_minutes=14 * 1440.0,
        decay=0.99,
        weights=Weights(),
    )
    return rows[top_k(parts.score, K, tiebreak=index.ids[rows])]


def time_queries(index: AgentIndex, mode: str, count: int) -> tuple[float, float]:
    rng = np.random.default_rng(1)
    pyrng = random.Random(1)
    queries = rng.standard_normal((count, DIM), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    words = [token_set(f"{pyrng.choice(PLACES)}の{pyrng.choice(PEOPLE)}") for _ in range(count)]
    for i in range(5):
        query_once(index, mode, queries[i], words[i])  # warm-up
    timings = []
    for vector, tokens in zip(queries, words, strict=True):
        started = time.perf_counter()
        found = query_once(index, mode, vector, tokens)
        timings.append(time.perf_counter() - started)
        assert found.shape[0] == K
    ms = np.array(timings) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99))


def insert_cost(index: AgentIndex, count: int = 1000) -> float:
    """Microseconds per single-row append (amortised growth, tokenising included)."""
    rng = random.Random(2)
    vector = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    start_id = int(index.ids[index.size - 1]) + 1
    started = time.perf_counter()
    for i, text in enumerate(texts(count, rng)):
        index.append([IndexRow(start_id + i, 5.0, 0.0, "observation", text, vector)])
    return (time.perf_counter() - started) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    print(f"k={K}, dim={DIM}, {args.queries} queries per cell, times in ms per query (p50 / p99)")
    header = f"{'N':>8} | {'embedding':>15} | {'keyword':>15} | {'hybrid':>15} | {'bytes/mem':>9} | {'build s':>7} | {'insert us':>9}"
    print(header)
    print("-" * len(header))
    for n in args.sizes:
        index, build_s, per_memory = build(n)
        cells = [time_queries(index, mode, args.queries) for mode in ("embedding", "keyword", "hybrid")]
        insert_us = insert_cost(index)
        shown = " | ".join(f"{p50:6.3f} / {p99:6.3f}" for p50, p99 in cells)
        print(f"{n:>8} | {shown} | {per_memory:9.0f} | {build_s:7.2f} | {insert_us:9.1f}")
    print("targets: <= 1 ms at 10k and <= 10 ms at 100k per query")


if __name__ == "__main__":
    main()
