"""Embedded llama.cpp provider (`LLM_PROVIDER=llamacpp`, extra `machi[llamacpp]`): a GGUF model in-process.

The model is loaded once. JSON replies are decoded under a GBNF grammar built from the reply's JSON Schema
(`backend.llm.grammar`), so the model can only write tokens that keep the reply valid. A `Llama` instance
is not thread-safe and every call blocks, so calls run one at a time in a worker thread, most urgent
first (a live turn before a background rating), and the event loop never waits on the model.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import heapq
import itertools
import json
import random
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from backend.config import Settings
from backend.errors import ConfigError, LLMUnavailable, MissingDependency
from backend.llm import packaged
from backend.llm.base import (
    LLM,
    PRIORITY_TURN,
    Completion,
    Embedder,
    GenerateOptions,
    Message,
    normalise_rows,
)
from backend.llm.grammar import json_schema_to_gbnf

R = TypeVar("R")

#: What to install when llama-cpp-python is missing (the `llamacpp` extra, built from source).
INSTALL_HINT = "pip install 'machi[llamacpp]' (add CMAKE_ARGS=\"-DGGML_CUDA=on\" for an NVIDIA GPU)"


def llama_cpp_module() -> Any:
    """llama-cpp-python, imported on first use so that importing this module never needs the extra."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise MissingDependency(f"LLM_PROVIDER=llamacpp needs llama-cpp-python: {INSTALL_HINT}") from exc
    return llama_cpp


#: Replies longer than this many tokens are cut (a grammar-bound reply always closes well before).
DEFAULT_MAX_TOKENS = 1024


class PriorityGate:
    """One holder at a time; waiters go in (priority, arrival) order. Lower priority value goes first."""

    def __init__(self) -> None:
        self._busy = False
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    async def acquire(self, priority: int) -> None:
        if not self._busy and not self._waiters:
            self._busy = True
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (priority, next(self._order), waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed over just as we gave up: pass it on
            raise

    def release(self) -> None:
        while self._waiters:
            _, _, waiter = heapq.heappop(self._waiters)
            if not waiter.done():
                waiter.set_result(None)
                return
        self._busy = False


class _Engine:
    """A loaded `llama_cpp.Llama` and the gate that serialises its use."""

    def __init__(self, llama: Any) -> None:
        self.llama = llama
        self.gate = PriorityGate()
        self.lock = threading.Lock()  # belt and braces: the gate already serialises
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="llamacpp")

    async def run(self, fn: Callable[[Any], R], priority: int) -> R:
        """Run `fn(llama)` in the worker thread; the gate is released when the thread is done, even if the
        caller was cancelled meanwhile (the thread cannot be interrupted mid-call)."""
        await self.gate.acquire(priority)
        loop = asyncio.get_running_loop()
        try:
            future = self.pool.submit(self._locked, fn)
        except BaseException:
            self.gate.release()
            raise
        future.add_done_callback(lambda _: loop.call_soon_threadsafe(self.gate.release))
        return await asyncio.wrap_future(future)

    def _locked(self, fn: Callable[[Any], R]) -> R:
        with self.lock:
            return fn(self.llama)

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        closer = getattr(self.llama, "close", None)
        if closer is not None:
            closer()


def load_llama(model_path: str, **params: Any) -> Any:
    """Load a GGUF with llama-cpp-python; a file it cannot load becomes a ConfigError naming the file."""
    path = packaged.resolve(model_path)  # a file, or `package:NAME` (a model shipped in a PyPI package)
    if not path.is_file():
        raise ConfigError(f"LLAMACPP_MODEL_PATH {model_path!r} is not a file")
    try:
        return llama_cpp_module().Llama(model_path=str(path), verbose=False, **params)
    except (ValueError, RuntimeError) as exc:
        raise ConfigError(f"llama.cpp could not load {model_path!r}: {exc}") from exc


class LlamaCppLLM(LLM):
    """A GGUF model run in-process by llama.cpp, replies constrained by a grammar from the JSON Schema.

    The chat template is the one stored in the GGUF (llama-cpp-python picks it up when `chat_format` is
    None). MODEL_<ROLE> settings do not apply: there is one model in the process.
    """

    name = "llamacpp"

    def __init__(self, llama: Any, *, model_name: str, temperature: float = 0.7) -> None:
        self.engine = _Engine(llama)
        self.model = model_name
        self.temperature = temperature
        self._grammars: dict[str, str] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> LlamaCppLLM:
        path = settings.llamacpp_model_path or ""
        llama = load_llama(
            path,
            n_gpu_layers=settings.llamacpp_n_gpu_layers,
            n_ctx=settings.llamacpp_n_ctx,
            n_threads=settings.llamacpp_threads,
            n_threads_batch=settings.llamacpp_threads,
        )
        return cls(llama, model_name=Path(path).name, temperature=settings.llm_temperature)

    def resolve_model(self, options: GenerateOptions) -> str:
        return self.model

    async def check(self) -> str:
        """One line for /health: the model is loaded in this process (nothing to reach)."""
        return f"{self.name}: {self.model} loaded in-process, context {self.engine.llama.n_ctx()} tokens"

    def grammar_for(self, schema: dict[str, Any]) -> str:
        """The GBNF for a schema, converted once per distinct schema."""
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            self._grammars[key] = json_schema_to_gbnf(schema)
        return self._grammars[key]

    def request(
        self, messages: Sequence[Message], options: GenerateOptions, schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Keyword arguments of `Llama.create_chat_completion` for one call."""
        request: dict[str, Any] = {
            "messages": [dict(m) for m in messages],
            "temperature": self.temperature if options.temperature is None else options.temperature,
            "max_tokens": options.max_tokens or DEFAULT_MAX_TOKENS,
            # llama-cpp-python keeps the last seed it was given: a fresh one per call keeps replies varied.
            "seed": random.getrandbits(31) if options.seed is None else options.seed,
        }
        if schema is not None:
            request["grammar"] = llama_cpp_module().LlamaGrammar.from_string(
                self.grammar_for(schema), verbose=False
            )
        return request

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
    ) -> Completion:
        request = self.request(messages, options, schema)
        try:
            response = await self.engine.run(
                lambda llama: llama.create_chat_completion(**request), options.priority
            )
        except ValueError as exc:  # e.g. the prompt does not fit the context: asking again won't help
            raise LLMUnavailable(f"llama.cpp refused the call: {exc}", retryable=False) from exc
        except RuntimeError as exc:
            raise LLMUnavailable(f"llama.cpp failed: {exc}") from exc
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        return Completion(
            text=choice["message"].get("content") or "",
            model=self.model,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            meta={"finish_reason": choice.get("finish_reason")},
        )

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
        usage: Completion | None = None,
    ) -> AsyncIterator[str]:
        """Pieces as llama.cpp produces them: the worker thread pumps them into a queue.

        llama-cpp-python streams no usage; the token counts in `usage` are read from the context as the
        stream goes (see `_pump`), and match what a non-streamed call reports.
        """
        request = {**self.request(messages, options, schema), "stream": True}
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()

        def put(item: tuple[str, Any]) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        job = asyncio.ensure_future(
            self.engine.run(lambda llama: _pump(llama, request, put, stop), options.priority)
        )
        try:
            while True:
                kind, value = await queue.get()
                if kind == "piece":
                    yield value
                elif kind == "error":
                    raise LLMUnavailable(f"llama.cpp failed: {value}") from value
                else:
                    if usage is not None:
                        usage.model = self.model
                        usage.prompt_tokens, usage.completion_tokens = value
                    return
        finally:
            stop.set()  # a consumer that stops early frees the model at the next token
            with contextlib.suppress(Exception):
                await asyncio.shield(job)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.engine.close)


def _pump(
    llama: Any, request: dict[str, Any], put: Callable[[tuple[str, Any]], None], stop: threading.Event
) -> None:
    """Worker thread: stream a completion into `put` as ("piece", text)..., then ("done", (prompt_tokens,
    completion_tokens)) or ("error", exc). Stops at the next token once `stop` is set."""
    if stop.is_set():  # the consumer gave up while waiting for its turn
        put(("done", (None, None)))
        return
    chunks = llama.create_chat_completion(**request)
    prompt_tokens: int | None = None
    finish = None
    try:
        for chunk in chunks:
            if stop.is_set():
                break
            if prompt_tokens is None:
                # The first chunk comes right after the first token is sampled, before it is evaluated:
                # the context then holds exactly the prompt.
                prompt_tokens = int(llama.n_tokens)
            for choice in chunk.get("choices", ()):
                finish = choice.get("finish_reason") or finish
                content = (choice.get("delta") or {}).get("content")
                if content:
                    put(("piece", content))
        chunks.close()
    except Exception as exc:  # handed to the consumer, which raises it
        put(("error", exc))
        return
    # Every token but the last is evaluated before the next is sampled; an end-of-text token is not
    # counted, while a reply cut at max_tokens ends on a counted token that was never evaluated.
    completion_tokens = None
    if prompt_tokens is not None:
        completion_tokens = int(llama.n_tokens) - prompt_tokens + (1 if finish == "length" else 0)
    put(("done", (prompt_tokens, completion_tokens)))


class LlamaCppEmbedder(Embedder):
    """Mean-pooled, L2-normalised embeddings from a GGUF (a second instance opened for embeddings)."""

    name = "llamacpp"

    def __init__(self, llama: Any, *, model_name: str) -> None:
        self.engine = _Engine(llama)
        self.model = model_name
        self.dim = int(llama.n_embd())

    @classmethod
    def from_settings(cls, settings: Settings) -> LlamaCppEmbedder:
        path = settings.llamacpp_embedding_model_path or settings.llamacpp_model_path or ""
        llama = load_llama(
            path,
            embedding=True,
            pooling_type=llama_cpp_module().LLAMA_POOLING_TYPE_MEAN,
            n_gpu_layers=settings.llamacpp_n_gpu_layers,
            n_ctx=settings.llamacpp_n_ctx,
            n_batch=settings.llamacpp_n_ctx,
            n_ubatch=settings.llamacpp_n_ctx,
            n_threads=settings.llamacpp_threads,
            n_threads_batch=settings.llamacpp_threads,
        )
        return cls(llama, model_name=Path(path).name)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        # llama.cpp cannot embed zero tokens; blank texts keep zero rows, as the Embedder contract says.
        rows = [i for i, text in enumerate(texts) if text.strip()]
        if not rows:
            return matrix
        items = [texts[i] for i in rows]
        try:
            vectors = await self.engine.run(lambda llama: llama.embed(items, truncate=True), PRIORITY_TURN)
        except (ValueError, RuntimeError) as exc:
            raise LLMUnavailable(f"llama.cpp embedding failed: {exc}") from exc
        matrix[rows] = np.asarray(vectors, dtype=np.float32).reshape(len(items), self.dim)
        return normalise_rows(matrix)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.engine.close)
