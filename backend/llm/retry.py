"""Wrappers that make a provider dependable: per-call timeout, retry with backoff, repair and re-ask."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from backend.errors import LLMReplyError, LLMTimeout, LLMUnavailable
from backend.llm.base import (
    LLM,
    Completion,
    GenerateOptions,
    LLMWrapper,
    Message,
    T,
    json_schema_for,
    parse_reply,
)
from backend.llm.echo import echo_problem, free_texts, mended
from backend.llm.reask import ECHO_PREFIX, REASK, REASK_HEAT, reask
from backend.llm.trace import mark_invalid_reply

log = logging.getLogger(__name__)


class TimeoutLLM(LLMWrapper):
    """Fails a call with LLMTimeout after `timeout_s` (or the call's own `options.timeout_s`).

    The late call is cancelled, not abandoned: the provider stops generating (llama.cpp at the next token,
    HTTP providers close the request), so the next call gets the model at once.
    """

    def __init__(self, inner: LLM, *, timeout_s: float) -> None:
        super().__init__(inner)
        self.timeout_s = timeout_s

    def _limit(self, options: GenerateOptions) -> float:
        return options.timeout_s or self.timeout_s

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
    ) -> Completion:
        limit = self._limit(options)
        try:
            return await asyncio.wait_for(
                self.inner.complete(messages, options=options, schema=schema), timeout=limit
            )
        except TimeoutError as exc:
            raise LLMTimeout(f"the model did not answer within {limit:g} s") from exc

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
        usage: Completion | None = None,
    ) -> AsyncIterator[str]:
        limit = self._limit(options)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        iterator = self.inner.stream(messages, options=options, schema=schema, usage=usage).__aiter__()
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise LLMTimeout(f"the model did not finish within {limit:g} s")
                try:
                    piece = await asyncio.wait_for(iterator.__anext__(), timeout=remaining)
                except StopAsyncIteration:
                    return
                except TimeoutError as exc:
                    raise LLMTimeout(f"the model did not finish within {limit:g} s") from exc
                yield piece
        finally:
            close = getattr(iterator, "aclose", None)
            if close is not None:
                await close()  # now, not when collected: the provider stops generating


class RetryingLLM(LLMWrapper):
    """Retries transient failures (unreachable provider, timeouts) with exponential backoff and jitter.

    Reply errors are not retried here: `RepairingLLM` re-asks with the validation error instead.
    """

    def __init__(self, inner: LLM, *, max_retries: int = 2, backoff_s: float = 0.5) -> None:
        super().__init__(inner)
        self.max_retries = max_retries
        self.backoff_s = backoff_s

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
    ) -> Completion:
        attempt = 0
        while True:
            try:
                return await self.inner.complete(messages, options=options, schema=schema)
            except (LLMUnavailable, LLMTimeout) as exc:
                # A refused key or an unknown model fails the same way every time: give up at once.
                if attempt >= self.max_retries or not getattr(exc, "retryable", True):
                    raise
                delay = self.backoff_s * (2**attempt) * (0.5 + random.random())
                log.info("model call failed (%s); retry %d in %.2fs", exc.code, attempt + 1, delay)
                attempt += 1
                await asyncio.sleep(delay)


def checked_reply(text: str, schema: type[T], messages: Sequence[Message], options: GenerateOptions) -> T:
    """Repair and validate a reply, cut a field label off its free text ("Sam's line: ..."; llm/label.py), a
    loop out of it ("08:28, 08:28, ..."; llm/loops.py), a field description it opens with before its
    answer and blank items of its lists (echo.mended), then refuse one that echoes its prompt (see echo.py).

    Raises:
        LLMReplyError: the reply is not valid, or it copies a placeholder, a field's description, a line
            of the prompt, the re-ask's instruction or a name instead of answering, or is only a field
            label; the message says which field and why.
    """
    reply = mended(parse_reply(text, schema), schema, messages)
    problem = echo_problem(reply, schema, messages, options.facts)
    if problem is not None:
        raise LLMReplyError(f"{ECHO_PREFIX}{problem}", raw=text)
    return reply


class RepairingLLM(LLMWrapper):
    """JSON replies: repair (fences, surrounding prose), validate, refuse echoes of the prompt, and re-ask
    once with the reason."""

    def __init__(self, inner: LLM, *, reasks: int = 1) -> None:
        super().__init__(inner)
        self.reasks = reasks

    async def generate_json(
        self,
        messages: Sequence[Message],
        schema: type[T],
        *,
        options: GenerateOptions,
        check: Callable[[T], None] | None = None,
    ) -> T:
        json_schema = json_schema_for(schema)

        async def ask(conversation: list[Message], options: GenerateOptions) -> Completion:
            return await self.complete(conversation, options=options, schema=json_schema)

        return await repaired(
            ask, messages, schema, options, tracer=self.inner, reasks=self.reasks, check=check
        )


Ask = Callable[[list[Message], GenerateOptions], Awaitable[Completion]]


async def repaired(
    ask: Ask,
    messages: Sequence[Message],
    schema: type[T],
    options: GenerateOptions,
    *,
    tracer: LLM,
    reasks: int = 1,
    check: Callable[[T], None] | None = None,
    first: Completion | None = None,
) -> T:
    """A checked reply (`checked_reply`, then the caller's `check`), re-asking up to `reasks` times with the
    reason: the one repair and re-ask loop, for `RepairingLLM` and for a streamed turn.

    Args:
        ask: makes one call for the conversation and options given (the first, and each re-ask).
        tracer: the stack whose tracer marks each unusable reply invalid.
        first: a reply already in hand (a streamed one): checked first, in place of a first call.

    Raises:
        LLMReplyError: the last reply was unusable too.
        Whatever `ask` raises.
    """
    conversation = list(messages)
    completion = first
    for attempt in range(reasks + 1):
        if completion is None:
            completion = await ask(conversation, options)
        try:
            # A re-ask's reply is checked against the re-ask too: its instruction is never an answer.
            reply = checked_reply(completion.text, schema, conversation, options)
            if check is not None:
                check(reply)  # the caller's own rules: a refusal is a failed reply like any other
            return reply
        except LLMReplyError as exc:
            await mark_invalid_reply(tracer, completion.trace_id, exc.message)
            if attempt >= reasks:
                raise
            log.info("reply for %s invalid (%s); re-asking", options.purpose, exc.message)
            avoid = refused_openings(completion.text, schema, exc.message, options)
            conversation, options = reask(messages, exc.message, options, avoid=avoid)
            completion = None
    raise AssertionError("unreachable")


__all__ = ["ECHO_PREFIX", "REASK", "REASK_HEAT", "checked_reply", "reask", "repaired"]


def refused_openings(text: str, schema: type[T], error: str, options: GenerateOptions) -> list[str]:
    """What a re-ask must not start with again: after an echo, the refused reply's free text, and the
    partner's last line (a turn's `partner_last_line` fact) when the reply repeated a line of the prompt."""
    if not error.startswith(ECHO_PREFIX):
        return []  # a broken reply: its opening was not the fault
    try:
        refused = free_texts(parse_reply(text, schema), schema)
    except LLMReplyError:
        return []
    partner = options.facts.get("partner_last_line")
    if "repeats" in error and isinstance(partner, str):
        refused.append(partner)
    return refused
