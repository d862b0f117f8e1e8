"""The language-model boundary: one small async interface, adapters and wrappers implement it."""

from __future__ import annotations

import abc
import functools
import json
import math
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from backend.errors import LLMReplyError

Role = Literal["system", "user", "assistant"]
Message = dict[str, str]  # {"role": Role, "content": str}
T = TypeVar("T", bound=BaseModel)

#: Priorities, lower is more urgent (a live turn beats everything else).
PRIORITY_TURN = 0
PRIORITY_COUNCIL = 1
PRIORITY_PLAN = 2
PRIORITY_BACKGROUND = 3

#: Which model role serves each purpose of a call (see Settings.model_for).
PURPOSE_ROLES = {
    "dialogue": "dialogue",
    "turn": "dialogue",
    "fallback": "dialogue",
    "interview": "dialogue",
    "emotion": "emotion",
    "importance": "importance",
    "reflection": "reflection",
    "insight": "reflection",
    "questions": "reflection",
    "person": "reflection",
    "plan": "plan",
    "intention": "plan",
    "council": "council",
    "opinion": "council",
    "aggregate": "council",
    "response": "council",
    "consensus": "council",
    "judge": "judge",
}

#: Completion tokens a call may generate when `options.max_tokens` is None. A structured reply's cap comes from
#: its schema (`reply_tokens`: the longest reply it allows); these serve free text and schemas that bound
#: nothing, per purpose (a council call's purpose is its stage). The cap bounds the work of one call (a runaway
#: or stale call frees the model); it is not a length control.
COMPLETION_CAPS: dict[str, int] = {
    "dialogue": 640,
    "turn": 640,
    "fallback": 640,
    "emotion": 160,
}
DEFAULT_COMPLETION_CAP = 1024
#: Tokens a character of a reply may cost: Japanese on a byte-level vocabulary such as SmolLM2's costs about
#: 2 (Gemma's vocabulary about 0.5, English text about 0.25), and JSON's keys and punctuation count the same.
TOKENS_PER_CHAR = 2
#: Characters of a number the grammar (backend/llm/grammar.py) does not bound: a sign, 16 digits, a
#: point and 15 decimals; a bounded one takes its bound's digits and, for a `number`, 6 decimals.
NUMBER_CHARS = 33


def _number_chars(schema: dict[str, Any], integer: bool) -> int:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is None or high is None:
        return 17 if integer else NUMBER_CHARS
    digits = max(len(str(int(low))), len(str(int(high))))
    return digits if integer else digits + 7


def reply_chars(schema: Any) -> int | None:
    """Characters of the longest JSON reply `schema` allows, every string at its maxLength and every list at
    its maxItems (one space after each token, as the grammar allows); None when something is unbounded."""
    if not isinstance(schema, dict):
        return None
    for branch in ("anyOf", "oneOf"):
        if branch in schema:
            options = [reply_chars(option) for option in schema[branch]]
            return None if None in options else max(o for o in options if o is not None)
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return max(len(json.dumps(value, ensure_ascii=False)) for value in values) + 1
    kind = schema.get("type")
    if kind == "object":
        fields = [(key, reply_chars(sub)) for key, sub in schema.get("properties", {}).items()]
        if any(size is None for _, size in fields):
            return None
        return 3 + sum(len(json.dumps(key, ensure_ascii=False)) + 3 + (size or 0) for key, size in fields)
    if kind == "array":
        # An item at a `prefixItems` position follows that schema; the rest follow `items`.
        sizes = [reply_chars(sub) for sub in [schema.get("items", {}), *schema.get("prefixItems", [])]]
        most = schema.get("maxItems")
        if most is None or None in sizes:
            return None
        return 3 + most * (max(size or 0 for size in sizes) + 2)
    if kind == "string":
        return None if schema.get("maxLength") is None else 3 + schema["maxLength"]
    if kind in ("integer", "number"):
        return _number_chars(schema, kind == "integer") + 1
    if kind in ("boolean", "null"):
        return 6
    return None


def reply_tokens(schema: dict[str, Any]) -> int | None:
    """Completion tokens the longest reply `schema` allows may take (TOKENS_PER_CHAR a character), or None
    when the schema bounds nothing."""
    chars = reply_chars(schema)
    return None if chars is None else TOKENS_PER_CHAR * chars


class GenerateOptions(BaseModel):
    """Per-call options. Unknown keys are an error, so a typo never becomes a silent default."""

    model_config = ConfigDict(extra="forbid")

    purpose: str = "generic"
    model: str | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(None, ge=1, le=32_768)
    seed: int | None = None
    timeout_s: float | None = Field(None, gt=0)
    priority: int = PRIORITY_BACKGROUND
    world_id: str = "default"
    agent_id: str | None = None
    session_id: str | None = None
    #: What the caller tells the trace about the call beyond its purpose: the step of a multi-step caller
    #: (`stage`, `round`) and the run it belongs to (`council_id`). The LLM layer never reads them; the
    #: tracer stores those its table has columns for (`models.LABEL_COLUMNS`).
    labels: dict[str, str | int] = Field(default_factory=dict)
    language: str | None = None
    #: The prompt's size in the model's tokens once fitted to its budget (set by llm/budget.py; traced).
    prompt_tokens_counted: int | None = Field(None, ge=0)
    #: The structured facts the caller built the prompt from (speaker, place, memories...). Real models
    #: read the prompt; the scripted engine reads these, and the tracer keeps them for the dashboard.
    facts: dict[str, Any] = Field(default_factory=dict)
    #: Texts the reply must not begin with again: a re-ask's refused text and the line it copied
    #: (llm/reask.py). llama.cpp in process bans the first token of each through a logit bias; providers
    #: without one (Ollama; an OpenAI-compatible server, whose token ids the client does not know) ignore it.
    banned_openings: list[str] = Field(default_factory=list, max_length=8)

    @property
    def role(self) -> str:
        return PURPOSE_ROLES.get(self.purpose, "dialogue")


def completion_cap(options: GenerateOptions, schema: dict[str, Any] | None = None) -> int:
    """The completion-token limit of a call: `options.max_tokens`; else, for a structured reply, what the
    longest reply its `schema` allows may take (`reply_tokens`), so a valid reply is never cut off; else its
    purpose's COMPLETION_CAPS entry (free text, or a schema that bounds nothing)."""
    if options.max_tokens is not None:
        return options.max_tokens
    derived = reply_tokens(schema) if schema is not None else None
    if derived is not None:
        return derived
    return COMPLETION_CAPS.get(options.purpose, DEFAULT_COMPLETION_CAP)


@dataclass
class Completion:
    """What one provider call gave back."""

    text: str
    model: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    trace_id: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def models_by_role(settings: Any, default: str) -> dict[str, str]:
    """Role -> model for an adapter: MODEL_<ROLE> where set, else the adapter's own model `default`."""
    from backend.config import ROLES

    return {role: getattr(settings, f"model_{role}", None) or default for role in ROLES}


def fill_usage(usage: Completion | None, source: Completion) -> None:
    """Copy the model name and token counts of a finished call into a stream's `usage` sink."""
    if usage is None:
        return
    usage.model = source.model or usage.model
    usage.prompt_tokens = source.prompt_tokens
    usage.completion_tokens = source.completion_tokens
    usage.meta.update(source.meta)


#: Schema keys only Machi reads (the echo check's `echo_check`): left out of what providers get.
PRIVATE_SCHEMA_KEYS = frozenset({"echo_check"})


@functools.lru_cache(maxsize=256)
def annotated_schema_for(schema: type[BaseModel]) -> dict[str, Any]:
    """The reply model's JSON Schema, inlined and strict-mode shaped, with Machi's own keys (`echo_check`):
    what llm/echo.py reads. Cached per class; callers must not mutate it."""
    raw = schema.model_json_schema()
    return _strictify(_inline_refs(raw, raw.get("$defs", {})))


@functools.lru_cache(maxsize=256)
def json_schema_for(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema sent to providers for a reply model (inlined, strict-mode friendly, no keys of
    Machi's own: OpenAI's strict mode refuses keywords it does not know).

    Cached per model class (building it costs ~1 ms); callers must not mutate the returned dict.
    """
    return _without_private(annotated_schema_for(schema))


def _without_private(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_private(v) for k, v in node.items() if k not in PRIVATE_SCHEMA_KEYS}
    if isinstance(node, list):
        return [_without_private(item) for item in node]
    return node


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            return _inline_refs(defs[name], defs)
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(item, defs) for item in node]
    return node


def _strictify(node: Any) -> Any:
    # OpenAI's strict mode wants every object closed and every property required.
    if isinstance(node, dict):
        node = {k: _strictify(v) for k, v in node.items()}
        if node.get("type") == "object" and "properties" in node:
            node["additionalProperties"] = False
            node["required"] = list(node["properties"])
        return node
    if isinstance(node, list):
        return [_strictify(item) for item in node]
    return node


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def extract_json_text(text: str) -> str:
    """Repair the usual damage: code fences, prose around the object. Returns the first JSON object."""
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1)
    start = text.find("{")
    if start < 0:
        raise LLMReplyError("the reply holds no JSON object", raw=text)
    decoder = json.JSONDecoder()
    try:
        _, end = decoder.raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise LLMReplyError(f"the reply is not valid JSON: {exc.msg}", raw=text) from exc
    return text[start : start + end]


def parse_reply(text: str, schema: type[T]) -> T:
    """Repair then validate a model's reply against `schema`; raises LLMReplyError with the reason.

    This is the one place model replies are parsed, so any failure to parse one (JSON nested past the
    interpreter's recursion limit, a number too long to convert, whatever a parser may raise) is a failed
    reply: re-asked, then the caller's fallback; never an error that escapes as a 500 or an error event.
    """
    try:
        candidate = extract_json_text(text)
        return schema.model_validate_json(candidate)
    except LLMReplyError:
        raise
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()
        )
        raise LLMReplyError(f"the reply does not match the schema: {problems}", raw=text) from exc
    except RecursionError as exc:
        raise LLMReplyError("the reply could not be parsed: it nests too deeply", raw=text) from exc
    except Exception as exc:  # noqa: BLE001 - any parse failure is the model's, not the server's
        detail = str(exc)[:200] or type(exc).__name__
        raise LLMReplyError(f"the reply could not be parsed: {detail}", raw=text) from exc


def estimate_tokens(text: str) -> int:
    """A generous token count for providers whose tokenizer is not at hand: about four ASCII characters
    per token and one token per other character (Japanese is one to three characters per token)."""
    ascii_chars = len(text.encode("ascii", "ignore"))  # C speed: this runs on every prompt
    return math.ceil(ascii_chars / 3.5) + (len(text) - ascii_chars)


class LLM(abc.ABC):
    """A language model. Implement `complete` (and `stream` if the provider streams)."""

    name: str = "llm"
    #: Optional capability: True when the provider works on one call at a time and cancelling a `complete`
    #: stops its work at once (llama.cpp in process: a stop flag checked per token; Ollama: the HTTP request
    #: is closed). The scheduler may then cancel a running background call for a live turn and run it again
    #: later (scheduler.py). False (the default) for batched servers, where a turn only waits in the queue.
    preemptible: bool = False

    @abc.abstractmethod
    async def complete(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
    ) -> Completion:
        """Run one model call.

        Args:
            messages: chat messages, oldest first.
            options: per-call options (purpose, ids for tracing, sampling).
            schema: a JSON Schema the reply must follow (provider-native structured output), or None.

        Returns:
            The reply text with token counts when the provider reports them.

        Raises:
            LLMUnavailable: the provider is unreachable or failed.
            LLMTimeout: the call took longer than allowed.
        """

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
        usage: Completion | None = None,
    ) -> AsyncIterator[str]:
        """Yield the reply text in pieces as it is generated. Default: one piece from `complete`.

        Args:
            messages, options, schema: as `complete`.
            usage: when given, filled once the stream ends with the model name and the token counts the
                provider reported (the tracer passes one; callers usually don't).

        Raises:
            The same errors as `complete`, possibly after some pieces were yielded.
        """
        completion = await self.complete(messages, options=options, schema=schema)
        fill_usage(usage, completion)
        yield completion.text

    async def generate(self, messages: Sequence[Message], *, options: GenerateOptions) -> str:
        """Free text. Raises the same errors as `complete`."""
        return (await self.complete(messages, options=options)).text

    async def generate_json(
        self,
        messages: Sequence[Message],
        schema: type[T],
        *,
        options: GenerateOptions,
        check: Callable[[T], None] | None = None,
    ) -> T:
        """A reply validated against a pydantic model.

        Args:
            messages, options: as `complete`.
            schema: the reply's model; its JSON Schema constrains the provider.
            check: what the schema cannot say (a plan that fits the day): raises LLMReplyError with the
                reason, which the repairing wrapper traces as a failed reply and re-asks with.

        Raises:
            LLMReplyError: the reply could not be repaired into a valid instance, or `check` refused it.
            LLMUnavailable, LLMTimeout: as `complete`.
        """
        completion = await self.complete(messages, options=options, schema=json_schema_for(schema))
        reply = parse_reply(completion.text, schema)
        if check is not None:
            check(reply)
        return reply

    def resolve_model(self, options: GenerateOptions) -> str:
        """The model name a call with these options goes to (the tracer records it, even for failures)."""
        return options.model or ""

    #: Whether `prefill` does anything (a provider that keeps prompt states it can be handed ahead of time).
    can_prefill: bool = False

    async def prefill(self, messages: Sequence[Message], *, options: GenerateOptions, upto: str) -> bool:
        """Read a prompt that is likely to come, up to the end of the text `upto`, and keep its state, so the
        call that then comes reads only the rest (the next speaker's turn, read while Unity shows a line).
        Generates nothing, is not traced, gives way to any call that waits, and never raises for a model
        failure. Returns whether a state was kept. Default: nothing to do."""
        return False

    def context_window(self) -> int | None:
        """The model's context window in tokens, when the provider knows it (llama.cpp's n_ctx)."""
        return None

    def count_tokens(self, text: str) -> int:
        """`text`'s length in the model's tokens: its own tokenizer where the provider has one at hand,
        otherwise a generous estimate (`estimate_tokens`)."""
        return estimate_tokens(text)

    async def aclose(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release clients and connections."""


class LLMWrapper(LLM):
    """Base for wrappers (retry, timeout, trace...): delegates everything to `inner`."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.name = inner.name
        self.preemptible = inner.preemptible

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
    ) -> Completion:
        return await self.inner.complete(messages, options=options, schema=schema)

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
        usage: Completion | None = None,
    ) -> AsyncIterator[str]:
        async for piece in self.inner.stream(messages, options=options, schema=schema, usage=usage):
            yield piece

    def resolve_model(self, options: GenerateOptions) -> str:
        return self.inner.resolve_model(options)

    @property
    def can_prefill(self) -> bool:  # type: ignore[override]
        return self.inner.can_prefill

    async def prefill(self, messages: Sequence[Message], *, options: GenerateOptions, upto: str) -> bool:
        return await self.inner.prefill(messages, options=options, upto=upto)

    def context_window(self) -> int | None:
        return self.inner.context_window()

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def unwrap(self) -> LLM:
        """The innermost provider (tests use it to reach the scripted engine)."""
        inner = self.inner
        while isinstance(inner, LLMWrapper):
            inner = inner.inner
        return inner


W = TypeVar("W", bound=LLM)


def find_layer(llm: LLM, kind: type[W]) -> W | None:
    """The first layer of a wrapped stack (outermost first) that is a `kind`, or None."""
    current: LLM | None = llm
    while current is not None:
        if isinstance(current, kind):
            return current
        current = current.inner if isinstance(current, LLMWrapper) else None
    return None


def model_parameters(llm: LLM) -> int | None:
    """The model's parameter count as its provider knows it (a layer's `parameter_count()`: the llamacpp
    provider reads its GGUF), None when unknown (a served model: Ollama, OpenAI-compatible)."""
    current: LLM | None = llm
    while current is not None:
        count = getattr(current, "parameter_count", None)
        if callable(count):
            value = count()
            return value if isinstance(value, int) else None
        current = current.inner if isinstance(current, LLMWrapper) else None
    return None


#: What a text is to an embedder: a stored memory ("passage") or what is searched for ("query"). Models
#: trained with instructions (e5: "query: " / "passage: ") embed the two differently.
EmbedKind = Literal["passage", "query"]


class Embedder(abc.ABC):
    """Turns texts into L2-normalised float32 vectors of a fixed size."""

    name: str = "embedder"
    dim: int
    #: The model's name (a file, a package model or a served model).
    model: str = ""
    #: Prepended to each text of that kind before it is embedded (`prefixes`).
    query_prefix: str = ""
    passage_prefix: str = ""

    @property
    def identity(self) -> str:
        """Names the vector space: two embedders with the same identity give comparable vectors. Stored with
        every memory's vector (`Memory.embedder`), so a change of embedder is noticed and re-embedded."""
        prefixes = (
            f"|q={self.query_prefix!r}|p={self.passage_prefix!r}"
            if (self.query_prefix or self.passage_prefix)
            else ""
        )
        return f"{self.name}/{self.model}{prefixes}"[:200]

    def prefixed(self, texts: Sequence[str], kind: EmbedKind) -> list[str]:
        """The texts with the prefix of their kind."""
        prefix = self.query_prefix if kind == "query" else self.passage_prefix
        return [prefix + text if prefix and text.strip() else text for text in texts]

    @abc.abstractmethod
    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> np.ndarray:
        """Embed texts.

        Args:
            texts: the texts, any language.
            kind: "passage" for what is stored, "query" for what is searched for (see `EmbedKind`).

        Returns:
            A float32 array of shape (len(texts), dim), each row L2-normalised (zero rows stay zero).

        Raises:
            LLMUnavailable: a remote embedding service failed.
        """

    async def aclose(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release clients."""


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)
