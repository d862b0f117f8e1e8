"""Bad input, numbering under concurrency, progress callbacks, crash recovery."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.config import Settings
from backend.council.models import CouncilRecord
from backend.council.schemas import CouncilCreate
from backend.council.service import INTERRUPTED, create_council, run_council
from backend.scripted import ScriptedLLM
from backend.storage.db import create_db_engine, init_db
from tests.conftest import drain, make_client
from tests.council.helpers import add_agents


def field_of(response: Any) -> set[str]:
    body = response.json()["error"]
    details = body["details"]
    if isinstance(details, list):
        return {d["field"] for d in details}
    return {details["field"]}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"title": ""}, "title"),
        ({"title": "   "}, "title"),
        ({}, "title"),
        ({"title": "x", "rounds": 0}, "rounds"),
        ({"title": "x", "rounds": 6}, "rounds"),
        ({"title": "x", "members": ["yukino"]}, "members"),
        ({"title": "x", "members": ["yukino", "yukino"]}, "members"),
        ({"title": "x", "members": ["yukino", "nobody"]}, "members"),
        ({"title": "x", "members": ["yukino", "haruka"], "moderator": "nobody"}, "moderator"),
    ],
)
def test_bad_council_requests_are_422_naming_the_field(sisters: TestClient, body: dict, field: str) -> None:
    response = sisters.post("/v1/council", json=body)
    assert response.status_code == 422, response.text
    assert field in field_of(response)
    assert sisters.get("/v1/council").json()["councils"] == []  # nothing half-made was stored


def test_a_world_without_a_council_needs_members(client: TestClient) -> None:
    add_agents(
        client, [{"id": "solo", "name": "一人", "council_role": "moderator"}, {"id": "x", "name": "X"}]
    )
    response = client.post("/v1/council", json={"title": "議題"})
    assert response.status_code == 422 and field_of(response) == {"members"}
    assert client.post("/v1/council", json={"title": "議題", "members": ["solo", "x"]}).status_code == 202
    drain(client)


def test_numbers_stay_unique_when_councils_are_created_concurrently(sisters: TestClient) -> None:
    app: Any = sisters.app
    request = CouncilCreate(title="同時に作る")
    with ThreadPoolExecutor(max_workers=8) as pool:
        rows = list(pool.map(lambda _: create_council(app.state.engine, "default", request), range(16)))
    assert sorted(r.number for r in rows) == list(range(1, 17))


def test_progress_is_reported_after_every_step(sisters: TestClient) -> None:
    app: Any = sisters.app
    row = create_council(app.state.engine, "default", CouncilCreate(title="進み具合", rounds=2))
    updates: list[dict[str, Any]] = []

    async def on_update(update: dict[str, Any]) -> None:
        updates.append(update)

    final = sisters.portal.call(
        lambda: run_council(app.state.engine, app.state.llm, row.id, on_update=on_update)
    )
    assert final.status == "done"
    stages = [u["stage"] for u in updates]
    assert stages[0] == "starting" and stages[-1] == "done"
    assert "opinion round 1" in stages and "consensus" in stages
    counts = [len(u["record"]["rounds"][0]["opinions"]) for u in updates if u["record"].get("rounds")]
    # the record grows as answers arrive: empty, then the first answer alone, then all three
    assert counts == sorted(counts) and counts[0] == 0 and 1 in counts and counts[-1] == 3
    assert updates[-1]["status"] == "done" and updates[-1]["outcome"] == final.outcome


def test_a_broken_progress_listener_does_not_stop_the_council(sisters: TestClient) -> None:
    app: Any = sisters.app
    row = create_council(app.state.engine, "default", CouncilCreate(title="壊れた聞き手", rounds=1))

    def broken(_update: dict[str, Any]) -> None:
        raise RuntimeError("listener down")

    final = sisters.portal.call(
        lambda: run_council(app.state.engine, app.state.llm, row.id, on_update=broken)
    )
    assert final.status == "done"


def test_start_up_marks_interrupted_councils_failed(
    settings: Settings, scripted: ScriptedLLM, tmp_path: Path
) -> None:
    engine = create_db_engine(settings.database_url)
    init_db(engine)
    with Session(engine) as session:
        for number, status in enumerate(("running", "pending", "done"), start=1):
            session.add(
                CouncilRecord(
                    id=f"c{number}",
                    number=number,
                    title=f"t{number}",
                    status=status,
                    members=["a", "b"],
                    record={"stage": "opinion round 1", "rounds": []},
                )
            )
        session.commit()
    engine.dispose()
    with make_client(settings, scripted) as client:
        councils = {c["id"]: c for c in client.get("/v1/council").json()["councils"]}
        assert councils["c1"]["status"] == "failed" and councils["c2"]["status"] == "failed"
        assert councils["c3"]["status"] == "done"
        detail = client.get("/v1/council/c1").json()
        assert detail["error"] == INTERRUPTED and detail["record"]["stage"] == "failed"
        assert "interrupted" in client.get("/v1/council/c1/record.md").text


def test_a_council_cancelled_mid_run_is_marked_failed(sisters: TestClient, scripted: ScriptedLLM) -> None:
    app: Any = sisters.app
    scripted.delay_s = 5.0  # every model call hangs long enough to be cancelled
    row = create_council(app.state.engine, "default", CouncilCreate(title="止まる", rounds=1))

    async def start_and_cancel() -> None:
        task = asyncio.create_task(run_council(app.state.engine, app.state.llm, row.id))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    sisters.portal.call(start_and_cancel)
    detail = sisters.get(f"/v1/council/{row.id}").json()
    assert detail["status"] == "failed" and detail["error"] == INTERRUPTED
