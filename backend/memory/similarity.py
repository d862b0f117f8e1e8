"""Embedding relevance of one query against an agent's rows: the exact cosine, and two fast approximations
that carry a rigorous error radius per row, so ranking scores only the rows that could matter exactly.

Exact (`cosine_rows`): one float32 dot product per row (`np.vecdot`). A row's value does not depend on where
it sits or which rows are multiplied with it; a BLAS matrix-vector product sums rows in blocks and can give
the same vector a different last bit in another position (identical memories would not tie). Over all rows it
is a few times slower than BLAS, so ranking uses it for the normalisation range and the finalists only.

Approximations, each a `Bounded` with `radius >= |exact - approx|` row by row (n = dim, u = 2**-24,
gamma_n = n*u / (1 - n*u), R >= every row's norm, ||q|| the query's):

- float32 (`float32_start`): the BLAS product. It and `cosine_rows` are both float32 dot products of n terms,
  each within gamma_n * ||x|| * ||q|| of the real value whatever the summation order, so radius 2 * gamma_n * R * ||q||.
- int8 (`int8_start`): symmetric per-row codes kept by the index, x = s*x' + e with s = max|x| / 127 (rounded
  up to float32) and x' = round(x / s), the query likewise q = t*q' + d. Then x.q - s*t*(x'.q') = e.q + s*x'.d,
  so by Cauchy-Schwarz |x.q - s*t*(x'.q')| <= ||e||*||q|| + ||s*x'||*||d||, with ||e|| kept per row (computed
  in float64 at insert) and ||s*x'|| <= R. `cosine_rows` adds gamma_n * R * ||q||; the integer dot (exact in
  float32 up to n = 1040, n * 127**2 < 2**24, one rounding beyond) and the products s*t*dot add up to 4u * R * ||q||;
  `ROUNDING_BOUND` * R * ||q|| covers the float32 rounding of the radius itself and of approx +- radius.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numkong
import numpy as np

from backend.memory.retrieval import hybrid
from backend.memory.selection import ROUNDING_BOUND, Bounded

#: int8 codes run from -CODE_MAX to CODE_MAX: symmetric, and -128 is never used (SIMD int8 kernels negate
#: codes, and -(-128) does not fit in int8).
CODE_MAX = 127
#: Rows quantised per step when the index appends many rows (a load): float64 temporaries stay a few MB.
QUANTISE_CHUNK = 4096
UNIT_ROUNDOFF = 2.0**-24


def gamma(n: int) -> float:
    """The classic bound on the relative error of an n-term float32 dot product (any summation order)."""
    return n * UNIT_ROUNDOFF / (1.0 - n * UNIT_ROUNDOFF)


def round_up(values: np.ndarray) -> np.ndarray:
    """float64 -> float32, never below the input (the margin exceeds float32's rounding of half a unit)."""
    return (np.asarray(values, dtype=np.float64) * (1.0 + 1e-6)).astype(np.float32)


def cosine_rows(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The exact relevance: each row's float32 dot product with the query, independent of its neighbours."""
    return np.vecdot(matrix, np.asarray(query, dtype=np.float32))


def quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Symmetric int8 codes of float rows.

    Returns:
        (codes int8, scale s float32, ||x - s*codes|| per row rounded up to float32, an upper bound on
        every row's ||x|| and ||s*codes||). The error is computed in float64 from the stored float32 scale,
        so it bounds the real error however the division rounded.
    """
    exact = np.asarray(vectors, dtype=np.float64)
    # One float32 step up from max|x| / 127: never below it, so |x / s| <= 127 with no clipping, and a
    # zero row gets the smallest positive scale (codes 0, error 0) instead of a division by zero.
    scale = np.nextafter((np.abs(exact).max(axis=1) / CODE_MAX).astype(np.float32), np.float32(np.inf))
    wide = scale.astype(np.float64)[:, None]
    codes = np.rint(exact / wide)
    decoded = codes * wide  # exact: a 7-bit integer times a 24-bit scale
    errors = round_up(np.sqrt(_squares(exact - decoded)))
    largest = max(_squares(exact).max(initial=0.0), _squares(decoded).max(initial=0.0))
    return codes.astype(np.int8), scale, errors, float(np.sqrt(largest)) * (1.0 + 1e-6)


def norm_bound(vectors: np.ndarray) -> float:
    """An upper bound on every row's ||x|| (0 for none), computed as `quantise` bounds it."""
    exact = np.asarray(vectors, dtype=np.float64)
    return float(np.sqrt(_squares(exact).max(initial=0.0))) * (1.0 + 1e-6)


def _squares(rows: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", rows, rows)


#: From this many rows a product is split across threads. BLAS itself runs one thread per process
#: (backend/__init__.py): its spinning worker threads were 10-20x slower on a busy 2-core machine. Plain
#: Python threads (numpy and numkong release the GIL) only queue under load, and on an idle machine halve
#: these memory-bound products: float32 10k x 384 went 0.94 -> 0.53 ms, 100k 14.3 -> 8.2 ms; int8 (a quarter
#: of the bytes) gains from 2 * INT8_PARALLEL_ROWS rows: 16k even, 24k 0.54 -> 0.37 ms, 100k 3.0 -> 1.65 ms.
PARALLEL_ROWS = 4096
INT8_PARALLEL_ROWS = 8192
PARALLEL_WORKERS = max(1, min(4, os.cpu_count() or 1))
_POOL = ThreadPoolExecutor(max_workers=PARALLEL_WORKERS, thread_name_prefix="cosine")


def split_start(rows: int, min_rows: int, product: Callable[[int, int], None]) -> Callable[[], None]:
    """Run `product(lo, hi)` over row ranges covering `rows`: helper threads take all ranges but the first,
    which this thread runs now; the returned call waits for the helpers (the caller can work in between)."""
    parts = max(1, min(PARALLEL_WORKERS, rows // min_rows))
    bounds = [rows * i // parts for i in range(parts + 1)]
    pending = [_POOL.submit(product, lo, hi) for lo, hi in zip(bounds[1:-1], bounds[2:], strict=True)]
    product(bounds[0], bounds[1])

    def finish() -> None:
        for job in pending:
            job.result()

    return finish


def cosine_start(matrix: np.ndarray, query: np.ndarray) -> Callable[[], np.ndarray]:
    """The BLAS product `matrix @ query` in two steps (see `split_start`)."""
    query = np.asarray(query, dtype=matrix.dtype)
    out = np.empty(matrix.shape[0], dtype=matrix.dtype)

    def product(lo: int, hi: int) -> None:
        np.matmul(matrix[lo:hi], query, out=out[lo:hi])

    wait = split_start(matrix.shape[0], PARALLEL_ROWS, product)

    def finish() -> np.ndarray:
        wait()
        return out

    return finish


def int8_dots_start(codes: np.ndarray, query_codes: np.ndarray) -> Callable[[], np.ndarray]:
    """Exact integer dot products of int8 rows with int8 query codes, as float32, in two steps."""
    out = np.empty((1, codes.shape[0]), dtype=np.float32)
    query = query_codes.reshape(1, -1)

    def product(lo: int, hi: int) -> None:
        if hi > lo:  # numkong refuses empty inputs
            numkong.cdist(query, codes[lo:hi], metric="dot", out=out[:, lo:hi])

    wait = split_start(codes.shape[0], INT8_PARALLEL_ROWS, product)

    def finish() -> np.ndarray:
        wait()
        return out[0]

    return finish


def float32_start(vectors: np.ndarray, query: np.ndarray, norm_bound: float) -> Callable[[], Bounded]:
    """Cosines of every row from the BLAS product, to within 2 * gamma_n * R * ||q|| (module docstring)."""
    q = np.asarray(query, dtype=np.float32)
    finish = cosine_start(vectors, q)
    reach = norm_bound * float(np.linalg.norm(q.astype(np.float64))) * (1.0 + 1e-6)
    radius = (2.0 * gamma(vectors.shape[1]) + ROUNDING_BOUND) * reach
    largest = reach * (1.0 + 1e-3)  # bounds |exact| (gamma_n << 1e-3)
    return lambda: Bounded(finish(), radius, lambda rows: cosine_rows(vectors[rows], q), largest)


def int8_start(
    vectors: np.ndarray,
    codes: np.ndarray,
    scales: np.ndarray,
    errors: np.ndarray,
    norm_bound: float,
    query: np.ndarray,
) -> Callable[[], Bounded]:
    """Cosines of every row from the int8 codes (`quantise`), with the per-row radius of the module docstring."""
    q = np.asarray(query, dtype=np.float32)
    query_codes, (t,), (query_error,), query_norms = quantise(q[None])
    finish = int8_dots_start(codes, query_codes)
    reach = norm_bound * query_norms
    fixed = (
        norm_bound * float(query_error)
        + (gamma(vectors.shape[1]) + 4 * UNIT_ROUNDOFF + ROUNDING_BOUND) * reach
    )

    def bounded() -> Bounded:
        approx = finish()
        approx *= scales
        approx *= t
        radius = np.multiply(errors, np.float32(query_norms))
        radius += np.float32(fixed)
        return Bounded(approx, radius, lambda rows: cosine_rows(vectors[rows], q), reach * (1.0 + 1e-3))

    return bounded


def bounded_hybrid(emb: Bounded, kw: np.ndarray) -> Bounded:
    """`hybrid` of a bounded cosine: the mean moves by half the cosine's error, plus the rounding of sums
    below `emb.largest + 1` in magnitude (keyword overlap is at most 1)."""
    slack = ROUNDING_BOUND * (emb.largest + 1.0)
    radius: np.ndarray | float
    if isinstance(emb.radius, np.ndarray):
        radius = emb.radius * np.float32(0.5) + np.float32(slack)
    else:
        radius = emb.radius * 0.5 + slack
    exact = emb.exact
    largest = (emb.largest + 1.0) * 0.5 + slack
    return Bounded(hybrid(emb.approx, kw), radius, lambda rows: hybrid(exact(rows), kw[rows]), largest)
