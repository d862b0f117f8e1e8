"""Pure scoring: the formula computed by hand on small fixed sets, normalisation and ties."""

from __future__ import annotations

import math

import numpy as np
import pytest

from backend.gametime import game_minutes
from backend.memory.retrieval import (
    TIE_VALUE,
    Weights,
    inverse_sqrt,
    keyword_overlap,
    minmax,
    recency_normalised,
    score_candidates,
    top_k,
)


def test_minmax_spreads_to_unit_range_and_ties_get_the_midpoint() -> None:
    assert minmax(np.array([2.0, 4.0, 6.0])).tolist() == [0.0, 0.5, 1.0]
    assert minmax(np.array([3.0, 3.0, 3.0])).tolist() == [TIE_VALUE] * 3
    assert minmax(np.array([7.0])).tolist() == [TIE_VALUE]
    # Equal values inside a spread-out set stay equal.
    assert minmax(np.array([1.0, 5.0, 5.0, 9.0])).tolist() == [0.0, 0.5, 0.5, 1.0]


def test_scores_match_the_formula_by_hand() -> None:
    now = game_minutes(2, 9.0)  # day 2, 09:00
    accessed = np.array([game_minutes(2, 8.5), game_minutes(2, 9.0), game_minutes(1, 23.0)])
    importance = np.array([8.0, 2.0, 5.0])
    relevance = np.array([0.2, 0.6, 0.4])
    weights = Weights(recency=1.0, importance=2.0, relevance=0.5)
    parts = score_candidates(
        accessed_minutes=accessed,
        importance=importance,
        relevance=relevance,
        now_minutes=now,
        decay=0.99,
        weights=weights,
    )
    # By hand: ages 30, 0 and 600 game minutes; raw recency 0.99 ** age, then min-max.
    raw = [0.99**30, 0.99**0, 0.99**600]
    rec = [(r - min(raw)) / (max(raw) - min(raw)) for r in raw]
    imp = [(8 - 2) / 6, 0.0, (5 - 2) / 6]
    rel = [0.0, 1.0, 0.5]
    expected = [1.0 * rec[i] + 2.0 * imp[i] + 0.5 * rel[i] for i in range(3)]
    assert parts.recency == pytest.approx(rec)
    assert parts.importance == pytest.approx(imp)
    assert parts.relevance == pytest.approx(rel)
    assert parts.score == pytest.approx(expected)
    assert top_k(parts.score, 2).tolist() == [0, 1]  # about 2.74, then 1.5, then 1.25


def test_ties_in_every_component_score_the_midpoint_and_newer_wins() -> None:
    parts = score_candidates(
        accessed_minutes=np.array([60.0, 60.0]),
        importance=np.array([4.0, 4.0]),
        relevance=np.array([0.3, 0.3]),
        now_minutes=120.0,
        decay=0.99,
        weights=Weights(),
    )
    assert parts.score.tolist() == [1.5, 1.5]
    # Equal scores: the larger tiebreak (a newer id) comes first.
    assert top_k(parts.score, 1, tiebreak=np.array([10, 11])).tolist() == [1]
    assert top_k(parts.score, 2, tiebreak=np.array([10, 11])).tolist() == [1, 0]


def test_recency_is_in_game_minutes_and_never_underflows() -> None:
    # One game day apart: 0.99 ** 1440 is tiny but still ordered; weeks apart still normalise exactly.
    ages = np.array([0.0, 1440.0, 100_000.0])
    got = recency_normalised(ages, 0.99)
    assert got[0] == 1.0 and got[2] == 0.0
    assert got[1] == pytest.approx(0.99**1440 / (1 - 0.99**100_000), rel=1e-9)
    # Shifting everyone by the same age changes nothing (only differences matter after normalisation).
    assert recency_normalised(ages + 80_000, 0.99) == pytest.approx(got)
    # Accessed "after" the query time counts as age 0.
    assert recency_normalised(np.array([-30.0, 0.0, 60.0]), 0.99).tolist()[:2] == [1.0, 1.0]


def test_keyword_overlap_is_binary_cosine() -> None:
    got = keyword_overlap(np.array([2, 1, 0, 0]), inverse_sqrt(np.array([4, 1, 3, 0])), 2)
    assert got == pytest.approx([2 / math.sqrt(8), 1 / math.sqrt(2), 0.0, 0.0], rel=1e-6)
    assert keyword_overlap(np.array([0]), inverse_sqrt(np.array([3])), 0).tolist() == [0.0]


def test_top_k_orders_by_score_and_handles_small_sets() -> None:
    scores = np.array([0.1, 0.9, 0.5, 0.7, 0.3])
    assert top_k(scores, 3).tolist() == [1, 3, 2]
    assert top_k(scores, 10).tolist() == [1, 3, 2, 4, 0]
    assert top_k(np.array([]), 3).tolist() == []
