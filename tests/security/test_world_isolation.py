"""Worlds never leak into each other: every GET route (from `app.routes`), the export and the events.

World "alpha" and world "bravo" hold the same agent ids ("hana", "ren", "sora") with different texts; every
read in bravo, with alpha's ids in the path, must show none of alpha's texts or ids (404 or bravo's data).
"""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from tests.security.conftest import ADMIN
from tests.security.routes import protected_cases
from tests.security.world import Seeded


def _leaks(text: str, other: Seeded, asked: str = "") -> list[str]:
    """The other world's markers in `text`, apart from ids the request itself named (a 404 echoes them)."""
    lowered, asked = text.lower(), asked.lower()
    return [m for m in other.markers if m.lower() in lowered and m.lower() not in asked]


def test_no_read_in_one_world_shows_another_worlds_data(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    client, alpha, bravo = secured
    reads = [case for case in protected_cases(client.app) if case.kind == "http" and case.is_read]
    assert len(reads) > 20  # the route list really was read
    problems, answered = [], 0
    for reader, other in ((bravo, alpha), (alpha, bravo)):
        for ids in (other.ids, reader.ids):  # the other world's ids, then the reader's own
            for case in reads:
                url = case.url(ids)
                sep = "&" if "?" in url else "?"
                response = client.get(
                    f"{url}{sep}world={reader.world}", headers={**ADMIN, "X-Machi-World": reader.world}
                )
                answered += response.status_code == 200
                if response.status_code >= 500:
                    problems.append(f"{case} in {reader.world}: {response.status_code}")
                leaked = _leaks(response.text, other, asked=url)
                if leaked:
                    problems.append(f"{case} in {reader.world} shows {other.world}'s {leaked}")
    assert problems == []
    assert answered > len(reads)  # most reads found the reader's own data: not a test of empty worlds


def test_the_other_worlds_ids_are_not_found(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    client, alpha, _ = secured
    in_bravo = {**ADMIN, "X-Machi-World": "bravo"}
    for path in (
        f"/v1/conversations/{alpha.ids['session_id']}",
        f"/v1/council/{alpha.ids['council_id']}",
        f"/v1/council/{alpha.ids['council_id']}/record.md",
        f"/v1/llm-calls/{alpha.ids['call_id']}",
    ):
        assert client.get(path, headers=in_bravo).status_code == 404, path
    memories = client.get("/v1/agents/hana/memories", headers=in_bravo).json()["memories"]
    assert alpha.ids["memory_id"] not in {m["id"] for m in memories}
    assert all(m["world_id"] == "bravo" for m in memories)
    deleted = client.delete(f"/v1/agents/hana/memories/{alpha.ids['memory_id']}", headers=in_bravo)
    assert deleted.status_code == 404
    kept = client.get("/v1/agents/hana/memories", headers={**ADMIN, "X-Machi-World": "alpha"}).json()
    assert alpha.ids["memory_id"] in {m["id"] for m in kept["memories"]}


def test_retrieval_and_export_stay_in_their_world(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    client, alpha, bravo = secured
    in_bravo = {**ADMIN, "X-Machi-World": "bravo"}
    hits = client.post(
        "/v1/agents/hana/memories/retrieve", json={"query": "ALPHAの秘密", "k": 50}, headers=in_bravo
    )
    assert hits.status_code == 200 and hits.json()["results"]
    assert _leaks(hits.text, alpha) == []
    export = client.get("/v1/world/export", headers=in_bravo)
    assert export.status_code == 200 and "BRAVO" in export.text
    assert _leaks(export.text, alpha) == []
    doc = export.json()
    rows = [
        row for value in doc.values() if isinstance(value, list) for row in value if isinstance(row, dict)
    ]
    assert rows and all(row.get("world_id", "bravo") == "bravo" for row in rows), json.dumps(rows[:2])[:300]


def test_events_in_one_world_are_not_heard_in_another(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    client, _, _ = secured
    with client.websocket_connect("/v1/events?world=bravo", headers=ADMIN) as ws:
        in_alpha = {**ADMIN, "X-Machi-World": "alpha"}
        for hour in (12.0, 13.0):
            state = {"state": "moving_to_poi", "location_name": "ALPHAカフェ", "day": 1, "time_of_day": hour}
            assert client.post("/v1/agents/sora/state", json=state, headers=in_alpha).status_code == 200
        assert client.post("/v1/agents/sora/memories", headers=in_alpha,
                           json={"type": "observation", "content": "ALPHAの事件"}).status_code == 201  # fmt: skip
        # Then one event in bravo: it must be the first thing the bravo listener hears.
        state = {"state": "talking", "day": 1, "time_of_day": 12.5}
        assert (
            client.post(
                "/v1/agents/sora/state", json=state, headers={**ADMIN, "X-Machi-World": "bravo"}
            ).status_code
            == 200
        )
        first = ws.receive_json()
    assert first["world_id"] == "bravo" and first["payload"]["state"] == "talking"
    assert "alpha" not in json.dumps(first, ensure_ascii=False).lower()


def test_an_interview_answers_from_its_own_world_only(secured: tuple[TestClient, Seeded, Seeded]) -> None:
    client, alpha, bravo = secured
    for reader, other in ((bravo, alpha), (alpha, bravo)):
        response = client.post(
            "/v1/agents/hana/interview",
            json={"question": "秘密のこと、何か知ってる？"},
            headers={**ADMIN, "X-Machi-World": reader.world},
        )
        assert response.status_code == 200, response.text
        assert _leaks(response.text, other) == []
        assert f"{reader.markers[0]}の秘密" in response.json()["answer"]  # its own world's memory
