"""The scripted engine: a deterministic, offline language model made of templates.

It is not a neural model. For each reply schema the system uses there is a *writer* (see `writers/`) that
composes a short, plausible reply from the facts the caller built its prompt from (persona, place, time,
memories, history), in Japanese or English. The same input and seed give the same output. Tests can also
`enqueue()` exact replies (strings, dicts, or exceptions to raise) and read `history`.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import math
import pkgutil
import random
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from backend.config import Settings
from backend.llm.base import LLM, Completion, GenerateOptions, Message, fill_usage

Writer = Callable[["WriterContext"], Any]
#: Calls `history` keeps, the newest (tests read the last few; a server that runs for days must not keep
#: every prompt it was sent: bench/visitor_rss.py saw the API process grow ~20 KB a visitor turn).
DEFAULT_KEPT_CALLS = 1000


@dataclass
class WriterContext:
    """What a writer gets: the call's facts, a seeded random source, and the raw request."""

    facts: dict[str, Any]
    rng: random.Random
    messages: Sequence[Message]
    options: GenerateOptions
    schema: dict[str, Any] | None
    #: The engine's SCRIPTED_SEED: what one writer decides for an agent, another decides the same way.
    seed: int = 0

    @property
    def language(self) -> str:
        lang = self.options.language or self.facts.get("language") or "ja"
        return "en" if str(lang).lower().startswith("en") else "ja"

    @property
    def ja(self) -> bool:
        return self.language == "ja"

    def pick(self, options: Sequence[Any]) -> Any:
        return options[self.rng.randrange(len(options))]


@dataclass
class ScriptedCall:
    """One call as the engine saw it (for tests)."""

    messages: list[Message]
    options: GenerateOptions
    schema: dict[str, Any] | None
    reply: str


@dataclass
class _Queued:
    value: Any
    purpose: str | None = None


def _discover_writers() -> dict[str, Writer]:
    """Every module in `writers/` contributes a WRITERS dict: schema title (or 'text:<purpose>') -> writer."""
    import backend.scripted.writers as package  # lazily: the writers import this module

    found: dict[str, Writer] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found.update(getattr(module, "WRITERS", {}))
    return found


class ScriptedLLM(LLM):
    name = "scripted"

    def __init__(
        self,
        *,
        seed: int = 0,
        chunk_chars: int = 6,
        delay_s: float = 0.0,
        kept_calls: int = DEFAULT_KEPT_CALLS,
    ) -> None:
        self.seed = seed
        self.chunk_chars = chunk_chars
        self.delay_s = delay_s
        self.writers = _discover_writers()
        #: The newest `kept_calls` calls, oldest first.
        self.history: deque[ScriptedCall] = deque(maxlen=kept_calls)
        self._queue: deque[_Queued] = deque()

    @classmethod
    def from_settings(cls, settings: Settings) -> ScriptedLLM:
        return cls(seed=settings.scripted_seed)

    # --- test controls ---
    def enqueue(self, *replies: Any, purpose: str | None = None) -> None:
        """Queue exact replies, used before any writer. A str/dict is the reply; an exception is raised.

        With `purpose`, a reply is only used by a call of that purpose (others keep using writers).
        """
        for reply in replies:
            self._queue.append(_Queued(reply, purpose))

    def calls(self, purpose: str | None = None) -> list[ScriptedCall]:
        return [c for c in self.history if purpose is None or c.options.purpose == purpose]

    # --- the interface ---
    def resolve_model(self, options: GenerateOptions) -> str:
        return options.model or "scripted"

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
    ) -> Completion:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        text = self._reply(messages, options, schema)
        self.history.append(ScriptedCall(list(messages), options, schema, text))
        prompt_chars = sum(len(m.get("content", "")) for m in messages)
        return Completion(
            text=text,
            model=options.model or "scripted",
            prompt_tokens=max(1, prompt_chars // 3),
            completion_tokens=max(1, len(text) // 3),
        )

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
        usage: Completion | None = None,
    ) -> AsyncIterator[str]:
        completion = await self.complete(messages, options=options, schema=schema)
        fill_usage(usage, completion)
        text = completion.text
        for start in range(0, len(text), self.chunk_chars):
            await asyncio.sleep(0)
            yield text[start : start + self.chunk_chars]

    def _reply(
        self, messages: Sequence[Message], options: GenerateOptions, schema: dict[str, Any] | None
    ) -> str:
        queued = self._take_queued(options.purpose)
        if queued is not None:
            if isinstance(queued, BaseException):
                raise queued
            return queued if isinstance(queued, str) else json.dumps(queued, ensure_ascii=False)
        rng = self._rng(messages, options, schema)
        ctx = WriterContext(options.facts, rng, messages, options, schema, self.seed)
        if schema is None:
            writer = self.writers.get(f"text:{options.purpose}") or self.writers.get("text")
            return str(writer(ctx)) if writer else _default_text(ctx)
        writer = self.writers.get(str(schema.get("title", "")))
        value = writer(ctx) if writer else fill_schema(schema, ctx)
        return json.dumps(value, ensure_ascii=False)

    def _take_queued(self, purpose: str) -> Any:
        for index, item in enumerate(self._queue):
            if item.purpose is None or item.purpose == purpose:
                del self._queue[index]
                return item.value
        return None

    def _rng(
        self, messages: Sequence[Message], options: GenerateOptions, schema: dict[str, Any] | None
    ) -> random.Random:
        digest = hashlib.sha256()
        digest.update(str(self.seed if options.seed is None else options.seed).encode())
        digest.update(options.purpose.encode())
        digest.update(str((schema or {}).get("title", "")).encode())
        for message in messages:
            digest.update(message.get("content", "").encode("utf-8"))
        return random.Random(int.from_bytes(digest.digest()[:8], "big"))


def _default_text(ctx: WriterContext) -> str:
    return "はい、わかりました。" if ctx.ja else "Understood."


# --- a schema-valid value for any JSON Schema (used when no writer knows the schema) ---
def fill_schema(schema: dict[str, Any], ctx: WriterContext, name: str = "") -> Any:
    """A value that validates against `schema`, chosen with the context's seeded random source."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return ctx.pick(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return fill_schema(options[0], ctx, name)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {key: fill_schema(sub, ctx, key) for key, sub in props.items()}
    if kind == "array":
        low = int(schema.get("minItems", 1))
        high = int(schema.get("maxItems", max(low, 3)))
        count = ctx.rng.randint(low, max(low, min(high, low + 2)))
        return [fill_schema(schema.get("items", {"type": "string"}), ctx, name) for _ in range(count)]
    if kind == "integer":
        lowest, highest = _bounds(schema, 1, 10, step=1)
        return ctx.rng.randint(math.ceil(lowest), math.floor(highest))
    if kind == "number":
        lowest, highest = _bounds(schema, 0.0, 1.0, step=0.01)
        # Two decimals read naturally; clamping keeps the rounding inside the bounds.
        return min(max(round(ctx.rng.uniform(lowest, highest), 2), lowest), highest)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _fill_string(schema, ctx, name)


def _bounds(schema: dict[str, Any], low: float, high: float, *, step: float) -> tuple[float, float]:
    """Inclusive bounds; an exclusive bound moves inward by `step` (1 for integers, 0.01 for numbers)."""
    lo = float(schema.get("minimum", low))
    if "exclusiveMinimum" in schema:
        lo = float(schema["exclusiveMinimum"]) + step
    hi = float(schema.get("maximum", max(high, lo + (high - low))))
    if "exclusiveMaximum" in schema:
        hi = float(schema["exclusiveMaximum"]) - step
    if "minimum" not in schema and "exclusiveMinimum" not in schema and hi < lo:
        lo = hi - (high - low)  # only an upper bound below the default range
    return lo, max(lo, hi)


def _fill_string(schema: dict[str, Any], ctx: WriterContext, name: str) -> str:
    words_ja = ["そうだね", "いい考え", "少し気になる", "楽しみ", "大切なこと"]
    words_en = ["sounds good", "a fair point", "worth a try", "something to watch", "an important idea"]
    text = ctx.pick(words_ja if ctx.ja else words_en)
    low = int(schema.get("minLength", 1))
    high = int(schema.get("maxLength", 10_000))
    while len(text) < low:
        text += text
    return text[:high]
