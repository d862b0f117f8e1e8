"""Top-k under the retrieval formula without scoring every candidate in float64: the same picks, order and
components as `score_candidates` + `top_k`, ties included.

Min-max normalisation is affine per component, so ranking only needs `a * decay ** age + b * importance +
c * relevance`, computed once in float32 (a few passes over memory instead of a dozen). Every row that could
reach the k-th best, given float32's rounding bound and, for a `Bounded` relevance, each row's error radius,
is then scored exactly with `Scale.components` and ordered by `top_k`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from backend.memory.retrieval import LOG_FLOOR, Components, Scale, Weights, top_k

#: Bound on float32 rounding, in units of each term's largest magnitude (2**-24 is one rounding; a few
#: operations stack up a handful, and this leaves ample room), so the exact float64 pass below sees every
#: candidate that could belong in the top k.
ROUNDING_BOUND = 1e-6


@dataclass(frozen=True)
class Bounded:
    """Relevance known to within `radius` of `approx`, row by row (float32 arrays over the candidates; the
    radius may be one number for all); `exact(rows)` computes the exact relevance of some rows, and
    `largest` bounds its magnitude. `rank_top_k` then needs the exact values of a few rows only."""

    approx: np.ndarray
    radius: np.ndarray | float
    exact: Callable[[np.ndarray], np.ndarray]
    largest: float

    def take(self, rows: np.ndarray | slice) -> Bounded:
        """The same over the given positions (a slice stands for every row)."""
        if isinstance(rows, slice):
            return self
        radius = self.radius[rows] if isinstance(self.radius, np.ndarray) else self.radius
        exact = self.exact
        return Bounded(self.approx[rows], radius, lambda picked: exact(rows[picked]), self.largest)

    def widest(self) -> float:
        return float(np.max(self.radius)) if isinstance(self.radius, np.ndarray) else self.radius


def rank_top_k(
    *,
    accessed_minutes: np.ndarray,
    importance: np.ndarray,
    relevance: np.ndarray | Bounded,
    tiebreak: np.ndarray,
    now_minutes: float,
    decay: float,
    weights: Weights,
    k: int,
) -> tuple[np.ndarray, Components]:
    """The k best candidates, best first, and their exact components: the same result as
    `score_candidates` + `top_k` (module docstring). With a `Bounded` relevance the normalisation range
    comes from the exact values of the rows that could hold the minimum or the maximum, and only the rows
    scored exactly get their exact relevance computed.
    """
    n = accessed_minutes.shape[0]
    if n == 0 or k <= 0:
        empty = np.empty(0)
        return np.empty(0, dtype=np.int64), Components(empty, empty, empty, empty)
    if isinstance(relevance, Bounded) and k >= n:
        relevance = relevance.exact(np.arange(n))
    extremes = _extremes(relevance) if isinstance(relevance, Bounded) else relevance
    scale = Scale.of(accessed_minutes, importance, extremes, now_minutes, decay)
    if k >= n:
        chosen = np.arange(n)
    else:
        chosen = _shortlist(accessed_minutes, importance, relevance, scale, weights, k)
    exact = relevance.exact(chosen) if isinstance(relevance, Bounded) else relevance[chosen]
    parts = scale.components(accessed_minutes[chosen], importance[chosen], exact, weights)
    best = top_k(parts.score, k, tiebreak=tiebreak[chosen])
    picked = Components(
        score=parts.score[best],
        recency=parts.recency[best],
        importance=parts.importance[best],
        relevance=parts.relevance[best],
    )
    return chosen[best], picked


def _extremes(relevance: Bounded) -> np.ndarray:
    """The exact relevance of every row that could hold the minimum or the maximum: the true extremes are
    among them (the maximum's upper bound is at least every lower bound, and the other way round)."""
    approx, radius = relevance.approx, relevance.radius
    if isinstance(radius, np.ndarray):
        up = approx + radius
        down = approx - radius
        maybe = up >= down.max()
        maybe |= down <= up.min()
    else:  # one radius for all: compare the approximations directly
        maybe = approx >= approx.max() - 2.0 * radius
        maybe |= approx <= approx.min() + 2.0 * radius
    return relevance.exact(np.flatnonzero(maybe))


def _shortlist(
    accessed: np.ndarray,
    importance: np.ndarray,
    relevance: np.ndarray | Bounded,
    scale: Scale,
    weights: Weights,
    k: int,
) -> np.ndarray:
    """Positions whose exact score could reach the k-th best: the rows the exact pass must see.

    Each row's score lies in [rough - spread, rough + spread] (spread: the relevance radius in score
    units, 0 for an exact relevance), widened by the rounding bound; the k-th largest lower end is a floor
    under the k-th best score, and only a row whose upper end reaches it can be in the top k or tie with
    it. Two values each within the rounding bound of the exact ones can be twice that apart.
    """
    n = accessed.shape[0]
    spread: np.ndarray | float = 0.0
    if isinstance(relevance, Bounded):
        rough = _rough_scores(accessed, importance, relevance.approx, scale, weights)
        slack = 2.0 * rounding_bound(scale, weights, relevance.largest + relevance.widest())
        if scale.relevance_span:  # (a float32 radius times a Python float stays float32)
            spread = relevance.radius * (abs(weights.relevance) / scale.relevance_span)
    else:
        rough = _rough_scores(accessed, importance, relevance, scale, weights)
        slack = 2.0 * rounding_bound(scale, weights)
    if isinstance(spread, np.ndarray):
        lower = rough - spread
        lower.partition(n - k)  # in place: the array is ours
        kth = lower[n - k]
        rough += spread
    else:  # one spread: the k-th lower end is kth(rough) - spread, reached when rough + spread gets there
        kth = np.partition(rough, n - k)[n - k] - 2.0 * float(spread)
    return np.flatnonzero(rough >= kth - slack)


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


def rounding_bound(scale: Scale, weights: Weights, relevance_largest: float = 0.0) -> float:
    """How far a float32 `_rough_scores` value may be from the exact one (generously); relevance values
    fed to it may reach `relevance_largest` in magnitude, beyond the candidates' own range."""
    terms = 0.0
    if scale.relevance_span:
        largest = max(abs(scale.relevance_low), abs(scale.relevance_low + scale.relevance_span))
        largest = max(largest, relevance_largest)
        terms += abs(weights.relevance) * (1.0 + largest / scale.relevance_span)
    if scale.importance_span:
        largest = max(abs(scale.importance_low), abs(scale.importance_low + scale.importance_span))
        terms += abs(weights.importance) * (1.0 + largest / scale.importance_span)
    if not scale.recency_tied:
        terms += abs(weights.recency) / (1.0 - scale.floor)
    return ROUNDING_BOUND * terms + 1e-12
