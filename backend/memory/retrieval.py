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
    """Per-candidate normalised components (float64 arrays of one length) and the weighted score; `time`
    (fused scoring: formed inside the window the query names) is None where the scoring has none."""

    score: np.ndarray
    recency: np.ndarray
    importance: np.ndarray
    relevance: np.ndarray
    time: np.ndarray | None = None


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
