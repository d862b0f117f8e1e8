"""The prompt budget: every prompt is counted in the model's own tokens and fitted to what its context holds.

A prompt that does not fit a local model's context fails (llama.cpp refuses it) or, worse, is cut by the
server from the front, rules first. The budget is the context window less the reply's token cap and a
margin. Callers that know their prompt's parts trim them first, in their own order (the turn prompt drops
the oldest history lines, then memories: `backend/conversation/prompts.py`); this wrapper is the last line:
whatever still does not fit loses the oldest part of its longest non-system message (the system message,
which holds the rules, is never cut). The count is recorded on the call's trace.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from backend.llm.base import (
    LLM,
    Completion,
    GenerateOptions,
    LLMWrapper,
    Message,
    completion_cap,
    estimate_tokens,  # noqa: F401 - the budget's own estimate, defined with the interface that uses it
)

#: Tokens a chat template adds around each message (role markers, separators), counted generously.
MESSAGE_OVERHEAD = 8
#: Kept free beyond the reply's cap: template tokens around the reply, rounding of the estimate.
MARGIN = 32
#: Where a message is cut, the cut is marked so that a model (and a person reading the trace) sees it.
CUT_MARK = "…"
#: The budget never falls below this many tokens, however small the context: a prompt needs its rules.
MIN_BUDGET = 256


def count_messages(messages: Sequence[Message], count: Callable[[str], int]) -> int:
    return sum(count(m.get("content", "")) + MESSAGE_OVERHEAD for m in messages)


def fit_messages(
    messages: Sequence[Message], budget: int, count: Callable[[str], int]
) -> tuple[list[Message], int]:
    """The messages cut to `budget` tokens, and their count. The longest non-system message loses the
    oldest part of its body (its first line, a heading, stays), again until the whole fits."""
    fitted = [dict(m) for m in messages]
    total = count_messages(fitted, count)
    while total > budget:
        candidates = [i for i, m in enumerate(fitted) if m.get("role") != "system" and m.get("content")]
        if not candidates:
            break
        index = max(candidates, key=lambda i: len(fitted[i]["content"]))
        content = fitted[index]["content"]
        head, sep, body = content.partition("\n")
        if not body:
            head, sep, body = "", "", content
        chars_per_token = len(content) / max(1, count(content))
        drop = max(len(body) // 16, math.ceil((total - budget) * chars_per_token)) + 1
        body = body[drop:]
        fitted[index]["content"] = f"{head}{sep}{CUT_MARK}{body}" if body else head
        total = count_messages(fitted, count)
    return fitted, total


class PromptBudgetLLM(LLMWrapper):
    """Fits every prompt to the model's context (see the module docstring) and records its token count."""

    def __init__(self, inner: LLM, *, context_tokens: int) -> None:
        super().__init__(inner)
        self.context_tokens = context_tokens

    def budget(self, options: GenerateOptions, schema: dict[str, Any] | None = None) -> int:
        """Prompt tokens a call may use: the context less the reply's cap (its max_tokens, else what its
        schema allows, else its purpose's cap) and a margin. The reply keeps at most half the context: a
        schema that allows more than the context holds must not starve the prompt of its rules."""
        reserved = min(completion_cap(options, schema), self.context_tokens // 2)
        return max(MIN_BUDGET, self.context_tokens - reserved - MARGIN)

    def _fit(
        self, messages: Sequence[Message], options: GenerateOptions, schema: dict[str, Any] | None
    ) -> tuple[list[Message], GenerateOptions]:
        fitted, tokens = fit_messages(messages, self.budget(options, schema), self.inner.count_tokens)
        # The cap sent is what the context still holds after the prompt (a server such as vLLM refuses a
        # request whose prompt and max_tokens exceed the model's context).
        room = max(1, self.context_tokens - tokens - MARGIN)
        cap = min(completion_cap(options, schema), room)
        return fitted, options.model_copy(update={"prompt_tokens_counted": tokens, "max_tokens": cap})

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
    ) -> Completion:
        fitted, counted = self._fit(messages, options, schema)
        return await self.inner.complete(fitted, options=counted, schema=schema)

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        options: GenerateOptions,
        schema: dict[str, Any] | None = None,
        usage: Completion | None = None,
    ) -> AsyncIterator[str]:
        fitted, counted = self._fit(messages, options, schema)
        async for piece in self.inner.stream(fitted, options=counted, schema=schema, usage=usage):
            yield piece
