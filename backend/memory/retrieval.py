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
from collections.abc import Callable
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
    return cosine_start(matrix, query)()


def cosine_start(matrix: np.ndarray, query: np.ndarray) -> Callable[[], np.ndarray]:
    """`cosine`, in two steps: this thread multiplies its share now, and the returned call waits for the
    helper threads' shares and gives the whole result, so a caller can do other work in between."""
    query = np.asarray(query, dtype=matrix.dtype)
    rows = matrix.shape[0]
    parts = min(PARALLEL_WORKERS, rows // PARALLEL_ROWS)
    if parts < 2:
        result = matrix @ query
        return lambda: result
    out = np.empty(rows, dtype=matrix.dtype)
    bounds = [rows * i // parts for i in range(parts + 1)]

    def product(lo: int, hi: int) -> None:
        np.matmul(matrix[lo:hi], query, out=out[lo:hi])

    pending = [_POOL.submit(product, lo, hi) for lo, hi in zip(bounds[1:-1], bounds[2:], strict=True)]
    product(bounds[0], bounds[1])  # this thread takes the first part

    def finish() -> np.ndarray:
        for job in pending:
            job.result()
        return out

    return finish


def inverse_sqrt(counts: np.ndarray) -> np.ndarray:
    """1 / sqrt(count) as float32, 0 where the count is 0 (kept per row by the index)."""
    counts = np.asarray(counts, dtype=np.float32)
    out = np.zeros(counts.shape, dtype=np.float32)
    np.sqrt(counts, out=out, where=counts > 0)
    np.divide(1.0, out, out=out, where=counts > 0)
    return out


def keyword_overlap(shared: np.ndarray, inverse_sqrt_tokens: np.ndarray, query_tokens: int) -> np.ndarray:
    """Binary cosine (Ochiai) of token sets: |Q & M| / sqrt(|Q| * |M|); 0 when either set is empty.

    `shared` is |Q & M| per memory and `inverse_sqrt_tokens` is `inverse_sqrt(|M|)`, so one query costs
    two float32 multiplications per memory.
    """
    out = np.multiply(shared, inverse_sqrt_tokens, dtype=np.float32)
    if query_tokens <= 0:
        out.fill(0.0)
        return out
    out *= np.float32(1.0 / np.sqrt(query_tokens))
    return out


def hybrid(embedding: np.ndarray, keyword: np.ndarray) -> np.ndarray:
    """Hybrid relevance: the mean of the raw embedding cosine and the raw keyword overlap."""
    out = np.add(embedding, keyword, dtype=np.float32)
    out *= np.float32(0.5)
    return out


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
        The normalised components and `score`, all float64 arrays aligned with the inputs (one
        `Scale` over all of them: the same arithmetic `rank_top_k` applies to its finalists).
    """
    accessed, imp, rel = (np.asarray(a) for a in (accessed_minutes, importance, relevance))
    if accessed.size == 0:
        empty = np.empty(0)
        return Components(empty, empty, empty, empty)
    return Scale.of(accessed, imp, rel, now_minutes, decay).components(accessed, imp, rel, weights)


@dataclass(frozen=True)
class Scale:
    """One query's min-max parameters over all its candidates: enough to score any subset exactly.

    A span of 0 means every candidate had the same raw value, so that component is `TIE_VALUE` for all.
    """

    now: float
    newest: float  # the latest access among the candidates (clamped to `now`), in game minutes
    after_now: bool  # some candidate was accessed after `now` (it counts as accessed now)
    log_decay: float
    floor: float  # relative recency of the oldest candidate
    recency_tied: bool
    importance_low: float
    importance_span: float
    relevance_low: float
    relevance_span: float

    @classmethod
    def of(
        cls,
        accessed_minutes: np.ndarray,
        importance: np.ndarray,
        relevance: np.ndarray,
        now: float,
        decay: float,
    ) -> Scale:
        latest = float(accessed_minutes.max())
        newest = min(latest, now)
        oldest = min(float(accessed_minutes.min()), now)
        log_decay = float(np.log(decay)) if decay < 1.0 else 0.0
        tied = not newest > oldest or decay >= 1.0
        floor = 0.0 if tied else float(np.exp(max((newest - oldest) * log_decay, LOG_FLOOR)))
        imp_low, imp_high = float(importance.min()), float(importance.max())
        rel_low, rel_high = float(relevance.min()), float(relevance.max())
        return cls(
            now=now,
            newest=newest,
            after_now=latest > now,
            log_decay=log_decay,
            floor=floor,
            recency_tied=tied,
            importance_low=imp_low,
            importance_span=imp_high - imp_low if imp_high > imp_low else 0.0,
            relevance_low=rel_low,
            relevance_span=rel_high - rel_low if rel_high > rel_low else 0.0,
        )

    def rounding_bound(self, importance: np.ndarray, relevance: np.ndarray, weights: Weights) -> float:
        """How far a float32 `_rough_scores` value may be from the exact one (generously)."""
        terms = 0.0
        if self.relevance_span:
            largest = max(abs(self.relevance_low), abs(self.relevance_low + self.relevance_span))
            terms += abs(weights.relevance) * (1.0 + largest / self.relevance_span)
        if self.importance_span:
            largest = max(abs(self.importance_low), abs(self.importance_low + self.importance_span))
            terms += abs(weights.importance) * (1.0 + largest / self.importance_span)
        if not self.recency_tied:
            terms += abs(weights.recency) / (1.0 - self.floor)
        return ROUNDING_BOUND * terms + 1e-12

    def components(
        self, accessed_minutes: np.ndarray, importance: np.ndarray, relevance: np.ndarray, weights: Weights
    ) -> Components:
        """The exact (float64) normalised components and score of some candidates."""
        if self.recency_tied:
            recency = np.full(accessed_minutes.shape, TIE_VALUE)
        else:
            ages = np.subtract(self.newest, np.minimum(accessed_minutes, self.now), dtype=np.float64)
            ages *= self.log_decay
            np.maximum(ages, LOG_FLOOR, out=ages)
            np.exp(ages, out=ages)
            ages -= self.floor
            ages /= 1.0 - self.floor
            recency = ages
        imp = _spread(importance, self.importance_low, self.importance_span)
        rel = _spread(relevance, self.relevance_low, self.relevance_span)
        score = recency * weights.recency
        score += weights.importance * imp
        score += weights.relevance * rel
        return Components(score=score, recency=recency, importance=imp, relevance=rel)


def _spread(values: np.ndarray, low: float, span: float) -> np.ndarray:
    if span == 0.0:
        return np.full(values.shape, TIE_VALUE)
    out = np.subtract(values, low, dtype=np.float64)
    out /= span
    return out


#: Bound on float32 rounding, in units of each term's largest magnitude (2**-24 is one rounding; a few
#: operations stack up a handful, and this leaves ample room), so the exact float64 pass below sees every
#: candidate that could belong in the top k.
ROUNDING_BOUND = 1e-6


def rank_top_k(
    *,
    accessed_minutes: np.ndarray,
    importance: np.ndarray,
    relevance: np.ndarray,
    tiebreak: np.ndarray,
    now_minutes: float,
    decay: float,
    weights: Weights,
    k: int,
) -> tuple[np.ndarray, Components]:
    """The k best candidates, best first, and their exact components: the same result as
    `score_candidates` + `top_k`, without building four float64 arrays over every candidate.

    Min-max normalisation is affine per component, so the ranking only needs
    `a * decay ** age + b * importance + c * relevance`, computed once in float32 (a few passes over
    memory instead of a dozen). Everything within float32's rounding bound of the k-th best is then scored again
    exactly in float64 with `Scale.components` and ordered by `top_k`, so ties and near-ties are decided
    as the reference formula decides them.
    """
    n = accessed_minutes.shape[0]
    if n == 0 or k <= 0:
        empty = np.empty(0)
        return np.empty(0, dtype=np.int64), Components(empty, empty, empty, empty)
    scale = Scale.of(accessed_minutes, importance, relevance, now_minutes, decay)
    if k >= n:
        chosen = np.arange(n)
    else:
        rough = _rough_scores(accessed_minutes, importance, relevance, scale, weights)
        kth = np.partition(rough, n - k)[n - k]
        slack = scale.rounding_bound(importance, relevance, weights)
        chosen = np.flatnonzero(rough >= kth - slack)
    parts = scale.components(accessed_minutes[chosen], importance[chosen], relevance[chosen], weights)
    best = top_k(parts.score, k, tiebreak=tiebreak[chosen])
    picked = Components(
        score=parts.score[best],
        recency=parts.recency[best],
        importance=parts.importance[best],
        relevance=parts.relevance[best],
    )
    return chosen[best], picked


def _rough_scores(
    accessed: np.ndarray, importance: np.ndarray, relevance: np.ndarray, scale: Scale, weights: Weights
) -> np.ndarray:
    """The score up to a constant (each component's `-low / span` term is dropped), in float32."""
    score = np.zeros(accessed.shape, dtype=np.float32)
    work = np.empty(accessed.shape, dtype=np.float32)
    if scale.relevance_span:
        np.multiply(relevance, weights.relevance / scale.relevance_span, out=score, casting="same_kind")
    if scale.importance_span:
        np.multiply(importance, weights.importance / scale.importance_span, out=work, casting="same_kind")
        score += work
    if not scale.recency_tied:
        # exponent = log_decay * (newest - min(accessed, now)): never above 0, clipped at LOG_FLOOR.
        np.subtract(accessed, scale.newest, out=work, casting="same_kind")
        if scale.after_now:
            np.minimum(work, 0.0, out=work)
        work *= np.float32(-scale.log_decay)
        np.maximum(work, np.float32(LOG_FLOOR), out=work)
        np.exp(work, out=work)
        work *= np.float32(weights.recency / (1.0 - scale.floor))
        score += work
    return score


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
