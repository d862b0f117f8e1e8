"""Retrieval ranking over an agent's index: relevance, weighted scoring and top-k under the index lock.

Runs in a worker thread (`asyncio.to_thread`); the service fetches the chosen rows afterwards.
"""

from __future__ import annotations

import numpy as np

from backend.config import Settings
from backend.gametime import from_game_minutes, game_minutes
from backend.memory.index import AgentIndex
from backend.memory.retrieval import Weights, cosine_start, hybrid, keyword_overlap, rank_top_k


def weights_from(s: Settings, given: dict[str, float | None] | None) -> Weights:
    """The retrieval weights: those given, the rest from settings."""
    given = given or {}

    def pick(name: str, default: float) -> float:
        value = given.get(name)
        return default if value is None else float(value)

    return Weights(
        pick("recency", s.weight_recency),
        pick("importance", s.weight_importance),
        pick("relevance", s.weight_relevance),
    )


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
) -> tuple[list[tuple[int, float, float, float, float]], list[int], float]:
    """Score every candidate under the index lock.

    Returns (id, score, recency, importance, relevance) best first, the ids whose access time moves
    forward to the query's time, and that time in game minutes.
    """
    with index.lock:
        # Every row live and wanted (the usual case): slices are views, fancy indexing would copy each array.
        sel: np.ndarray | slice = slice(0, index.size) if index.all_live(types) else index.candidates(types)
        if (index.size if isinstance(sel, slice) else sel.size) == 0:
            return [], [], 0.0
        now = _query_minutes(when, index.latest_minutes())
        raw = relevance_raw(index, sel, mode, query_vector, query_tokens)
        best, parts = rank_top_k(
            accessed_minutes=index.accessed[sel],
            importance=index.importance[sel],
            relevance=raw,
            tiebreak=index.ids[sel],
            now_minutes=now,
            decay=decay,
            weights=weights,
            k=k,
        )
        chosen = best if isinstance(sel, slice) else sel[best]
        ids = index.ids[chosen]
        stale = index.accessed[chosen] < now
        touched = ids[stale].tolist()
        index.touch_rows(chosen[stale], now)
        ranked = list(
            zip(
                ids.tolist(),
                parts.score.tolist(),
                parts.recency.tolist(),
                parts.importance.tolist(),
                parts.relevance.tolist(),
                strict=True,
            )
        )
        return ranked, touched, now


def relevance_raw(
    index: AgentIndex,
    rows: np.ndarray | slice,
    mode: str,
    query_vector: np.ndarray | None,
    query_tokens: set[str],
) -> np.ndarray:
    """Raw relevance of the candidate rows: embedding cosine, keyword overlap, or their mean."""
    if query_vector is None or mode == "keyword":
        return _keyword(index, rows, query_tokens)
    product = cosine_start(index.vectors[: index.size], query_vector)
    # In hybrid mode the keyword half is counted while helper threads may still be multiplying.
    kw = _keyword(index, rows, query_tokens) if mode == "hybrid" else None
    emb = product()[rows]
    return emb if kw is None else hybrid(emb, kw)


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
