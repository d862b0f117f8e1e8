"""Embedding relevance: the exact per-row cosine, the int8 codes, and the error radius of both approximations."""

from __future__ import annotations

import numpy as np
import pytest

from backend.memory import similarity
from backend.memory.retrieval import hybrid
from backend.memory.selection import Bounded
from backend.memory.similarity import (
    bounded_hybrid,
    cosine_rows,
    float32_start,
    int8_dots_start,
    int8_start,
    quantise,
)


def awkward_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    """Unit rows, plus the shapes quantisation handles worst: one dominant component (a coarse scale for
    all the others), zero rows (no embedding), tiny values, a row longer than one."""
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    rows[1::7, 0] = 40.0
    rows[2::11] = 0.0
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-30)
    rows[3::13] *= 1e-20
    rows[4] *= 3.0
    return rows


def test_the_exact_cosine_of_a_row_does_not_depend_on_its_neighbours() -> None:
    rng = np.random.default_rng(0)
    matrix = awkward_rows(rng, 500, 384)
    matrix[100:110] = matrix[7]  # identical memories in other positions tie exactly
    query = rng.standard_normal(384).astype(np.float32)
    whole = cosine_rows(matrix, query)
    assert np.all(whole[100:110] == whole[7])
    for rows in (np.arange(3, 9), np.array([499, 7, 0]), rng.choice(500, 77, replace=False)):
        assert cosine_rows(matrix[rows], query).tolist() == whole[rows].tolist()


def test_quantise_reconstructs_rows_within_the_kept_error() -> None:
    rows = awkward_rows(np.random.default_rng(1), 300, 64)
    codes, scales, errors, norms = quantise(rows)
    assert codes.dtype == np.int8 and np.abs(codes.astype(int)).max() <= similarity.CODE_MAX
    decoded = codes.astype(np.float64) * scales.astype(np.float64)[:, None]
    real = np.linalg.norm(rows.astype(np.float64) - decoded, axis=1)
    assert np.all(real <= errors) and np.all(errors <= real * 1.001 + 1e-30)
    assert np.all(codes[2::11] == 0) and np.all(errors[2::11] == 0)
    assert norms >= max(np.linalg.norm(rows, axis=1).max(), np.linalg.norm(decoded, axis=1).max())


def test_int8_dot_products_are_exact_integers_split_across_threads_or_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(2)
    codes = rng.integers(-127, 128, (5000, 384)).astype(np.int8)
    codes[0] = 127  # the largest possible dot product, 384 * 127 * 127, still exact in float32
    query = np.full(384, 127, dtype=np.int8)
    expected = codes.astype(np.int64) @ query.astype(np.int64)
    assert int8_dots_start(codes, query)().tolist() == expected.tolist()
    monkeypatch.setattr(similarity, "INT8_PARALLEL_ROWS", 1000)  # split across the helper threads
    assert int8_dots_start(codes, query)().tolist() == expected.tolist()
    assert int8_dots_start(codes[:0], query)().size == 0


@pytest.mark.parametrize("seed", range(5))
def test_the_radius_bounds_the_error_of_both_approximations(seed: int) -> None:
    """|exact - approx| <= radius on every row: the promise `rank_top_k` relies on (1536 dims: integer dots
    past float32's exact range)."""
    rng = np.random.default_rng(10 + seed)
    dim = (384, 64, 768, 5, 1536)[seed]
    vectors = awkward_rows(rng, 4000, dim)
    codes, scales, errors, norms = quantise(vectors)
    queries = [awkward_rows(rng, 8, dim)[i] for i in range(8)] + [vectors[9], np.zeros(dim, np.float32)]
    for query in queries:
        exact = cosine_rows(vectors, query)
        for bounded in (
            float32_start(vectors, query, norms)(),
            int8_start(vectors, codes, scales, errors, norms, query)(),
        ):
            assert bounded.approx.dtype == np.float32
            assert np.all(np.abs(exact.astype(np.float64) - bounded.approx) <= bounded.radius)
            assert np.all(np.abs(exact) <= bounded.largest)
            picked = np.array([5, 0, 9])
            assert bounded.exact(picked).tolist() == exact[picked].tolist()


def test_the_hybrid_of_a_bounded_cosine_stays_bounded() -> None:
    """Approximations at the very edge of their radius (the worst a bound allows) stay within the hybrid's."""
    rng = np.random.default_rng(5)
    exact = rng.uniform(-1.0, 1.0, 20000).astype(np.float32)
    keyword = rng.choice([0.0, 0.5, 1.0, 1 / np.sqrt(3)], 20000).astype(np.float32)
    for radius in (rng.uniform(0.0, 0.03, 20000).astype(np.float32), 3e-5):
        approx = (exact + rng.choice([-1.0, 1.0], 20000) * radius).astype(np.float32)
        edge = np.maximum(radius, np.abs(approx.astype(np.float64) - exact)).astype(np.float32)
        mixed = bounded_hybrid(Bounded(approx, edge, lambda rows: exact[rows], 1.0), keyword)
        reference = hybrid(exact, keyword)
        assert np.all(np.abs(reference.astype(np.float64) - mixed.approx) <= mixed.radius)
        assert np.all(np.abs(reference) <= mixed.largest)
        assert mixed.exact(np.array([3, 1])).tolist() == reference[[3, 1]].tolist()
