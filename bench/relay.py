"""What relaying events costs the publisher, and how long an event takes to reach another process.

    python -m bench.relay [--events 5000] [--database-url postgresql+psycopg://...]

Two buses with their relays on one database (a SQLite file in a temporary folder by default): prints the
microseconds one `publish` takes with no relay and with one (the request path's cost), and the delay from
publishing on one bus to delivery on the other (median and worst of single events sent one at a time).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from backend.events import AGENT_STATE, AgentStatePayload, Event, EventBus
from backend.events.relay import PollingRelay, PostgresRelay, Relay


def _payload(n: int) -> AgentStatePayload:
    return AgentStatePayload(agent_id=f"agent-{n}", state="talking", location_name="中央カフェ", day=1,
                             time_of_day=9.5)  # fmt: skip


def _publish_us(bus: EventBus, count: int) -> float:
    start = time.perf_counter()
    for n in range(count):
        bus.publish(AGENT_STATE, "w1", _payload(n))
    return (time.perf_counter() - start) / count * 1e6


async def _latencies(a: EventBus, b: EventBus, rounds: int) -> list[float]:
    arrived: asyncio.Queue[Event[Any]] = asyncio.Queue()
    b.subscribe(arrived.put_nowait)
    delays = []
    for n in range(rounds):
        start = time.perf_counter()
        a.publish(AGENT_STATE, "w1", _payload(n))
        await asyncio.wait_for(arrived.get(), timeout=10)
        delays.append((time.perf_counter() - start) * 1000)
    return delays


async def main(events: int, url: str) -> None:
    def relay(bus: EventBus) -> Relay:
        return PostgresRelay(bus, url) if url.startswith("postgresql") else PollingRelay(bus, url)

    print(f"publish, no relay:   {_publish_us(EventBus(), events):7.1f} us")
    a, b = EventBus(), EventBus()
    relays = [relay(a), relay(b)]
    for r in relays:
        await r.start()
    try:
        print(f"publish, with relay: {_publish_us(a, events):7.1f} us")
        await asyncio.sleep(1.0)  # the burst reaches b before latencies are measured
        delays = await _latencies(a, b, 50)
        print(
            f"delivery to the other bus: median {statistics.median(delays):.0f} ms, worst {max(delays):.0f} ms"
        )
    finally:
        for r in relays:
            await r.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or f"sqlite:///{Path(folder) / 'machi.db'}"
        asyncio.run(main(args.events, url))
