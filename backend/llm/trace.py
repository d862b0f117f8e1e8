"""The tracer: a wrapper that records every model call (who, why, what was sent, what came back, how long)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Protocol

from backend.errors import LLMError
from backend.llm import repo
from backend.llm.base import LLM, Completion, GenerateOptions, LLMWrapper, Message, find_layer
from backend.llm.models import LABEL_COLUMNS, LLMCall
from backend.llm.repo import Engine
from backend.storage.rows import build

log = logging.getLogger(__name__)

MAX_STORED_CHARS = 200_000
#: How a trace whose reply failed validation starts its `error` (the re-ask follows, or the call gives up).
INVALID_PREFIX = "invalid reply: "


class TraceSink(Protocol):
    async def record(self, call: LLMCall) -> int | None: ...

    async def mark_invalid(self, call_id: int, error: str) -> None: ...


class MemoryTraceSink:
    """Keeps traces in a list (tests, and runs without a database)."""

    def __init__(self) -> None:
        self.calls: list[LLMCall] = []

    async def record(self, call: LLMCall) -> int | None:
        call.id = len(self.calls) + 1
        self.calls.append(call)
        return call.id

    async def mark_invalid(self, call_id: int, error: str) -> None:
        call = self.calls[call_id - 1]
        call.ok, call.error = False, error


class DatabaseTraceSink:
    """Writes traces to the `llmcall` table off the event loop. A failed write is logged, never raised.
    `keep_rows` (LLM_CALL_RETENTION_ROWS; 0: no limit): the table never holds more (repo.RowCap)."""

    def __init__(self, engine: Engine, *, keep_rows: int = 0) -> None:
        self.engine = engine
        self.cap = repo.RowCap(keep_rows)
        #: Called with each stored call (the event bus subscribes here).
        self.listeners: list[Callable[[LLMCall], Any]] = []

    async def record(self, call: LLMCall) -> int | None:
        try:
            call_id = await asyncio.to_thread(repo.insert_call, self.engine, call, self.cap)
        except Exception:  # noqa: BLE001 - tracing must never break a call
            log.exception("could not store an LLM trace")
            return None
        for listener in self.listeners:
            try:
                listener(call)
            except Exception:  # noqa: BLE001
                log.exception("trace listener failed")
        return call_id

    async def mark_invalid(self, call_id: int, error: str) -> None:
        try:
            await asyncio.to_thread(
                repo.mark_invalid, self.engine, call_id, f"{INVALID_PREFIX}{error}"[:2000]
            )
        except Exception:  # noqa: BLE001
            log.exception("could not update an LLM trace")


async def mark_invalid_reply(llm: LLM, trace_id: int | None, error: str) -> None:
    """Tell the tracer in `llm`'s stack (if any) that the traced reply failed validation."""
    tracer = find_layer(llm, TracingLLM)
    if tracer is not None and trace_id is not None:
        await tracer.mark_invalid(trace_id, error)


class TracingLLM(LLMWrapper):
    """Records one trace row per provider call, including failures and streamed calls."""

    def __init__(self, inner: LLM, sink: TraceSink) -> None:
        super().__init__(inner)
        self.sink = sink

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
    ) -> Completion:
        started = time.perf_counter()
        try:
            completion = await self.inner.complete(messages, options=options, schema=schema)
        except (LLMError, asyncio.CancelledError) as exc:
            await self._record(messages, options, schema, started, error=exc)
            raise
        completion.trace_id = await self._record(messages, options, schema, started, completion=completion)
        return completion

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
        usage: Completion | None = None,
    ) -> AsyncIterator[str]:
        started = time.perf_counter()
        pieces: list[str] = []
        # The provider fills this when the stream ends (model name, token counts).
        sink = usage if usage is not None else Completion("")
        try:
            async for piece in self.inner.stream(messages, options=options, schema=schema, usage=sink):
                pieces.append(piece)
                yield piece
        except (LLMError, asyncio.CancelledError) as exc:
            await self._record(
                messages, options, schema, started, error=exc, streamed=True, text="".join(pieces)
            )
            raise
        sink.text = "".join(pieces)
        sink.trace_id = await self._record(messages, options, schema, started, completion=sink, streamed=True)

    async def mark_invalid(self, call_id: int, error: str) -> None:
        await self.sink.mark_invalid(call_id, error)

    async def _record(
        self,
        messages: Sequence[Message],
        options: GenerateOptions,
        schema: dict[str, Any] | None,
        started: float,
        *,
        completion: Completion | None = None,
        error: BaseException | None = None,
        streamed: bool = False,
        text: str | None = None,
    ) -> int | None:
        reply = completion.text if completion is not None else text
        model = (completion.model if completion else "") or self.inner.resolve_model(options)
        call = build(
            LLMCall,
            {
                "world_id": options.world_id,
                "purpose": options.purpose[:32],
                **{name: options.labels.get(name) for name in LABEL_COLUMNS},
                "agent_id": options.agent_id,
                "session_id": options.session_id,
                "provider": self.inner.name,
                "model": model[:200],
                "messages": [
                    {"role": m.get("role", ""), "content": m.get("content", "")[:MAX_STORED_CHARS]}
                    for m in messages
                ],
                "schema_name": str(schema.get("title"))[:100] if schema else None,
                "raw_reply": reply[:MAX_STORED_CHARS] if reply is not None else None,
                "ok": error is None,
                "error": _describe(error),
                "latency_ms": round((time.perf_counter() - started) * 1000, 2),
                "prompt_tokens": completion.prompt_tokens if completion else None,
                "prompt_tokens_counted": options.prompt_tokens_counted,
                "completion_tokens": completion.completion_tokens if completion else None,
                "streamed": streamed,
                "repaired": bool(schema) and reply is not None and error is None and not _bare_json(reply),
            },
        )
        return await self.sink.record(call)


def _bare_json(reply: str) -> bool:
    """A reply that is one JSON object and nothing else (no fences, no prose around it)."""
    text = reply.strip()
    return text.startswith("{") and text.endswith("}")


def _describe(error: BaseException | None) -> str | None:
    if error is None:
        return None
    if isinstance(error, asyncio.CancelledError):  # a preempted call says so (scheduler.PREEMPTED)
        return f"cancelled ({error.args[0] if error.args else 'deadline reached'})"
    code = getattr(error, "code", type(error).__name__)
    return f"{code}: {error}"[:2000]
