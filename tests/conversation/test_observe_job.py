"""The `conversation.observe` job stores each participant's observation of a line once, also when it runs again."""

from __future__ import annotations

import asyncio

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.config import Settings
from backend.conversation.jobs import OBSERVE, merge_lines, observe_prefix
from backend.jobs import repo as job_store
from backend.jobs.models import Job, new_job
from backend.memory.models import Memory
from backend.scripted import ScriptedLLM
from tests.conftest import drain, make_client
from tests.conversation.helpers import add_agents
from tests.reliability.helpers import jobs

PAYLOAD = {"session_id": "s-obs", "turn_index": 0, "speaker_id": "aoi", "partner_id": "hikari",
           "dialogue": "こんにちは", "location_name": "カフェ", "day": 1, "time_of_day": 9.0}  # fmt: skip


def observations(client: TestClient) -> list[tuple[str, str]]:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        rows = session.exec(select(Memory).where(Memory.session_id == "s-obs").order_by(Memory.id))
        return [(row.agent_id, row.content) for row in rows]


def run_job(client: TestClient, attempts: int) -> Job:
    """Commit an observe job as if it had run `attempts` times before, then let the runner take it."""
    with Session(client.app.state.engine, expire_on_commit=False) as session:  # type: ignore[attr-defined]
        job = new_job("default", OBSERVE, dict(PAYLOAD))
        job.attempts = attempts
        session.add(job)
        session.commit()
    runner = client.app.state.jobs  # type: ignore[attr-defined]

    async def submit() -> None:  # on the app's event loop, as the turn does
        runner.submit([job])

    client.portal.call(submit)  # type: ignore[union-attr]
    drain(client)
    return job


def test_a_job_run_again_stores_no_line_twice(settings: Settings, scripted: ScriptedLLM) -> None:
    # Deduplication off: it would merge the repeated line anyway; here the job itself must skip it.
    with make_client(settings, scripted, memory_dedup=False) as client:
        add_agents(client)
        run_job(client, attempts=0)
        first = observations(client)
        assert first == [("aoi", "ひかりに「こんにちは」と話した"), ("hikari", "葵が「こんにちは」と言った")]
        # The same line's job again, as after a crash between storing and `done`: both lines are there.
        run_job(client, attempts=1)
        assert observations(client) == first


def test_reflections_of_a_last_turn_start_after_its_line_is_remembered(client: TestClient) -> None:
    """submit_after: the chained jobs start once the first ones ran (no start-defer-retry round)."""
    runner = client.app.state.jobs  # type: ignore[attr-defined]
    # The poll loop stops first: it could find the chained job due between its commit and submit_after and
    # start it before it is held (in the app that costs a deferral; here it would break the order checked).
    client.portal.call(runner.stop)  # type: ignore[union-attr]
    order: list[str] = []

    async def slow(job: Job) -> None:
        order.append("observe starts")
        await asyncio.sleep(0.2)
        order.append("observe done")

    async def after(job: Job) -> None:
        order.append("reflect starts")

    runner.register("test.observe", slow)
    runner.register("test.reflect", after)
    with Session(client.app.state.engine, expire_on_commit=False) as session:  # type: ignore[attr-defined]
        first, then = new_job("default", "test.observe", {}), new_job("default", "test.reflect", {})
        session.add(first)
        session.add(then)
        session.commit()

    async def submit() -> None:
        runner.submit_after([first], [then])

    client.portal.call(submit)  # type: ignore[union-attr]
    drain(client)
    assert order == ["observe starts", "observe done", "reflect starts"]
    assert runner.outcomes.get("deferred", 0) == 0


def test_lines_of_a_conversation_merge_into_the_pending_job(client: TestClient) -> None:
    """A line committed while the conversation's observation job is still pending joins it: one job, one
    memory write per participant, every line remembered once and in order."""
    add_agents(client)
    engine = client.app.state.engine  # type: ignore[attr-defined]
    lines = [("aoi", "hikari", "こんにちは"), ("hikari", "aoi", "やあ、元気?"), ("aoi", "hikari", "元気だよ")]
    with Session(engine, expire_on_commit=False) as session:
        added = []
        for index, (speaker, partner, text) in enumerate(lines):
            line = {
                **PAYLOAD,
                "turn_index": index,
                "speaker_id": speaker,
                "partner_id": partner,
                "dialogue": text,
            }
            job = new_job("default", OBSERVE, {"session_id": "s-obs", "lines": [line]},
                          dedupe_key=f"{observe_prefix('default', 's-obs')}lines")  # fmt: skip
            added += job_store.add(session, [job], merge=merge_lines)
        session.commit()
    assert len(added) == 1 and [x["dialogue"] for x in added[0].payload["lines"]] == ["こんにちは"]
    [stored] = jobs(client, kind=OBSERVE)
    assert [x["turn_index"] for x in stored.payload["lines"]] == [0, 1, 2]
    runner = client.app.state.jobs  # type: ignore[attr-defined]

    async def submit() -> None:
        runner.submit(added)

    client.portal.call(submit)  # type: ignore[union-attr]
    drain(client)
    assert observations(client) == [
        ("aoi", "ひかりに「こんにちは」と話した"),
        ("aoi", "ひかりが「やあ、元気?」と言った"),
        ("aoi", "ひかりに「元気だよ」と話した"),
        ("hikari", "葵が「こんにちは」と言った"),
        ("hikari", "葵に「やあ、元気?」と話した"),
        ("hikari", "葵が「元気だよ」と言った"),
    ]
    assert [job.status for job in jobs(client, kind=OBSERVE)] == ["done"]
