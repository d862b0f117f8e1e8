"""Relevance-first scoring (RETRIEVAL_SCORING=fused, the default), pure numpy.

1. Relevance fuses meaning and words: the dense cosine (the memory embedded after the line before it in its
   conversation) and BM25 over `search_terms`, each turned into a z-score over the candidates, then
   `dense_weight * z(dense) + lexical_weight * z(bm25)` (0.8 and 0.2: RETRIEVAL_DENSE_WEIGHT). A memory
   without a vector of the current embedder (not embedded yet, or under another) is ranked by its words
   alone: `z(bm25)`.
2. An episode's memories lend each other relevance: each gains `NEIGHBOUR_WEIGHT` times the better of its
   neighbours' fused values in the same episode (never less than 0: a neighbour only lifts). A question about
   a talk often matches the line before the one that answers it.
3. Relevance is min-max scaled over the candidates to [0, 1]; the `shortlist` best (plus every memory in a
   time window the query names) are the only ones that can be returned.
4. Among them: `score = w_relevance * relevance + w_recency * recency + w_importance * importance + w_time *
   time`, where recency is `0.5 ** (game minutes since last access / half-life)` (absolute, not min-max: a
   memory weeks old is 0, one from this hour near 1), importance is `(importance - 1) / 9` (absolute: one
   10 among 5s cannot swamp relevance the way min-max made it) and time is 1 for a memory formed inside the
   window the query names (`timewords.py`), else 0.

So recency and importance re-rank memories that are about the query instead of burying the relevant old one
under the last hour's small talk, and "今日何した？" gets today's through the time component.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from backend.memory.retrieval import Components, Weights, top_k

DENSE_WEIGHT = 0.8
LEXICAL_WEIGHT = 0.2
NEIGHBOUR_WEIGHT = 0.3
#: Candidates by relevance that recency and importance may re-rank (at least 4 k).
SHORTLIST = 50


@dataclass(frozen=True)
class Fusion:
    """The knobs of fused scoring (settings: RETRIEVAL_HALF_LIFE_DAYS, RETRIEVAL_SHORTLIST...)."""

    half_life_minutes: float = 3 * 24 * 60.0
    shortlist: int = SHORTLIST
    dense_weight: float = DENSE_WEIGHT
    lexical_weight: float = LEXICAL_WEIGHT
    neighbour_weight: float = NEIGHBOUR_WEIGHT
    #: Above the most the other components can add (1 + 0.1 + 0.2 by default): a memory inside the named
    #: window always ranks before one outside it, and the rest fill up when the window holds fewer than k.
    time_weight: float = 2.0


@dataclass(frozen=True)
class Signals:
    """What relevance is made of, over the candidates (aligned arrays): the dense cosine (None: keyword
    mode or no query vector), which candidates have a vector, BM25 (None: embedding mode), and whether each
    candidate continues the previous candidate's episode."""

    dense: np.ndarray | None
    vectored: np.ndarray
    lexical: np.ndarray | None
    same_as_previous: np.ndarray


def zscore(values: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """(x - mean) / std over the rows in `mask` (all rows without one); all zeros when they do not vary."""
    picked = values if mask is None or mask.all() else values[mask]
    n = picked.size
    if n == 0:
        return np.zeros(values.shape, dtype=np.float64)
    wide = picked.astype(np.float64, copy=False)
    mean = float(wide.sum()) / n
    variance = float(wide @ wide) / n - mean * mean  # one pass each (np.std takes several)
    if not variance > 1e-18:
        return np.zeros(values.shape, dtype=np.float64)
    out = np.subtract(values, mean, dtype=np.float64)
    out *= 1.0 / np.sqrt(variance)
    return out


def fused_relevance(signals: Signals, fusion: Fusion) -> np.ndarray:
    """Steps 1 and 2 of the module docstring: the fused, episode-smoothed relevance (unscaled)."""
    n = signals.vectored.shape[0]
    lexical = zscore(signals.lexical) if signals.lexical is not None else None
    if signals.dense is None:
        fused = lexical if lexical is not None else np.zeros(n)
    else:
        dense = zscore(signals.dense, signals.vectored)
        if lexical is None:  # embedding only: memories without a vector rank below every embedded one
            fused = np.where(signals.vectored, dense, dense.min(initial=0.0) - 1.0)
        else:
            fused = dense * fusion.dense_weight + lexical * fusion.lexical_weight
            fused = np.where(signals.vectored, fused, lexical)
    return _lend(fused, signals.same_as_previous, fusion.neighbour_weight)


def _lend(fused: np.ndarray, same_as_previous: np.ndarray, weight: float) -> np.ndarray:
    """Each value plus `weight` times the larger of its episode neighbours' values (at least 0)."""
    if weight <= 0 or fused.size < 2:
        return fused
    lent = np.zeros(fused.shape)
    link = same_as_previous[1:]
    # the previous row lends to the next one, and the next one to the previous
    np.maximum(lent[1:], np.where(link, fused[:-1], 0.0), out=lent[1:])
    np.maximum(lent[:-1], np.where(link, fused[1:], 0.0), out=lent[:-1])
    return fused + weight * lent


def scale(values: np.ndarray) -> np.ndarray:
    """Min-max to [0, 1]; all 0.5 when every value is the same."""
    low, high = float(values.min()), float(values.max())
    if not high > low:
        return np.full(values.shape, 0.5)
    return (values - low) / (high - low)


def rank_fused(
    *,
    signals: Signals,
    accessed_minutes: np.ndarray,
    importance: np.ndarray,
    in_window: np.ndarray | None,
    tiebreak: np.ndarray,
    now_minutes: float,
    weights: Weights,
    fusion: Fusion,
    k: int,
) -> tuple[np.ndarray, Components]:
    """The k best candidates (positions, best first) and their components (module docstring).

    Args:
        signals: the relevance signals over the candidates.
        accessed_minutes: each candidate's last access, in game minutes.
        importance: each candidate's raw 1-10 importance.
        in_window: per candidate, whether it was formed in the time window the query names (None: no window).
        tiebreak: larger wins an exact tie (the memory id: newer first).
        now_minutes: the query's game time.
        weights: the component weights (`time` is `fusion.time_weight`).
        fusion: the scoring knobs.
        k: how many to return.
    """
    n = accessed_minutes.shape[0]
    if n == 0 or k <= 0:
        empty = np.empty(0)
        return np.empty(0, dtype=np.int64), Components(empty, empty, empty, empty, empty)
    relevance = scale(fused_relevance(signals, fusion))
    chosen = _shortlist(relevance, in_window, max(fusion.shortlist, 4 * k))
    ages = np.maximum(now_minutes - accessed_minutes[chosen], 0.0)
    recency = (
        np.exp2(-ages / fusion.half_life_minutes) if fusion.half_life_minutes > 0 else np.ones(ages.shape)
    )
    imp = (np.clip(importance[chosen].astype(np.float64), 1.0, 10.0) - 1.0) / 9.0
    rel = relevance[chosen]
    time = in_window[chosen].astype(np.float64) if in_window is not None else np.zeros(chosen.shape)
    score = weights.relevance * rel + weights.recency * recency + weights.importance * imp
    score += fusion.time_weight * time
    best = top_k(score, k, tiebreak=tiebreak[chosen])
    parts = Components(score[best], recency[best], imp[best], rel[best], time[best])
    return chosen[best], parts


def _shortlist(relevance: np.ndarray, in_window: np.ndarray | None, size: int) -> np.ndarray:
    """The `size` most relevant candidates, and every candidate inside the named time window."""
    n = relevance.shape[0]
    if size >= n:
        return np.arange(n)
    best = np.argpartition(-relevance, size - 1)[:size]
    if in_window is not None and in_window.any():
        best = np.union1d(best, np.flatnonzero(in_window))
    return np.sort(best)
