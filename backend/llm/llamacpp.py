"""Embedded llama.cpp provider (`LLM_PROVIDER=llamacpp`, extra `machi[llamacpp]`): a GGUF model in-process.

The model is loaded once. JSON replies are decoded under a GBNF grammar built from the reply's JSON Schema
(`backend.llm.grammar`), so the model can only write tokens that keep the reply valid. A `Llama` instance
is not thread-safe and every call blocks, so calls run one at a time in a worker thread, most urgent
first (a live turn before a background rating), and the event loop never waits on the model.

Every generation streams inside the worker and checks a stop flag per token, and the prompt is evaluated
EVAL_CHUNK tokens at a time with the same check in between: a call whose caller gave up (a timeout, a
preempting turn, a consumer that stopped reading, shutdown) frees the model within a token or a chunk of
prompt. That is why the provider is `preemptible`.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import functools
import heapq
import itertools
import json
import logging
import os
import random
import re
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from backend.config import Settings
from backend.errors import ConfigError, LLMUnavailable, MissingDependency
from backend.llm import packaged
from backend.llm.ban import logit_bias
from backend.llm.base import (
    LLM,
    PRIORITY_PLAN,
    PRIORITY_TURN,
    Completion,
    Embedder,
    EmbedKind,
    GenerateOptions,
    Message,
    completion_cap,
    normalise_rows,
)
from backend.llm.grammar import json_schema_to_gbnf
from backend.llm.kvcache import PrefixCache

R = TypeVar("R")

#: What to install when llama-cpp-python is missing (the `llamacpp` extra, built from source).
INSTALL_HINT = "pip install 'machi[llamacpp]' (add CMAKE_ARGS=\"-DGGML_CUDA=on\" for an NVIDIA GPU)"


def llama_cpp_module() -> Any:
    """llama-cpp-python, imported on first use so that importing this module never needs the extra.

    OpenMP's threads wait passively unless OMP_WAIT_POLICY says otherwise: spinning threads on a machine
    whose cores are shared (the server, Unity, other processes) made tokens up to 10x slower
    (bench/grammar.py). OpenMP reads the variable when llama.cpp's library loads, so it is set first.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    try:
        import llama_cpp
    except ImportError as exc:
        raise MissingDependency(f"LLM_PROVIDER=llamacpp needs llama-cpp-python: {INSTALL_HINT}") from exc
    return llama_cpp


log = logging.getLogger(__name__)

#: Distinct reply grammars kept converted (a turn, a plan per world, a rating batch per size...).
GRAMMARS_KEPT = 64
#: Prompt tokens evaluated between two looks at the stop flag. Without the chunks a stop would wait for the
#: whole prompt (a 1,000-token prompt takes seconds on a CPU); on a CPU smaller batches cost nothing.
EVAL_CHUNK = 64


class Stopped(RuntimeError):
    """A generation ended by its stop flag before it finished, or a call made while the model closes."""


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

    def waiting(self, than: int) -> bool:
        """Whether a call more urgent than priority `than` waits for the model (read from the worker thread:
        a prefill gives way to it)."""
        waiters = self._waiters
        return bool(waiters) and waiters[0][0] < than

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
        self.stops: set[threading.Event] = set()  # the stop flags of the calls at or past the gate
        self.closing = False
        self.stopping: threading.Event | None = None  # the running call's flag (worker thread only)
        #: Stable prompt prefixes' KV states (kvcache.py), and the running call's stable text (worker only).
        self.prefixes: PrefixCache | None = None
        self.stable: str | None = None
        self.prefilling = False  # the running call only reads its prompt up to `stable` (worker only)
        if callable(getattr(llama, "eval", None)):
            llama.eval = self._chunked(llama.eval)  # Llama.generate evaluates prompt and tokens through it
        if callable(getattr(llama, "generate", None)):
            llama.generate = self._prefixed(llama.generate)

    def _prefixed(self, generate: Callable[..., Any]) -> Callable[..., Any]:
        # Llama.generate gets the whole prompt's tokens: the cache restores (or evaluates and keeps) the
        # stable prefix first, and generate then reads only what follows it.
        def prefixed(tokens: Sequence[int], *args: Any, **kwargs: Any) -> Any:
            if self.prefixes is not None and self.stable:
                self.prefixes.prepare(self.llama, tokens, self.stable)
            if self.prefilling:
                raise Prefilled
            return generate(tokens, *args, **kwargs)

        return prefixed

    def _chunked(self, evaluate: Callable[[Sequence[int]], None]) -> Callable[[Sequence[int]], None]:
        def chunked(tokens: Sequence[int]) -> None:
            for start in range(0, len(tokens), EVAL_CHUNK):
                if self.stopping is not None and self.stopping.is_set():
                    raise Stopped("stopped while reading the prompt")
                if self.prefilling and self.gate.waiting(than=PRIORITY_PLAN):
                    raise Stopped("a prefill gives way to a waiting turn")  # what it read stays in context
                evaluate(tokens[start : start + EVAL_CHUNK])

        return chunked

    async def run(self, fn: Callable[[Any], R], priority: int, stop: threading.Event | None = None) -> R:
        """Run `fn(llama)` in the worker thread, most urgent first; the gate is released when the thread is
        done. With a `stop` flag (which `fn` checks per token), a cancelled caller sets it and waits for the
        thread to return, so that when this returns or raises the model is free for the next call."""
        await self.gate.acquire(priority)
        loop = asyncio.get_running_loop()
        try:
            if self.closing:
                raise Stopped("the model is shutting down")
            future = self.pool.submit(self._locked, fn, stop)
        except BaseException:
            self.gate.release()
            raise
        future.add_done_callback(lambda _: loop.call_soon_threadsafe(self.gate.release))
        done = asyncio.wrap_future(future)
        if stop is None:
            return await done
        self.stops.add(stop)
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            stop.set()
            with contextlib.suppress(Exception):
                await done  # within a token
            raise
        finally:
            self.stops.discard(stop)

    def _locked(self, fn: Callable[[Any], R], stop: threading.Event | None) -> R:
        with self.lock:
            self.stopping = stop
            try:
                return fn(self.llama)
            finally:
                self.stopping = self.stable = None
                self.prefilling = False

    def stop_all(self) -> None:
        """Refuse new calls and stop every running one at its next token (call in the event loop)."""
        self.closing = True
        for stop in self.stops:
            stop.set()

    def close(self) -> None:
        """Wait for the worker thread (after `stop_all`: within a token), then release the model."""
        self.pool.shutdown(wait=True, cancel_futures=True)
        closer = getattr(self.llama, "close", None)
        if closer is not None:
            closer()


_SIZE_LABEL = re.compile(r"^(\d+(?:\.\d+)?)([KMBT])$", re.IGNORECASE)
_SIZE_UNITS = {"K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


def size_from_label(label: str) -> int | None:
    """A GGUF `general.size_label` ("135M", "1.7B") as a parameter count; None for another shape ("8x7B")."""
    found = _SIZE_LABEL.match(label.strip())
    return int(float(found[1]) * _SIZE_UNITS[found[2].upper()]) if found else None


def load_llama(model_path: str, **params: Any) -> Any:
    """Load a GGUF with llama-cpp-python; a file it cannot load becomes a ConfigError naming the file."""
    path = packaged.resolve(model_path)  # a file, or `package:NAME` (a model shipped in a PyPI package)
    if not path.is_file():
        raise ConfigError(f"LLAMACPP_MODEL_PATH {model_path!r} is not a file")
    try:
        return llama_cpp_module().Llama(model_path=str(path), verbose=False, **params)
    except (ValueError, RuntimeError) as exc:
        raise ConfigError(f"llama.cpp could not load {model_path!r}: {exc}") from exc


def chat_formats() -> list[str]:
    """The chat format names llama-cpp-python knows (what LLAMACPP_CHAT_FORMAT may name)."""
    registry = llama_cpp_module().llama_chat_format.LlamaChatCompletionHandlerRegistry()
    return sorted(registry._chat_handlers)  # noqa: SLF001 - the registry has no public listing


def chosen_chat_format(settings: Settings) -> tuple[str | None, str]:
    """The chat format to pass to llama.cpp (None: the GGUF's template) and how /health describes it.

    Raises:
        ConfigError: LLAMACPP_CHAT_FORMAT names a format llama-cpp-python does not know.
    """
    configured = settings.llamacpp_chat_format
    if configured:
        known = chat_formats()
        if configured not in known:
            raise ConfigError(
                f"LLAMACPP_CHAT_FORMAT {configured!r} is not a llama-cpp-python chat format; "
                f"choose one of {', '.join(known)}"
            )
        return configured, f"chat format {configured} (LLAMACPP_CHAT_FORMAT)"
    packaged_format = packaged.chat_format_for(settings.llamacpp_model_path)
    if packaged_format:
        return packaged_format, f"chat format {packaged_format} ({settings.llamacpp_model_path})"
    return None, "chat template from the GGUF"


class LlamaCppLLM(LLM):
    """A GGUF model run in-process by llama.cpp, replies constrained by a grammar from the JSON Schema.

    The chat template is the one stored in the GGUF (llama-cpp-python picks it up when `chat_format` is
    None) unless LLAMACPP_CHAT_FORMAT names one; a GGUF without a template is refused without it (llama-cpp-
    python would silently fall back to llama-2's, which a model then imitates). MODEL_<ROLE> settings do
    not apply: there is one model in the process.
    """

    name = "llamacpp"
    preemptible = True
    can_prefill = True

    def __init__(
        self,
        llama: Any,
        *,
        model_name: str,
        temperature: float = 0.7,
        seed: int | None = None,
        chat: str = "chat template from the GGUF",
        prefix_cache_bytes: int = 0,
    ) -> None:
        self.engine = _Engine(llama)
        if prefix_cache_bytes > 0:
            self.engine.prefixes = PrefixCache(llama_cpp_module(), prefix_cache_bytes)
        self.model = model_name
        self.temperature = temperature
        self.seed = seed
        self.chat = chat  # which template formats the prompts, for /health
        self._grammars: collections.OrderedDict[str, str] = collections.OrderedDict()

    @classmethod
    def from_settings(cls, settings: Settings) -> LlamaCppLLM:
        """Load the model of LLAMACPP_MODEL_PATH.

        Raises:
            ConfigError: the file cannot be loaded, LLAMACPP_CHAT_FORMAT is unknown, or the GGUF has no chat
                template and LLAMACPP_CHAT_FORMAT is unset.
        """
        path = settings.llamacpp_model_path or ""
        chat_format, chat = chosen_chat_format(settings)
        llama = load_llama(
            path,
            chat_format=chat_format,
            n_gpu_layers=settings.llamacpp_n_gpu_layers,
            n_ctx=settings.llamacpp_n_ctx,
            n_threads=settings.llamacpp_threads,
            n_threads_batch=settings.llamacpp_batch_threads or settings.llamacpp_threads,
        )
        if chat_format is None and not llama.metadata.get("tokenizer.chat_template"):
            llama.close()
            raise ConfigError(
                f"{Path(path).name} has no chat template (tokenizer.chat_template): set LLAMACPP_CHAT_FORMAT "
                f"to the one the model was trained with, e.g. gemma, chatml or llama-3"
            )
        return cls(
            llama,
            model_name=Path(path).name,
            temperature=settings.llm_temperature,
            seed=settings.llm_seed,
            chat=chat,
            prefix_cache_bytes=settings.llamacpp_prefix_cache_mb * 2**20,
        )

    def resolve_model(self, options: GenerateOptions) -> str:
        return self.model

    def parameter_count(self) -> int | None:
        """The model's parameters: llama.cpp's count, else the GGUF's `general.size_label` ("135M")."""
        try:
            count = int(self.engine.llama._model.n_params())
        except (AttributeError, TypeError, ValueError):
            count = 0
        if count > 0:
            return count
        return size_from_label(str(self.engine.llama.metadata.get("general.size_label") or ""))

    def context_window(self) -> int | None:
        return int(self.engine.llama.n_ctx())

    def count_tokens(self, text: str) -> int:
        """The model's own tokenizer (reads the vocabulary only: safe beside a running generation)."""
        return len(self.engine.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    async def check(self) -> str:
        """One line for /health: the model is loaded in this process (nothing to reach), and its template."""
        context = self.engine.llama.n_ctx()
        return f"{self.name}: {self.model} loaded in-process, context {context} tokens, {self.chat}"

    def grammar_for(self, schema: dict[str, Any]) -> str:
        """The GBNF for a schema, converted once per distinct schema; the newest GRAMMARS_KEPT are kept
        (per-call schemas, such as a world's places in a plan, would otherwise grow the cache forever)."""
        key = json.dumps(schema, sort_keys=True)
        if key in self._grammars:
            self._grammars.move_to_end(key)
            return self._grammars[key]
        grammar = self._grammars[key] = json_schema_to_gbnf(schema)
        while len(self._grammars) > GRAMMARS_KEPT:
            self._grammars.popitem(last=False)
        return grammar

    def request(
        self, messages: Sequence[Message], options: GenerateOptions, schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Keyword arguments of `Llama.create_chat_completion` for one call."""
        request: dict[str, Any] = {
            "messages": [dict(m) for m in messages],
            "temperature": self.temperature if options.temperature is None else options.temperature,
            "max_tokens": completion_cap(options),
            "seed": self.seed_for(options),
        }
        # A re-ask: the refused text's first word is not written again (llm/ban.py).
        if options.banned_openings and (bias := logit_bias(self.engine.llama, options.banned_openings)):
            request["logit_bias"] = bias
        if schema is not None:
            request["grammar"] = llama_cpp_module().LlamaGrammar.from_string(
                self.grammar_for(schema), verbose=False
            )
        return request

    def seed_for(self, options: GenerateOptions) -> int:
        """The call's seed, else LLM_SEED, else a fresh one (llama.cpp keeps the last seed it was given)."""
        if options.seed is not None:
            return options.seed
        return self.seed if self.seed is not None else random.getrandbits(31)

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
    ) -> Completion:
        """One reply, generated piece by piece in the worker so that a cancelled call stops at once."""
        request = self.request(messages, options, schema)
        pieces: list[str] = []
        stop = threading.Event()
        try:
            prompt_tokens, completion_tokens, finish = await self.engine.run(
                lambda llama: self._generate(llama, request, pieces.append, stop, keep=live(options)),
                options.priority,
                stop,
            )
        except (ValueError, RuntimeError) as exc:
            raise _failure(exc) from exc
        return Completion(
            text="".join(pieces),
            model=self.model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            meta={"finish_reason": finish},
        )

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
        usage: Completion | None = None,
    ) -> AsyncIterator[str]:
        """Pieces as llama.cpp produces them: the worker thread hands them to a queue.

        llama-cpp-python streams no usage; the token counts in `usage` are read from the context as the
        stream goes (see `_generate`), and are those a non-streamed call reports.
        """
        request = self.request(messages, options, schema)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()

        def put(item: tuple[str, Any]) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def work(llama: Any) -> None:
            try:
                piece = functools.partial(put_piece, put)
                put(("done", self._generate(llama, request, piece, stop, keep=live(options))))
            except Exception as exc:  # handed to the consumer, which raises it
                put(("error", exc))

        def ended(job: asyncio.Future[None]) -> None:
            if not job.cancelled() and job.exception() is not None:  # it never reached the worker
                queue.put_nowait(("error", job.exception()))

        job = asyncio.ensure_future(self.engine.run(work, options.priority, stop))
        job.add_done_callback(ended)
        try:
            while True:
                kind, value = await queue.get()
                if kind == "piece":
                    yield value
                elif kind == "error":
                    raise _failure(value) from value
                else:
                    if usage is not None:
                        usage.model = self.model
                        usage.prompt_tokens, usage.completion_tokens, _ = value
                    return
        finally:
            stop.set()  # a consumer that stops early frees the model at the next token
            with contextlib.suppress(Exception):
                await asyncio.shield(job)

    def _generate(
        self,
        llama: Any,
        request: dict[str, Any],
        put: Callable[[str], None],
        stop: threading.Event,
        *,
        keep: bool,
    ) -> tuple[int | None, int | None, str | None]:
        """Worker thread: `_generate`, with the call's system message as the stable prefix to cache; with
        `keep`, the answered call's whole context is cached too (a speaker's next turn shares most of it)."""
        first = request["messages"][0] if request["messages"] else {}
        self.engine.stable = first.get("content") if first.get("role") == "system" else None
        result = _generate(llama, request, put, stop)
        if keep and self.engine.prefixes is not None:
            self.engine.prefixes.keep(llama)
        return result

    async def prefill(self, messages: Sequence[Message], *, options: GenerateOptions, upto: str) -> bool:
        """Read the prompt up to the end of `upto` into the prefix cache (kvcache.py), at plan priority; it
        stops at its next chunk of prompt when a more urgent call waits (what it read stays in the context,
        which that call reuses when it shares it). Returns whether the state was kept."""
        if self.engine.prefixes is None:
            return False
        request = {**self.request(messages, options, None), "max_tokens": 1}

        def work(llama: Any) -> bool:
            self.engine.stable, self.engine.prefilling = upto, True
            try:
                llama.create_chat_completion(**request)
            except Prefilled:
                return True
            return False

        try:
            return await self.engine.run(work, PRIORITY_PLAN, threading.Event())
        except (Stopped, ValueError, RuntimeError) as exc:
            log.debug("prefill stopped: %s", exc)
            return False

    async def aclose(self) -> None:
        """Stop the running generation at its next token (shutdown must not wait for it), then close."""
        self.engine.stop_all()
        await asyncio.to_thread(self.engine.close)


class Prefilled(Exception):  # noqa: N818 - a signal, not an error
    """Raised in the worker once a prefill's prompt state is kept: nothing is generated."""


def put_piece(put: Callable[[tuple[str, Any]], None], piece: str) -> None:
    put(("piece", piece))


def live(options: GenerateOptions) -> bool:
    """Whether a call's context is worth keeping for the next: a live turn's (its speaker talks again)."""
    return options.priority <= PRIORITY_TURN


def _failure(exc: BaseException) -> LLMUnavailable:
    if isinstance(exc, Stopped):
        return LLMUnavailable(f"llama.cpp stopped the call: {exc}", retryable=False)
    if isinstance(exc, ValueError):  # e.g. the prompt does not fit the context: asking again won't help
        return LLMUnavailable(f"llama.cpp refused the call: {exc}", retryable=False)
    return LLMUnavailable(f"llama.cpp failed: {exc}")


def _generate(
    llama: Any, request: dict[str, Any], put: Callable[[str], None], stop: threading.Event
) -> tuple[int | None, int | None, str | None]:
    """Worker thread: stream a completion, handing each piece of text to `put`; returns (prompt_tokens,
    completion_tokens, finish_reason). Raises Stopped at the next token once `stop` is set."""
    if stop.is_set():  # the caller gave up while waiting for its turn
        raise Stopped("stopped before it started")
    chunks = llama.create_chat_completion(**request, stream=True)
    prompt_tokens: int | None = None
    finish = None
    try:
        for chunk in chunks:
            if stop.is_set():
                raise Stopped("the model is shutting down")  # (a caller that gave up never reads this)
            if prompt_tokens is None:
                # The first chunk comes right after the first token is sampled, before it is evaluated:
                # the context then holds exactly the prompt.
                prompt_tokens = int(llama.n_tokens)
            for choice in chunk.get("choices", ()):
                finish = choice.get("finish_reason") or finish
                content = (choice.get("delta") or {}).get("content")
                if content:
                    put(content)
    finally:
        chunks.close()
    # Every token but the last is evaluated before the next is sampled; an end-of-text token is not
    # counted, while a reply cut at max_tokens ends on a counted token that was never evaluated.
    completion_tokens = None
    if prompt_tokens is not None:
        completion_tokens = int(llama.n_tokens) - prompt_tokens + (1 if finish == "length" else 0)
    return prompt_tokens, completion_tokens, finish


class LlamaCppEmbedder(Embedder):
    """Mean-pooled, L2-normalised embeddings from a GGUF (a second instance opened for embeddings)."""

    name = "llamacpp"

    def __init__(self, llama: Any, *, model_name: str, prefixes: tuple[str, str] = ("", "")) -> None:
        self.engine = _Engine(llama)
        self.model = model_name
        self.dim = int(llama.n_embd())
        self.query_prefix, self.passage_prefix = prefixes

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
            n_threads_batch=settings.llamacpp_batch_threads or settings.llamacpp_threads,
        )
        from backend.llm.embedding import model_prefixes

        name = Path(path).name
        return cls(llama, model_name=name, prefixes=model_prefixes(settings, name))

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> np.ndarray:
        matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        texts = self.prefixed(texts, kind)
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
