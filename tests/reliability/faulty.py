"""A provider with injectable faults: raise, hang, or answer garbage, per call purpose; and a gate."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from backend.errors import LLMUnavailable
from backend.llm.base import Completion, GenerateOptions, Message
from backend.scripted import ScriptedLLM

BACKGROUND_PURPOSES = {"importance", "reflection", "questions", "insight", "person", "emotion"}


class FaultyLLM(ScriptedLLM):
    """The scripted engine, except for calls whose purpose has a fault set.

    faults: purpose ("dialogue", "importance", ... or "background" for all background purposes) -> "raise" |
    "hang" | "garbage". `gate`, when set, holds every call whose purpose is in `gated` (the background
    purposes unless changed) until it is opened.
    """

    def __init__(self) -> None:
        super().__init__(seed=0)
        self.faults: dict[str, str] = {}
        self.gate: asyncio.Event | None = None
        self.gated: set[str] = set(BACKGROUND_PURPOSES)
        self.attempts: list[str] = []

    def _fault(self, purpose: str) -> str | None:
        if purpose in self.faults:
            return self.faults[purpose]
        if purpose in BACKGROUND_PURPOSES:
            return self.faults.get("background")
        return None

    async def complete(
        self, messages: Sequence[Message], *, options: GenerateOptions, schema: dict[str, Any] | None = None
    ) -> Completion:
        self.attempts.append(options.purpose)
        if self.gate is not None and options.purpose in self.gated:
            await self.gate.wait()
        fault = self._fault(options.purpose)
        if fault == "raise":
            raise LLMUnavailable("injected: the provider is down")
        if fault == "hang":
            await asyncio.sleep(3600)
        if fault == "garbage":
            return Completion(text="<<no json here, just noise \x00 ~~~>>", model="faulty")
        return await super().complete(messages, options=options, schema=schema)
