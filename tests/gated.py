"""A scripted model whose calls of one purpose (or all) wait at a gate the test opens (a slow or stuck model)."""

from __future__ import annotations

import asyncio

from fastapi.testclient import TestClient

from backend.scripted import ScriptedLLM


class GatedLLM(ScriptedLLM):
    """Calls of `purpose` (every call when None) wait until `open_gate`; the others answer at once. `waiting`
    counts arrivals at the gate, `in_flight_max` the most that waited at once, `purposes` the calls answered."""

    def __init__(self, purpose: str | None) -> None:
        super().__init__(seed=0)
        self.purpose = purpose
        self.gate: asyncio.Event | None = None
        self.waiting = 0
        self.in_flight = 0
        self.in_flight_max = 0
        self.purposes: list[str] = []

    async def complete(self, messages, *, options, schema=None):  # type: ignore[no-untyped-def]
        if self.purpose is None or options.purpose == self.purpose:
            self.gate = self.gate or asyncio.Event()  # made on the app's loop
            self.waiting += 1
            self.in_flight += 1
            self.in_flight_max = max(self.in_flight_max, self.in_flight)
            try:
                await self.gate.wait()
            finally:
                self.in_flight -= 1
        self.purposes.append(options.purpose)
        return await super().complete(messages, options=options, schema=schema)

    def open_gate(self, client: TestClient) -> None:
        """Let the waiting calls (and every later one) through, on the app's event loop."""

        async def release() -> None:
            self.gate = self.gate or asyncio.Event()
            self.gate.set()

        client.portal.call(release)  # type: ignore[union-attr]
