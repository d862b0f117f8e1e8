"""The per-agent index: amortised growth, id lookups, tombstones, and vectorised keyword counts."""

from __future__ import annotations

import numpy as np
import pytest

from backend.llm.embedding import LocalEmbedder
from backend.memory.index import AgentIndex, IndexRow
from backend.text import token_set

TEXTS = ["カフェでヒカリと話した", "図書館で本を読んだ", "I met Hikari at the cafe", "公園でヒカリと散歩した"]


def build(texts: list[str], start_id: int = 1) -> AgentIndex:
    embedder = LocalEmbedder(dim=64)
    vectors = embedder.embed_sync(texts)
    index = AgentIndex(64, capacity=2)
    index.append(
        [
            IndexRow(start_id + i, float(i + 1), 10.0 * i, "observation", t, vectors[i])
            for i, t in enumerate(texts)
        ]
    )
    return index


def test_append_grows_capacity_and_keeps_rows() -> None:
    index = build(TEXTS)
    assert index.size == 4 and index.ids.shape[0] >= 4
    assert index.ids[:4].tolist() == [1, 2, 3, 4]
    assert index.importance[:4].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert np.allclose(np.linalg.norm(index.vectors[:4], axis=1), 1.0)
    # Ids must keep increasing: a stale or duplicate append is refused.
    try:
        index.append([IndexRow(2, 1.0, 0.0, "observation", "x", None)])
    except ValueError:
        pass
    else:
        raise AssertionError("an out-of-order append was accepted")


def test_shared_tokens_equal_a_per_memory_count() -> None:
    index = build(TEXTS)
    query = token_set("ヒカリとカフェ")
    expected = [len(query & token_set(t)) for t in TEXTS]
    assert index.shared_tokens(query).tolist() == expected
    assert index.token_counts[:4].tolist() == [len(token_set(t)) for t in TEXTS]
    assert index.shared_tokens({"存在しない"}).tolist() == [0, 0, 0, 0]


def test_cosine_all_equals_per_row_dot_products() -> None:
    index = build(TEXTS)
    query = LocalEmbedder(dim=64).embed_sync(["カフェ"])[0]
    expected = [float(np.dot(index.vectors[i], query)) for i in range(4)]
    assert np.allclose(index.cosine_all(query), expected)


def test_remove_touch_and_importance_by_id() -> None:
    index = build(TEXTS, start_id=10)
    index.set_importance([11], [9.0])
    index.touch([12, 99], 500.0)  # unknown ids are ignored
    index.touch([12], 100.0)  # never moves backwards
    assert index.importance[1] == 9.0 and index.accessed[2] == 500.0
    assert index.remove([10, 13, 77]) == 2
    assert index.candidates().tolist() == [1, 2]
    assert index.live == 2 and index.latest_minutes() == 500.0
    assert index.positions([11, 13]).tolist() == [1]


def test_candidates_filter_by_type() -> None:
    index = AgentIndex(8)
    kinds = ["observation", "reflection", "plan", "observation"]
    index.append([IndexRow(i + 1, 5.0, 0.0, kind, f"text {i}", None) for i, kind in enumerate(kinds)])
    assert index.candidates(["observation"]).tolist() == [0, 3]
    assert index.candidates(["reflection", "plan"]).tolist() == [1, 2]
    assert index.candidates().tolist() == [0, 1, 2, 3]


def test_latest_access_follows_appends_touches_and_removals() -> None:
    index = build(TEXTS, start_id=10)  # accessed 0, 10, 20, 30
    assert index.latest_minutes() == 30.0 and index.all_live(None)
    index.touch([11], 45.0)
    assert index.latest_minutes() == 45.0
    index.append([IndexRow(20, 5.0, 40.0, "observation", "駅前で待った", None)])
    assert index.latest_minutes() == 45.0
    # Removing the newest row: the next newest live row is found again, dead rows never count.
    index.remove([11])
    assert index.latest_minutes() == 40.0 and not index.all_live(None)
    index.remove([10, 12, 13, 20])
    assert index.latest_minutes() == 0.0
    assert not build(TEXTS).all_live(["observation"])  # a type filter needs the mask


def test_keyword_relevance_inputs_are_kept_per_row() -> None:
    index = build(["カフェ", "", "I met Hikari"])
    counts = index.token_counts[:3].astype(np.float64)
    expected = [1 / np.sqrt(c) if c else 0.0 for c in counts]
    assert np.allclose(index.inverse_sqrt_tokens[:3], expected)


def test_rank_over_a_filtered_index_matches_the_reference_formula() -> None:
    from backend.memory.ranking import rank
    from backend.memory.retrieval import Weights, score_candidates, top_k

    rng = np.random.default_rng(7)
    texts = [
        f"{place}で{who}と話した" for place in ("カフェ", "公園", "図書館") for who in ("ヒカリ", "ソラ")
    ] * 20
    embedder = LocalEmbedder(dim=64)
    vectors = embedder.embed_sync(texts)
    index = AgentIndex(64)
    kinds = ["observation", "reflection", "plan"]
    index.append(
        [
            IndexRow(
                i + 1, float(rng.integers(1, 11)), float(rng.integers(0, 600)), kinds[i % 3], t, vectors[i]
            )
            for i, t in enumerate(texts)
        ]
    )
    index.remove([3, 4, 50, 51])
    query = embedder.embed_sync(["カフェのヒカリ"])[0]
    tokens = token_set("カフェのヒカリ")
    for types in (None, ["observation", "reflection"]):
        rows = index.candidates(types)
        expected_parts = score_candidates(
            accessed_minutes=index.accessed[rows],
            importance=index.importance[rows],
            relevance=index.cosine_all(query)[rows],
            now_minutes=700.0,
            decay=0.99,
            weights=Weights(),
        )
        expected = index.ids[rows][top_k(expected_parts.score, 10, tiebreak=index.ids[rows])].tolist()
        ranked, touched, now = rank(
            index, "embedding", query, tokens, 10, Weights(), 0.99, (1, 700 / 60), types
        )
        assert [r[0] for r in ranked] == expected
        assert now == 700.0 and set(touched) <= set(expected)
        assert {kinds[(i - 1) % 3] for i in expected} <= set(types or kinds)


def test_the_int8_copy_follows_appends_growth_and_removals() -> None:
    """After appends (growing the arrays, rows without a vector) and removals, the int8 copy equals a fresh
    quantisation of the float32 rows, and a reload (a new index from the same rows) holds the same copy."""
    from backend.memory.similarity import quantise

    embedder = LocalEmbedder(dim=64)
    texts = [
        f"{place}で{who}と話した" for place in ("カフェ", "公園", "駅前") for who in ("ヒカリ", "ソラ", "")
    ]
    index = AgentIndex(64, capacity=2)
    assert not index.int8 and index.codes.size == 0  # no int8 copy until one is asked for
    index.use_int8()
    rows = []
    for batch in range(4):
        vectors = embedder.embed_sync(texts)
        batch_rows = [
            IndexRow(batch * 100 + i + 1, 5.0, 0.0, "observation", t, None if i % 4 == 3 else vectors[i])
            for i, t in enumerate(texts)
        ]
        index.append(batch_rows)
        rows += batch_rows
        index.remove([batch * 100 + 2])
    n = index.size
    codes, scales, errors, norms = quantise(index.vectors[:n])
    assert np.array_equal(index.codes[:n], codes)
    assert np.array_equal(index.code_scales[:n], scales) and np.array_equal(index.code_errors[:n], errors)
    assert index.norm_bound >= norms and not index.codes[3].any()  # a row without a vector codes to zeros
    reloaded = AgentIndex(64)
    reloaded.append(rows)
    reloaded.use_int8()  # made at once from the held rows: the same copy as kept in step with appends
    assert np.array_equal(reloaded.codes[:n], index.codes[:n]) and reloaded.norm_bound == index.norm_bound
    assert index.nbytes() >= index.codes.nbytes + index.vectors.nbytes


def tied_index(rng: np.random.Generator) -> tuple[AgentIndex, np.ndarray]:
    """An index full of ties: repeated texts (identical vectors), coarse importance and access times,
    near-duplicate vectors one float32 step apart, rows without a vector, three types, some removed."""
    texts = [
        f"{p}で{w}と{a}"
        for p in ("カフェ", "公園", "図書館")
        for w in ("ヒカリ", "ソラ")
        for a in ("話した", "歩いた")
    ]
    texts = [texts[i] for i in rng.integers(0, len(texts), 900)]
    vectors = LocalEmbedder(dim=64).embed_sync(texts)
    vectors[1::10] = np.nextafter(vectors[1::10], np.float32(1.0))
    kinds = ["observation", "reflection", "plan"]
    index = AgentIndex(64)
    index.append(
        [
            IndexRow(
                i + 1,
                float(rng.integers(1, 4) * 3),
                float(rng.integers(0, 3) * 60),
                kinds[i % 3],
                t,
                None if i % 17 == 5 else vectors[i],
            )
            for i, t in enumerate(texts)
        ]
    )
    index.remove(rng.choice(np.arange(1, 901), 40, replace=False).tolist())
    return index, LocalEmbedder(dim=64).embed_sync(["カフェでヒカリ", "公園", "図書館でソラと歩いた"])


@pytest.mark.parametrize("seed", range(3))
def test_rank_with_the_int8_copy_equals_the_reference_formula(seed: int) -> None:
    """ranking.rank pre-selecting with the int8 copy (forced at any size) and with the float32 product both
    give exactly what score_candidates + top_k give over the exact cosine: picks, order, ties, components."""
    from backend.memory.ranking import rank
    from backend.memory.retrieval import Weights, hybrid, keyword_overlap, score_candidates, top_k

    rng = np.random.default_rng(seed)
    index, queries = tied_index(rng)
    for query, text in zip(queries, ["カフェでヒカリ", "公園", "図書館でソラと歩いた"], strict=True):
        tokens = token_set(text)
        for mode, types, weights, k in (
            ("embedding", None, Weights(), 10),
            ("hybrid", None, Weights(1.0, 2.0, 0.5), 30),
            ("embedding", ["observation", "plan"], Weights(0.0, 1.0, 1.0), 1),
            ("hybrid", ["reflection"], Weights(), 400),
            ("keyword", None, Weights(), 5),
        ):
            rows = index.candidates(types)
            relevance = index.cosine_all(query)[rows]
            keyword = keyword_overlap(
                index.shared_tokens(tokens)[rows], index.inverse_sqrt_tokens[rows], len(tokens)
            )
            relevance = {"embedding": relevance, "hybrid": hybrid(relevance, keyword), "keyword": keyword}[
                mode
            ]
            accessed = index.accessed.copy()
            reference = score_candidates(
                accessed_minutes=accessed[rows],
                importance=index.importance[rows],
                relevance=relevance,
                now_minutes=200.0,
                decay=0.99,
                weights=weights,
            )
            best = top_k(reference.score, k, tiebreak=index.ids[rows])
            expected = list(
                zip(
                    index.ids[rows][best].tolist(),
                    reference.score[best].tolist(),
                    reference.recency[best].tolist(),
                    reference.importance[best].tolist(),
                    reference.relevance[best].tolist(),
                    strict=True,
                )
            )
            for int8_rows in (0, 10**9):
                index.accessed[:] = accessed  # each run moves its winners' access time
                ranked, _, _ = rank(
                    index, mode, query, tokens, k, weights, 0.99, (1, 200 / 60), types, int8_rows
                )
                assert [row[:5] for row in ranked] == expected
                assert all(row[5] == 0.0 for row in ranked)  # the seed's scoring has no time component


def test_the_int8_copy_is_made_only_for_an_index_that_uses_it() -> None:
    """Below INT8_ROWS rows (the default caps keep an agent there) no copy is made or held; an index that
    grows to INT8_ROWS makes it, and a query asking for int8 on a smaller index makes it then."""
    from backend.memory.index import INT8_ROWS

    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((INT8_ROWS, 8)).astype(np.float32)
    rows = [IndexRow(i + 1, 5.0, 0.0, "observation", "x", vectors[i]) for i in range(INT8_ROWS)]
    small, large = AgentIndex(8), AgentIndex(8)
    small.append(rows[:100])
    large.append(rows[: INT8_ROWS - 1])
    assert not small.int8 and not large.int8 and large.codes.size == 0
    large.append(rows[INT8_ROWS - 1 :])
    assert large.int8 and large.codes.shape[0] >= INT8_ROWS and large.code_scales[: large.size].all()
    small.cosine_start(vectors[0], int8=True)()
    assert small.int8 and small.code_scales[:100].all()
