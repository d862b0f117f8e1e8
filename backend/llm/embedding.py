"""Embedders. `local` needs no model and no download: hashed character n-grams and words."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from backend.config import Settings
from backend.llm.base import Embedder, normalise_rows
from backend.text import char_ngrams, japanese_runs, latin_words, normalise


class LocalEmbedder(Embedder):
    """Feature hashing of Latin words, and of 1-3 character n-grams of Japanese runs, into `dim` buckets.

    Deterministic (crc32, not Python's salted hash), offline, and fast enough to embed on every insert.
    It captures shared words and characters, not meaning: a paraphrase with no common words scores low.
    """

    name = "local"

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim

    @classmethod
    def from_settings(cls, settings: Settings) -> LocalEmbedder:
        return cls(dim=settings.embedding_dim)

    def features(self, text: str) -> list[tuple[str, float]]:
        feats: list[tuple[str, float]] = [(f"w:{w}", 1.0) for w in latin_words(text)]
        for word in latin_words(text):
            feats.extend((f"c:{g}", 0.25) for g in char_ngrams(f"^{word}$", 3))
        for run in japanese_runs(text):
            feats.extend((f"1:{ch}", 0.3) for ch in run)
            feats.extend((f"2:{g}", 1.0) for g in char_ngrams(run, 2) if len(run) >= 2)
            feats.extend((f"3:{g}", 0.7) for g in char_ngrams(run, 3) if len(run) >= 3)
        return feats

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in self.features(normalise(text)):
                digest = zlib.crc32(feature.encode("utf-8"))
                sign = 1.0 if digest & 1 else -1.0
                matrix[row, (digest >> 1) % self.dim] += sign * weight
        return normalise_rows(matrix)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_sync(texts)
