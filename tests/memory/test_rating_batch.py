"""Importance ratings gathered per agent: memories stored while a rating job is pending join it, and one model
call rates up to RATE_BATCH of them (IMPORTANCE_BATCH_S is the gathering window)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from backend.config import Settings
from backend.jobs import repo as job_store
from backend.jobs.models import Job, new_job
from backend.memory.jobs import RATE, merge_ratings
from backend.memory.reflection import RATE_BATCH
from backend.scripted import ScriptedLLM
from backend.storage.db import create_db_engine, init_db
from tests.conftest import drain, make_client
from tests.gated import GatedLLM
from tests.reliability.helpers import jobs, wait_until

URL = "/v1/agents/aoi/memories"
LINES = ["ヒカリに告白された", "カフェでコーヒーを飲んだ", "駅前で財布を落とした"]


def add_aoi(client: TestClient) -> None:
    persona = {"name": "葵", "language": "ja", "backstory": "学生。", "speaking_style": "丁寧。"}
    assert client.put("/v1/agents/aoi", json=persona).status_code in (200, 201)


def stored(client: TestClient) -> dict[str, tuple[int, str]]:
    rows = client.get(URL, params={"limit": 100}).json()["memories"]
    return {row["content"]: (row["importance"], row["importance_source"]) for row in rows}


def test_memories_stored_within_the_window_share_one_rating_call(
    settings: Settings, scripted: ScriptedLLM
) -> None:
    scripted.enqueue({"ratings": [9, 2, 6]}, purpose="importance")
    with make_client(settings, scripted, importance_batch_s=3.0) as client:
        add_aoi(client)
        for line in LINES:  # three separate requests, each committing its own memory
            assert client.post(URL, json={"type": "observation", "content": line}).status_code == 201
        [job] = jobs(client, kind=RATE)
        assert job.status == "pending" and len(job.payload["memory_ids"]) == 3
        assert {source for _, source in stored(client).values()} == {"provisional"}
        drain(client)  # waits out the window, then the one job runs
        assert stored(client) == {LINES[0]: (9, "model"), LINES[1]: (2, "model"), LINES[2]: (6, "model")}
        [job] = jobs(client, kind=RATE)
        assert job.status == "done"
    [call] = scripted.calls("importance")
    assert call.schema is not None and call.schema["title"] == "ImportanceRatings"
    assert call.options.facts["memories"] == LINES
    assert "1. ヒカリに告白された" in call.messages[-1]["content"]


def test_a_reply_with_the_wrong_number_of_ratings_falls_back_to_one_call_each(
    settings: Settings, scripted: ScriptedLLM
) -> None:
    scripted.enqueue({"ratings": [5]}, purpose="importance")  # two memories, one rating: not trusted
    scripted.enqueue({"importance": 8}, {"importance": 1}, purpose="importance")
    with make_client(settings, scripted) as client:
        add_aoi(client)
        batch = [{"type": "observation", "content": line} for line in LINES[:2]]
        assert client.post(URL, json={"memories": batch}).status_code == 201
        drain(client)
        assert stored(client) == {LINES[0]: (8, "model"), LINES[1]: (1, "model")}
    titles = [call.schema["title"] for call in scripted.calls("importance") if call.schema]
    assert titles == ["ImportanceRatings", "ImportanceRating", "ImportanceRating"]


def test_a_long_batch_is_rated_in_calls_of_at_most_rate_batch(
    settings: Settings, scripted: ScriptedLLM
) -> None:
    total = RATE_BATCH + 4
    with make_client(settings, scripted) as client:
        add_aoi(client)
        batch = [{"type": "observation", "content": f"{i}番目の出来事があった"} for i in range(total)]
        assert client.post(URL, json={"memories": batch}).status_code == 201
        drain(client)
        assert {source for _, source in stored(client).values()} == {"model"}
    sizes = [len(call.options.facts["memories"]) for call in scripted.calls("importance")]
    assert sizes == [RATE_BATCH, 4]
    # Each call's schema asks for exactly as many ratings as memories it lists.
    counts = [call.schema["properties"]["ratings"] for call in scripted.calls("importance") if call.schema]
    assert [(c["minItems"], c["maxItems"]) for c in counts] == [(RATE_BATCH, RATE_BATCH), (4, 4)]


def test_a_memory_stored_while_the_rating_job_runs_gets_a_job_of_its_own(settings: Settings) -> None:
    llm = GatedLLM("importance")
    with make_client(settings, llm) as client:
        add_aoi(client)
        client.post(URL, json={"type": "observation", "content": LINES[0]})
        wait_until(lambda: llm.waiting >= 1, what="the first rating call")  # its job is running now
        client.post(URL, json={"type": "observation", "content": LINES[1]})
        first, second = jobs(client, kind=RATE)
        # Claimed: it gave its key up (kept under it as key#id) and the second memory took the key.
        assert first.status == "running" and first.dedupe_key == f"{RATE}:default:aoi#{first.id}"
        assert second.dedupe_key in (f"{RATE}:default:aoi", f"{RATE}:default:aoi#{second.id}")
        assert second.status in ("pending", "running") and len(second.payload["memory_ids"]) == 1
        llm.open_gate(client)
        drain(client)
        assert {source for _, source in stored(client).values()} == {"model"}
        assert {job.status for job in jobs(client, kind=RATE)} == {"done"}


def test_store_merges_only_into_a_pending_job_with_the_key(tmp_path: Path) -> None:
    # A database without an app: no runner may claim the job before the test does.
    engine = create_db_engine(f"sqlite:///{tmp_path / 'jobs.db'}")
    init_db(engine)

    def add(ids: list[int]) -> list[int]:
        payload = {"agent_id": "aoi", "memory_ids": ids, "day": 1, "time_of_day": 9.0}
        with Session(engine) as session:
            added = job_store.add(
                session, [new_job("default", RATE, payload, dedupe_key="k")], merge=merge_ratings
            )
            session.commit()
        return [job.id or 0 for job in added]

    def payloads() -> list[list[int]]:
        with Session(engine) as session:
            return [job.payload["memory_ids"] for job in session.exec(select(Job).order_by(col(Job.id)))]

    [first] = add([1])
    assert add([2, 1]) == []  # merged into the pending job: no new row
    assert payloads() == [[1, 2]]
    claimed = job_store.claim(engine, first, merging_kinds=[RATE], owner="test", lease_s=30)
    assert (
        claimed is not None and claimed.payload["memory_ids"] == [1, 2] and claimed.dedupe_key == f"k#{first}"
    )
    [third] = add([3])  # the key is free again: a job of its own, the claimed payload untouched
    assert third != first
    assert payloads() == [[1, 2], [3]]
    engine.dispose()
