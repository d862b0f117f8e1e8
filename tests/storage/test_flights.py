"""Single-flight across processes: a named lease in the database orders the processes that ask for it, and a
dead holder's lease is free once it expires. Two `Flights` with their own owner ids stand for two processes."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from backend.errors import Conflict
from backend.storage.db import create_db_engine, init_db
from backend.storage.flights import Flights

PG_URL = os.environ.get("MACHI_TEST_POSTGRES_URL")


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """An initialised database: a SQLite file, then a fresh PostgreSQL database (tests/conftest.py)."""
    engine = create_db_engine(database_url)
    init_db(engine)
    yield engine
    engine.dispose()


async def test_a_second_process_waits_for_the_first_to_finish(engine: Engine) -> None:
    first, second = Flights(engine, lease_s=5), Flights(engine, lease_s=5)
    order: list[str] = []

    async def work(flights: Flights, label: str, started: asyncio.Event | None = None) -> None:
        async with flights.hold("plan:default:aoi:1"):
            if started is not None:
                started.set()
            order.append(f"{label} in")
            await asyncio.sleep(0.3)
            order.append(f"{label} out")

    started = asyncio.Event()
    one = asyncio.create_task(work(first, "A", started))
    await started.wait()
    await asyncio.gather(one, work(second, "B"))
    assert order == ["A in", "A out", "B in", "B out"]
    assert first.live(["plan:default:aoi:1"]) == set()  # released


async def test_a_dead_holders_lease_is_taken_once_it_expires(engine: Engine) -> None:
    dead, alive = Flights(engine, lease_s=0.4), Flights(engine, lease_s=5)
    assert await asyncio.to_thread(dead.try_take, "council:c1")  # it then dies: no heartbeat, no release
    assert not await asyncio.to_thread(alive.try_take, "council:c1")
    assert alive.live(["council:c1", "council:other"]) == {"council:c1"}
    async with alive.hold("council:c1", wait_s=10):
        assert alive.live(["council:c1"]) == {"council:c1"}
        assert not await asyncio.to_thread(dead.try_take, "council:c1")


async def test_the_heartbeat_keeps_a_long_piece_of_work_held(engine: Engine) -> None:
    holder, other = Flights(engine, lease_s=0.3), Flights(engine, lease_s=0.3)
    async with holder.hold("world:default:import"):
        await asyncio.sleep(1.0)  # three leases long: only the heartbeat keeps it
        with pytest.raises(Conflict) as refused:
            async with other.hold("world:default:import", wait_s=0.2):
                pass
        assert "another Machi process" in refused.value.message
    await holder.close()


async def test_holds_within_one_process_nest(engine: Engine) -> None:
    flights, other = Flights(engine, lease_s=5), Flights(engine, lease_s=5)
    async with flights.hold("demo"):
        async with flights.hold("demo"):
            pass
        assert not await asyncio.to_thread(other.try_take, "demo")  # the outer hold still has it
    assert await asyncio.to_thread(other.try_take, "demo")
