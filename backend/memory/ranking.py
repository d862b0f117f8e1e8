"""Retrieval ranking over an agent's index: relevance, weighted scoring and top-k under the index lock.

Two scorings: fused (relevance first, fused.py; the default) and the seed's (every component min-max
normalised over all candidates, recency per game minute: retrieval.py / selection.py). Runs in a worker
thread (`asyncio.to_thread`); the retriever fetches the chosen rows afterwards if it needs them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from backend.gametime import from_game_minutes, game_minutes
from backend.memory import similarity
from backend.memory.fused import Fusion, Signals, rank_fused
from backend.memory.index import INT8_ROWS, AgentIndex
from backend.memory.models import TYPE_CODES
from backend.memory.retrieval import Components, Weights, keyword_overlap
from backend.memory.selection import Bounded, rank_top_k
from backend.memory.timewords import Window

#: One ranked memory: (id, score, recency, importance, relevance, time).
Ranked = tuple[int, float, float, float, float, float]


def rank(
    index: AgentIndex,
    mode: str,
    query_vector: np.ndarray | None,
    query_tokens: set[str],
    k: int,
    weights: Weights,
    decay: float,
    when: tuple[int | None, float | None],
    types: list[str] | None,
    int8_rows: int = INT8_ROWS,
    *,
    touch: bool = True,
    before_id: int | None = None,
    fusion: Fusion | None = None,
    window: Window | None = None,
) -> tuple[list[Ranked], list[int], float]:
    """Score every candidate under the index lock: fused scoring with `fusion` (`window`: the game days the
    query names), else the seed's (recency `decay` per game minute).

    Returns (id, score, recency, importance, relevance, time) best first, the ids whose access time moves
    forward to the query's time (none without `touch`: the index is left as it was), and that time in game
    minutes (`contents(index, ranked)` gives the texts).
    The result does not depend on `int8_rows` (from how many candidates the int8 copy pre-selects) in the
    seed's scoring: only the time it takes does.
    """
    with index.lock:
        # Every row live and wanted (the usual case): slices are views, fancy indexing would copy each array.
        whole = index.all_live(types, before_id)
        sel: np.ndarray | slice = slice(0, index.size) if whole else index.candidates(types, before_id)
        if (index.size if isinstance(sel, slice) else sel.size) == 0:
            return [], [], 0.0
        now = _query_minutes(when, index.latest_minutes())
        ask = _Ask(mode, query_vector, query_tokens, int8_rows, now, weights, k)
        if fusion is not None:
            best, parts = _fused(index, sel, ask, fusion, window)
        else:
            best, parts = _seed(index, sel, ask, decay)
        chosen = best if isinstance(sel, slice) else sel[best]
        ids = index.ids[chosen]
        touched: list[int] = []
        if touch:
            stale = index.accessed[chosen] < now
            touched = ids[stale].tolist()
            index.touch_rows(chosen[stale], now)
        time = parts.time if parts.time is not None else np.zeros(len(ids))
        ranked = list(
            zip(
                ids.tolist(),
                parts.score.tolist(),
                parts.recency.tolist(),
                parts.importance.tolist(),
                parts.relevance.tolist(),
                time.tolist(),
                strict=True,
            )
        )
        return ranked, touched, now


@dataclass(frozen=True)
class _Ask:
    """One query, as both scorings read it: the relevance mode and signals, the query's game time, k."""

    mode: str
    vector: np.ndarray | None
    tokens: set[str]
    int8_rows: int
    now: float
    weights: Weights
    k: int


def _seed(
    index: AgentIndex, sel: np.ndarray | slice, ask: _Ask, decay: float
) -> tuple[np.ndarray, Components]:
    """The seed's scoring: every component min-max normalised over the candidates (retrieval.py)."""
    raw = relevance_raw(index, sel, ask.mode, ask.vector, ask.tokens, ask.int8_rows)
    return rank_top_k(
        accessed_minutes=index.accessed[sel],
        importance=index.importance[sel],
        relevance=raw,
        tiebreak=index.ids[sel],
        now_minutes=ask.now,
        decay=decay,
        weights=ask.weights,
        k=ask.k,
    )


def _fused(
    index: AgentIndex, sel: np.ndarray | slice, ask: _Ask, fusion: Fusion, window: Window | None
) -> tuple[np.ndarray, Components]:
    """Relevance-first scoring (fused.py) of the candidate rows."""
    dense = None
    if ask.vector is not None and ask.mode != "keyword":
        count = index.size if isinstance(sel, slice) else sel.size
        dense = index.cosine_start(ask.vector, int8=count >= ask.int8_rows)().take(sel).approx
    lexical = index.bm25(ask.tokens)[sel] if ask.mode != "embedding" or dense is None else None
    linked = index.same_as_previous()
    if not isinstance(sel, slice):  # a candidate links to the previous candidate only if that is its row
        linked = linked[sel] & np.concatenate(([False], np.diff(sel) == 1))
    in_window = None
    if window is not None:
        # What happened (observations) and what was planned for those days; a reflection formed then is
        # about earlier times, so it does not count as "what I did yesterday".
        created_days = index.created[sel] // 1440.0 + 1.0
        in_window = (created_days >= window[0]) & (created_days <= window[1])
        in_window &= index.types[sel] != TYPE_CODES["reflection"]
    signals = Signals(dense, index.vectored[sel], lexical, linked)
    return rank_fused(
        signals=signals,
        accessed_minutes=index.accessed[sel],
        importance=index.importance[sel],
        in_window=in_window,
        tiebreak=index.ids[sel],
        now_minutes=ask.now,
        weights=ask.weights,
        fusion=fusion,
        k=ask.k,
    )


def contents(index: AgentIndex, ranked: list[Ranked]) -> list[str]:
    """The texts of ranked rows, from the index (call under `index.lock`, as `rank` does)."""
    positions = index.positions([row[0] for row in ranked])
    return [index.contents[int(pos)] for pos in positions]


def relevance_raw(
    index: AgentIndex,
    rows: np.ndarray | slice,
    mode: str,
    query_vector: np.ndarray | None,
    query_tokens: set[str],
    int8_rows: int = INT8_ROWS,
) -> np.ndarray | Bounded:
    """Raw relevance of the candidate rows: keyword overlap (exact), or the embedding cosine, alone or
    averaged with it, as a `Bounded` approximation whose exact values ranking computes for a few rows."""
    if query_vector is None or mode == "keyword":
        return _keyword(index, rows, query_tokens)
    count = index.size if isinstance(rows, slice) else rows.size
    product = index.cosine_start(query_vector, int8=count >= int8_rows)
    # In hybrid mode the keyword half is counted while helper threads may still be multiplying.
    kw = _keyword(index, rows, query_tokens) if mode == "hybrid" else None
    emb = product().take(rows)
    return emb if kw is None else similarity.bounded_hybrid(emb, kw)


def _keyword(index: AgentIndex, rows: np.ndarray | slice, query_tokens: set[str]) -> np.ndarray:
    shared = index.shared_tokens(query_tokens)[rows]
    return keyword_overlap(shared, index.inverse_sqrt_tokens[rows], len(query_tokens))


def _query_minutes(when: tuple[int | None, float | None], latest: float) -> float:
    day, time_of_day = when
    if day is None and time_of_day is None:
        return latest
    if day is None:
        day = from_game_minutes(latest)[0]
    return game_minutes(day, time_of_day or 0.0)
