"""One write for several agents (`MemoryService.add_for`, used for a line both speakers remember): each agent
gets its rows, its index entries and its own rating job, and the write is all-or-nothing."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, func, select

from backend.jobs.models import Job
from backend.memory.jobs import RATE
from backend.memory.models import Memory, MemoryCreate, Search
from tests.memory.agents import add_agent
from tests.memory.helpers import call, service


def both(client: TestClient, text: str) -> dict[str, list[Memory]]:
    items = {
        "aoi": [MemoryCreate(type="observation", content=f"ひかりが「{text}」と言った")],
        "hikari": [MemoryCreate(type="observation", content=f"自分が葵に「{text}」と言った")],
    }
    return call(client, service(client).add_for, "default", items, session_id="s-both")  # type: ignore[no-any-return]


def count(client: TestClient, model: Any) -> int:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        return int(session.exec(select(func.count()).select_from(model)).one())


def test_each_agent_gets_its_rows_index_entries_and_rating_job(client: TestClient) -> None:
    add_agent(client, "aoi")
    add_agent(client, "hikari", name="ひかり")
    for agent in ("aoi", "hikari"):  # indexes loaded first: the write must keep them in step
        call(client, service(client).retrieve, "default", agent, "カフェ")
    stored = both(client, "新しいケーキを焼いたよ")
    assert [m.content for m in stored["aoi"]] == ["ひかりが「新しいケーキを焼いたよ」と言った"]
    assert [m.content for m in stored["hikari"]] == ["自分が葵に「新しいケーキを焼いたよ」と言った"]
    assert all(m.id is not None and m.agent_id == agent for agent, rows in stored.items() for m in rows)
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        rating = {
            job.dedupe_key: job.payload["memory_ids"] for job in session.exec(select(Job)) if job.kind == RATE
        }
    assert sorted(rating.values()) == sorted([[stored["aoi"][0].id], [stored["hikari"][0].id]])
    for agent in ("aoi", "hikari"):
        found = call(client, service(client).recall, "default", agent, "ケーキ", Search(k=1))
        assert [item.content for item in found] == [stored[agent][0].content]


def test_a_failed_write_stores_nothing_for_any_agent(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_agent(client, "aoi")
    add_agent(client, "hikari", name="ひかり")
    both(client, "おはよう")
    before = count(client, Memory), count(client, Job)

    def failing(session: Any, rows: Any) -> None:  # the second agent's rating job cannot be added
        raise RuntimeError("disk full")

    def insert(groups: Any) -> None:
        real_insert([groups[0], (groups[1][0], failing)])

    repo = service(client).repo
    real_insert = repo.insert
    monkeypatch.setattr(repo, "insert", insert)
    with pytest.raises(RuntimeError, match="disk full"):
        both(client, "また明日ね、ケーキありがとう")
    assert (count(client, Memory), count(client, Job)) == before  # neither agent's row, nor any job
