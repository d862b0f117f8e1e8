"""A scripted model whose calls of one purpose wait at a gate the test opens (a slow or stuck model)."""

from __future__ import annotations

import asyncio

from fastapi.testclient import TestClient

from backend.scripted import ScriptedLLM


class GatedLLM(ScriptedLLM):
    """Calls of `purpose` wait until `open_gate`; every other call answers at once. `waiting` counts arrivals."""

    def __init__(self, purpose: str) -> None:
        super().__init__(seed=0)
        self.purpose = purpose
        self.gate: asyncio.Event | None = None
        self.waiting = 0

    async def complete(self, messages, *, options, schema=None):  # type: ignore[no-untyped-def]
        if options.purpose == self.purpose:
            self.gate = self.gate or asyncio.Event()  # made on the app's loop
            self.waiting += 1
            await self.gate.wait()
        return await super().complete(messages, options=options, schema=schema)

    def open_gate(self, client: TestClient) -> None:
        """Let the waiting calls (and every later one) through, on the app's event loop."""

        async def release() -> None:
            self.gate = self.gate or asyncio.Event()
            self.gate.set()

        client.portal.call(release)  # type: ignore[union-attr]
