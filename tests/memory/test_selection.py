"""Top-k selection: the float32 pre-selection and the bounded relevance pick exactly what the reference
formula (score_candidates + top_k) picks, ties and near-ties included."""

from __future__ import annotations

import numpy as np
import pytest

from backend.gametime import game_minutes
from backend.memory.retrieval import Weights, score_candidates, top_k
from backend.memory.selection import Bounded, rank_top_k


def assert_ranks_as_the_reference(
    accessed: np.ndarray,
    importance: np.ndarray,
    exact: np.ndarray,
    relevance: np.ndarray | Bounded,
    ids: np.ndarray,
    now: float,
    weightings: tuple[Weights, ...],
    ks: tuple[int, ...],
) -> None:
    """rank_top_k given `relevance` == score_candidates + top_k over the `exact` relevance, for every
    weighting and k: picks, order, ties and every component, bit for bit."""
    for weights in weightings:
        same = {
            "accessed_minutes": accessed,
            "importance": importance,
            "now_minutes": now,
            "weights": weights,
        }
        reference = score_candidates(**same, relevance=exact, decay=0.99)
        for k in ks:
            expected = top_k(reference.score, k, tiebreak=ids)
            got, parts = rank_top_k(**same, relevance=relevance, tiebreak=ids, decay=0.99, k=k)
            assert got.tolist() == expected.tolist()
            for name in ("score", "recency", "importance", "relevance"):
                assert getattr(parts, name).tolist() == getattr(reference, name)[expected].tolist()


@pytest.mark.parametrize("seed", range(6))
def test_the_fast_ranking_picks_what_the_reference_formula_picks(seed: int) -> None:
    """rank_top_k (float32 pre-selection, exact float64 final pass) == score_candidates + top_k, ties included."""
    rng = np.random.default_rng(seed)
    n = 5000
    # Coarse values on purpose: many exact ties in every component, and ties between different mixes.
    accessed = rng.integers(0, 4, n) * 30.0 + (game_minutes(3, 9.0) if seed % 2 else 0.0)
    importance = rng.integers(1, 11, n).astype(np.float32)
    relevance = (rng.integers(0, 5, n) / 4).astype(np.float32)
    if seed == 4:
        relevance = (0.9999 + rng.integers(0, 3, n) * 1e-5).astype(np.float32)  # a tiny spread
    if seed == 5:
        accessed[:] = 600.0  # recency tied for everyone
    ids = np.arange(1, n + 1) * 3
    now = float(accessed.max()) + 45.0
    weightings = (Weights(), Weights(1.0, 2.0, 0.5), Weights(0.0, 1.0, 1.0))
    assert_ranks_as_the_reference(
        accessed, importance, relevance, relevance, ids, now, weightings, (1, 30, 100, n + 5)
    )


def bounded_case(seed: int, n: int) -> tuple[np.ndarray, Bounded, list[np.ndarray]]:
    """Exact relevance full of ties and near-ties, and an approximation off by up to its radius (often
    exactly the radius, the worst case a bound allows). Returns (exact, bounded, rows asked for exactly)."""
    rng = np.random.default_rng(seed)
    levels = rng.integers(0, 6, n) / 5
    exact = (levels + rng.integers(-1, 2, n) * 2e-7 * (seed % 2)).astype(np.float32)  # ulp-apart near-ties
    if seed == 3:
        exact[:] = np.float32(0.25)  # every relevance equal: the component ties for everyone
    radius: np.ndarray | float
    if seed == 4:
        radius = 1e-4  # one radius for every row, as the float32 product has
        noise = rng.choice([-1.0, 1.0, 0.3], n) * radius
    else:
        radius = (rng.uniform(0.0, 0.05, n) * (rng.random(n) < 0.9)).astype(np.float32)
        noise = rng.choice([-1.0, 1.0, -0.5, 0.0], n) * radius
    approx = (exact + noise).astype(np.float32)
    # Keep the radius a true bound after float32 rounding of approx.
    if isinstance(radius, np.ndarray):
        radius = np.maximum(radius, np.abs(approx - exact)).astype(np.float32)
    asked: list[np.ndarray] = []

    def exact_rows(rows: np.ndarray) -> np.ndarray:
        asked.append(rows)
        return exact[rows]

    return exact, Bounded(approx, radius, exact_rows, 1.0), asked


@pytest.mark.parametrize("seed", range(6))
def test_a_bounded_relevance_ranks_exactly_as_the_exact_relevance(seed: int) -> None:
    """rank_top_k given only an approximation with a per-row radius (the int8 and float32 pre-selection)
    == score_candidates + top_k on the exact relevance."""
    n = 3000
    rng = np.random.default_rng(100 + seed)
    accessed = rng.integers(0, 4, n) * 30.0
    importance = rng.integers(1, 11, n).astype(np.float32)
    ids = np.arange(1, n + 1) * 2
    exact, bounded, asked = bounded_case(seed, n)
    weightings = (Weights(), Weights(1.0, 2.0, 0.5), Weights(0.0, 0.0, 1.0), Weights(1.0, 1.0, -1.0))
    assert_ranks_as_the_reference(
        accessed, importance, exact, bounded, ids, 200.0, weightings, (1, 30, 200, n, n + 5)
    )
    if seed in (0, 4):  # a spread-out relevance: few rows could be extreme or near the top
        asked.clear()
        assert_ranks_as_the_reference(accessed, importance, exact, bounded, ids, 200.0, (Weights(),), (30,))
        assert sum(rows.size for rows in asked) < n // 2


def test_a_bounded_relevance_with_every_row_possibly_extreme() -> None:
    """Radii wider than the spread: every row may be the minimum or the maximum, and all are scored."""
    exact = np.array([0.25, 0.5, 0.75, 0.5], dtype=np.float32)
    bounded = Bounded(exact + np.float32(0.3), np.full(4, 0.5, np.float32), lambda r: exact[r], 1.0)
    got, parts = rank_top_k(
        accessed_minutes=np.zeros(4),
        importance=np.full(4, 5.0, np.float32),
        relevance=bounded,
        tiebreak=np.arange(4),
        now_minutes=10.0,
        decay=0.99,
        weights=Weights(),
        k=2,
    )
    assert got.tolist() == [2, 3]  # 0.75, then the newer of the two 0.5s
    assert parts.relevance.tolist() == [1.0, 0.5]
    assert parts.score.tolist() == [2.0, 1.5]
