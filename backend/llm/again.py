"""Asking the model again, within a deadline, for a reply that left something out.

A small model asked to tell "Mia is hosting a party at Corner Cafe, tomorrow at 7pm" often says the party and
drops the time; asked what it knows of the party, it answers from a memory and leaves out who hosts it. The
caller knows what a complete reply carries (`lacks`: the names of what this one leaves out, empty when
complete) and how to ask for it in one short sentence with the values (`ask`). `until_complete` calls the
model again with the prompt plus that sentence, up to `tries` calls in all, each while the deadline leaves
room for a call as long as the longest so far (TIME_MARGIN), each with a seed of its own (the same prompt
and seed would give the same reply), and keeps the reply that lacks the least (the earliest among equals).
A call that fails or runs out of time keeps what there was. The refused reply is never put back into the
prompt: a small model copies what it is shown.

Used by a turn that tells news (conversation/completing.py) and an interview answer about news the agent
remembers (interview/grounding.py).
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from backend.errors import LLMError
from backend.llm.base import LLM, GenerateOptions

#: Another call is made only when the deadline leaves this many times the longest call's duration.
TIME_MARGIN = 1.25

R = TypeVar("R", bound=BaseModel)


def room_for_another(remaining_s: float, longest_call_s: float) -> bool:
    """Whether `remaining_s` leaves room for a call as long as the longest so far (with TIME_MARGIN)."""
    return remaining_s > longest_call_s * TIME_MARGIN


@dataclass(frozen=True)
class Completed(Generic[R]):
    """The reply kept, what the first reply lacked (None when it lacked nothing), and the calls made."""

    reply: R
    asked_again: list[str] | None
    tries: int


async def until_complete(
    llm: LLM,
    first: R,
    *,
    asked: tuple[Sequence[dict[str, str]], type[R], GenerateOptions],
    lacks: Callable[[R], tuple[str, ...]],
    ask: Callable[[tuple[str, ...]], dict[str, str]],
    took_s: float,
    remaining_s: Callable[[], float],
    tries: int,
    clock: Callable[[], float],
) -> Completed[R]:
    """`first`, or a later reply that lacks less (module docstring).

    Args:
        first: the first call's reply.
        asked: the first call's prompt, schema and options (each try adds one message and its own seed).
        lacks: what a reply leaves out, by name (empty: complete).
        ask: the message asking for what is left out (given `lacks`' names), one short sentence.
        took_s: the first call's seconds.
        remaining_s: the seconds the caller may still spend on the model.
        tries: the most calls in all, the first included (1: never ask again).
        clock: monotonic seconds (the event loop's time).
    """
    left = lacks(first)
    if not left:
        return Completed(first, None, 1)
    first_left, (prompt, schema, options) = list(left), asked
    made, longest, best = 1, took_s, first
    while left and made < tries and room_for_another(remaining_s(), longest):
        made += 1
        call = llm.generate_json([*prompt, ask(left)], schema, options=reseeded(options, made))
        started = clock()
        try:
            again = await asyncio.wait_for(call, timeout=max(remaining_s(), 0.0))
        except (LLMError, TimeoutError):
            break
        finally:
            longest = max(longest, clock() - started)
        still = lacks(again)
        if len(still) < len(left):
            best, left = again, still
    return Completed(best, first_left, made)


def reseeded(options: GenerateOptions, attempt: int) -> GenerateOptions:
    """`options` with a seed for this try: the call's own seed (or one from its session and agent) plus the
    try's number, so that a fixed LLM_SEED still gives each try its own reply, reproducibly."""
    base = options.seed
    if base is None:
        base = zlib.crc32(f"{options.session_id}:{options.agent_id}:{options.purpose}".encode())
    return options.model_copy(update={"seed": (base + attempt) % 2**31})
