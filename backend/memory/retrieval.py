"""Retrieval scoring, pure numpy (no database): recency, importance and relevance over candidate arrays.

    score = w_recency * recency + w_importance * importance + w_relevance * relevance

Each component is min-max normalised over the candidates. When every candidate has the same raw value the
component cannot tell them apart, and each gets `TIE_VALUE` (0.5, the midpoint, as in the Generative Agents
reference code); equal values inside a spread-out set simply normalise to equal values.

Recency is `decay ** minutes_since_last_access` in game minutes. It is normalised in a shifted form,
`decay ** (a - a_min)`, which is algebraically the same min-max result but does not underflow to 0 for
memories weeks old (0.99 ** 75_000 is below the smallest float64).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

TIE_VALUE = 0.5
LOG_FLOOR = -60.0


@dataclass(frozen=True)
class Weights:
    recency: float = 1.0
    importance: float = 1.0
    relevance: float = 1.0


@dataclass(frozen=True)
class Components:
    """Per-candidate normalised components (float64 arrays of one length) and the weighted score."""

    score: np.ndarray
    recency: np.ndarray
    importance: np.ndarray
    relevance: np.ndarray


# The arithmetic below works in place on one fresh array per component: at 100k candidates every
# temporary is another 800 KB to allocate, fault in and stream through.


def minmax(values: np.ndarray) -> np.ndarray:
    """Min-max normalise to [0, 1]; all-equal (or empty) input gives TIE_VALUE everywhere."""
    out = np.array(values, dtype=np.float64)  # a copy: the caller's array is never changed
    if out.size == 0:
        return out
    low, high = out.min(), out.max()
    if not high > low:
        out.fill(TIE_VALUE)
        return out
    out -= low
    out /= high - low
    return out


def recency_normalised(minutes_since: np.ndarray, decay: float) -> np.ndarray:
    """min-max of `decay ** minutes_since` (negative ages, i.e. accessed after `now`, count as 0)."""
    ages = np.array(minutes_since, dtype=np.float64)
    np.maximum(ages, 0.0, out=ages)
    if ages.size == 0:
        return ages
    youngest, oldest = ages.min(), ages.max()
    if decay >= 1.0 or not oldest > youngest:
        ages.fill(TIE_VALUE)
        return ages
    log_decay = np.log(decay)
    # Exponents are clipped at LOG_FLOOR: below it a memory's relative recency (< 1e-26) is as good as 0,
    # and letting exp() produce subnormal floats made every later operation on the array ~20x slower.
    floor = np.exp(max((oldest - youngest) * log_decay, LOG_FLOOR))  # the oldest one's relative value
    ages -= youngest
    ages *= log_decay
    np.maximum(ages, LOG_FLOOR, out=ages)
    np.exp(ages, out=ages)
    ages -= floor
    ages /= 1.0 - floor
    return ages


#: From this many rows the product is split across threads. BLAS itself runs one thread per process
#: (backend/__init__.py): its spinning worker threads were 10-20x slower on a busy 2-core machine. Plain
#: Python threads (numpy releases the GIL in BLAS) only queue under load, and on an idle machine halve the
#: time of this memory-bound product: 10k x 384 went 0.94 -> 0.53 ms, 100k 14.3 -> 8.2 ms here.
PARALLEL_ROWS = 4096
PARALLEL_WORKERS = max(1, min(4, os.cpu_count() or 1))
_POOL = ThreadPoolExecutor(max_workers=PARALLEL_WORKERS, thread_name_prefix="cosine")


def cosine(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosine similarity of L2-normalised rows with an L2-normalised query: one matrix-vector product."""
    query = np.asarray(query, dtype=matrix.dtype)
    rows = matrix.shape[0]
    parts = min(PARALLEL_WORKERS, rows // PARALLEL_ROWS)
    if parts < 2:
        return matrix @ query
    out = np.empty(rows, dtype=matrix.dtype)
    bounds = [rows * i // parts for i in range(parts + 1)]

    def product(lo: int, hi: int) -> None:
        np.matmul(matrix[lo:hi], query, out=out[lo:hi])

    pending = [_POOL.submit(product, lo, hi) for lo, hi in zip(bounds[1:-1], bounds[2:], strict=True)]
    product(bounds[0], bounds[1])  # this thread takes the first part
    for job in pending:
        job.result()
    return out


def keyword_overlap(shared: np.ndarray, memory_tokens: np.ndarray, query_tokens: int) -> np.ndarray:
    """Binary cosine (Ochiai) of token sets: |Q & M| / sqrt(|Q| * |M|); 0 when either set is empty."""
    denominator = np.sqrt(np.asarray(memory_tokens, dtype=np.float64) * float(query_tokens))
    out = np.zeros(denominator.shape)
    np.divide(np.asarray(shared, dtype=np.float64), denominator, out=out, where=denominator > 0)
    return out


def hybrid(embedding: np.ndarray, keyword: np.ndarray) -> np.ndarray:
    """Hybrid relevance: the mean of the raw embedding cosine and the raw keyword overlap."""
    return (np.asarray(embedding, dtype=np.float64) + keyword) / 2.0


def score_candidates(
    *,
    accessed_minutes: np.ndarray,
    importance: np.ndarray,
    relevance: np.ndarray,
    now_minutes: float,
    decay: float,
    weights: Weights,
) -> Components:
    """Score candidates from their raw values.

    Args:
        accessed_minutes: game minutes (see `backend.gametime.game_minutes`) of each candidate's last access.
        importance: raw 1-10 importance per candidate.
        relevance: raw relevance per candidate (cosine, keyword overlap or their mean).
        now_minutes: the game time of the query, in game minutes.
        decay: recency decay per game minute (0 < decay <= 1).
        weights: the three component weights.

    Returns:
        The normalised components and `score`, all float64 arrays aligned with the inputs.
    """
    ages = np.subtract(now_minutes, accessed_minutes, dtype=np.float64)
    recency = recency_normalised(ages, decay)
    imp = minmax(importance)
    rel = minmax(relevance)
    # In place: at 100k candidates each temporary array is another pass over memory.
    score = recency * weights.recency
    score += weights.importance * imp
    score += weights.relevance * rel
    return Components(score=score, recency=recency, importance=imp, relevance=rel)


def top_k(scores: np.ndarray, k: int, tiebreak: np.ndarray | None = None) -> np.ndarray:
    """Positions of the k best scores, best first; equal scores go to the larger `tiebreak` (e.g. newer id).

    A partial sort (argpartition) picks the k, then only those k are ordered.
    """
    n = scores.shape[0]
    if n == 0 or k <= 0:
        return np.empty(0, dtype=np.int64)
    if k < n:
        # Keep every candidate tied with the k-th best so the tie-break below is decided fairly.
        chosen = np.argpartition(-scores, k - 1)[:k]
        kth = scores[chosen].min()
        if tiebreak is not None:
            tied = np.flatnonzero(scores == kth)
            if tied.size > np.count_nonzero(scores[chosen] == kth):  # some tied ones were left out
                chosen = np.union1d(chosen, tied)
    else:
        chosen = np.arange(n)
    secondary = -(tiebreak[chosen] if tiebreak is not None else chosen)
    order = np.lexsort((secondary, -scores[chosen]))
    return chosen[order][:k]
