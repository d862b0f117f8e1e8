"""Retrieval ranking over an agent's index: relevance, weighted scoring and top-k under the index lock.

Runs in a worker thread (`asyncio.to_thread`); the service fetches the chosen rows afterwards.
"""

from __future__ import annotations

import numpy as np

from backend.config import Settings
from backend.gametime import from_game_minutes, game_minutes
from backend.memory.index import AgentIndex
from backend.memory.retrieval import Weights, cosine, hybrid, keyword_overlap, score_candidates, top_k


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
        rows = index.candidates(types)
        if rows.size == 0:
            return [], [], 0.0
        now = _query_minutes(when, index.latest_minutes())
        # Every row live and wanted (the usual case): slices are views, fancy indexing would copy each array.
        sel: np.ndarray | slice = slice(0, index.size) if rows.size == index.size else rows
        raw = relevance_raw(index, sel, mode, query_vector, query_tokens)
        parts = score_candidates(
            accessed_minutes=index.accessed[sel],
            importance=index.importance[sel],
            relevance=raw,
            now_minutes=now,
            decay=decay,
            weights=weights,
        )
        best = top_k(parts.score, k, tiebreak=index.ids[sel])
        chosen = rows[best]
        touched = [int(i) for i in index.ids[chosen][index.accessed[chosen] < now]]
        index.touch(touched, now)
        ranked = [
            (
                int(index.ids[r]),
                float(parts.score[b]),
                float(parts.recency[b]),
                float(parts.importance[b]),
                float(parts.relevance[b]),
            )
            for r, b in zip(chosen, best, strict=True)
        ]
        return ranked, touched, now


def relevance_raw(
    index: AgentIndex,
    rows: np.ndarray | slice,
    mode: str,
    query_vector: np.ndarray | None,
    query_tokens: set[str],
) -> np.ndarray:
    """Raw relevance of the candidate rows: embedding cosine, keyword overlap, or their mean."""
    emb = cosine(index.vectors[: index.size], query_vector)[rows] if query_vector is not None else None
    if mode == "embedding" and emb is not None:
        return emb
    shared = index.shared_tokens(query_tokens)[rows]
    kw = keyword_overlap(shared, index.token_counts[rows], len(query_tokens))
    return hybrid(emb, kw) if mode == "hybrid" and emb is not None else kw


def _query_minutes(when: tuple[int | None, float | None], latest: float) -> float:
    day, time_of_day = when
    if day is None and time_of_day is None:
        return latest
    if day is None:
        day = from_game_minutes(latest)[0]
    return game_minutes(day, time_of_day or 0.0)
