"""Save and resume: export then import reproduces a world; bad documents change nothing; the CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.cli import main
from backend.config import Settings
from backend.conversation.models import Conversation, Turn
from backend.council.models import CouncilRecord
from backend.emotion.models import EmotionRecord
from backend.memory.models import PersonMemory
from backend.memory.service import MemoryCreate
from backend.scripted import ScriptedLLM
from backend.transfer import repo as transfer_repo
from backend.transfer import service as transfer
from tests.conftest import drain, make_client


def call(client: TestClient, fn: Any, *args: Any, **kwargs: Any) -> Any:
    async def run() -> Any:
        return await fn(*args, **kwargs)

    return client.portal.call(run)  # type: ignore[union-attr]


def populate(client: TestClient) -> None:
    """A lived-in demo town: plans, states, memories with evidence, a conversation, emotion, council."""
    memory = client.app.state.memory  # type: ignore[attr-defined]
    for agent in ("aoi", "hikari"):
        assert client.post(f"/v1/agents/{agent}/plan", json={"day": 1}).status_code == 200
    body = {"state": "wandering_in_poi", "location_name": "図書館", "day": 1, "time_of_day": 9.5}
    client.post("/v1/agents/aoi/state", json=body)
    seen = [
        call(
            client, memory.add, "default", "aoi", MemoryCreate(type="observation", content=text, importance=i)
        )
        for text, i in (("図書館で古い地図を見つけた", 8), ("ひかりがカフェで笑っていた", 4))
    ]
    reflection = MemoryCreate(
        type="reflection",
        content="葵は町の歴史に惹かれている",
        importance=7,
        evidence_ids=[m.id for m in seen],
    )
    call(client, memory.add, "default", "aoi", reflection)
    drain(client)
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        session.add(
            Conversation(session_id="s1", agent_a="aoi", agent_b="hikari", location_name="中央カフェ")
        )
        for index, (speaker, target, line) in enumerate(
            (("aoi", "hikari", "こんにちは"), ("hikari", "aoi", "またね"))
        ):
            session.add(
                Turn(session_id="s1", turn_index=index, speaker_id=speaker, target_id=target, dialogue=line)
            )
        session.add(EmotionRecord(agent_id="aoi", values={"joy": 70.0}, label="喜び", day=1, time_of_day=10))
        session.add(
            PersonMemory(
                agent_id="aoi", other_id="hikari", other_name="ひかり", summary="カフェで働く明るい人",
                traits_noticed=["明るい"], interaction_count=1,
            )
        )  # fmt: skip
        session.add(
            CouncilRecord(
                id="c1", number=1, title="公園に花壇を作る", members=["yukino", "natsumi"], status="done"
            )
        )
        session.commit()


def exported(client: TestClient, world: str | None = None) -> dict[str, Any]:
    headers = {"X-Machi-World": world} if world else {}
    response = client.get("/v1/world/export", headers=headers)
    assert response.status_code == 200
    doc = response.json()
    doc.pop("exported_at")
    return doc


def ranking(client: TestClient, agent: str = "aoi") -> list[tuple[str, float]]:
    memory = client.app.state.memory  # type: ignore[attr-defined]
    found = call(client, memory.retrieve, "default", agent, "図書館の地図", k=5, day=2, time_of_day=9.0)
    return [(hit.memory.content, round(hit.score, 6)) for hit in found]


@pytest.fixture
def town(settings: Settings, scripted: ScriptedLLM) -> Any:
    with make_client(settings, scripted, load_demo_world=True) as client:
        populate(client)
        client.put("/v1/players/guest-1", json={"display_name": "ユキ", "language": "ja"})
        yield client


def test_export_then_import_into_an_empty_database_reproduces_everything(
    town: TestClient, settings: Settings, tmp_path: Path
) -> None:
    original = exported(town)
    assert {name: len(original[name]) for name in transfer.SECTIONS} == {
        "agents": 6,
        "pois": 9,
        "players": 1,  # a registered visitor (who has not talked: the conversation is the agents')
        "memories": 6,  # two plans, one arrival, two observations, one reflection
        "plans": 2,
        "conversations": 1,
        "turns": 2,
        "emotions": 1,
        "people": 1,
        "council_records": 1,
        "agent_state_events": 1,
        "intentions": 2,  # each plan's morning revision (nothing in particular on their minds)
        "told": 0,
    }
    assert all(m["embedding"] for m in original["memories"])
    fresh = settings.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'fresh.db'}"})
    with make_client(fresh, ScriptedLLM(seed=1)) as other:
        full = town.get("/v1/world/export").json()
        response = other.post("/v1/world/import", json=full)
        assert response.status_code == 200, response.text
        assert response.json()["imported"]["memories"] == 6
        assert exported(other) == original
        assert ranking(other) == ranking(town)
        assert len(ranking(other)) == 5


def relevance_order(client: TestClient) -> list[str]:
    memory = client.app.state.memory  # type: ignore[attr-defined]
    weights = {"recency": 0.0, "importance": 0.0, "relevance": 1.0}
    found = call(client, memory.retrieve, "default", "aoi", "図書館の地図", k=10, weights=weights)
    return [f"{hit.memory.content} {hit.relevance:.6f}" for hit in found]


def test_import_replaces_the_world_and_refreshes_cached_memory(
    town: TestClient, settings: Settings, scripted: ScriptedLLM
) -> None:
    assert relevance_order(town)[0].startswith("図書館で古い地図を見つけた")  # the matrix is cached now
    doc = town.get("/v1/world/export").json()
    doc["memories"] = [m for m in doc["memories"] if m["type"] == "observation" and m["importance"] >= 4]
    assert len(doc["memories"]) == 2
    first, second = doc["memories"]
    first["embedding"], second["embedding"] = second["embedding"], first["embedding"]
    assert town.post("/v1/world/import", json=doc).status_code == 200
    with make_client(settings, scripted) as fresh:  # a new process reads the same rows cold
        expected = relevance_order(fresh)
    assert relevance_order(town) == expected
    assert len(expected) == 2


def test_import_into_another_world_of_the_same_database_renumbers_rows(town: TestClient) -> None:
    doc = town.get("/v1/world/export").json()
    copy_world = {"X-Machi-World": "copy"}
    assert town.post("/v1/world/import", json=doc, headers=copy_world).status_code == 200
    source, copied = exported(town), exported(town, "copy")
    assert copied["world_id"] == "copy" and len(copied["memories"]) == len(source["memories"])
    by_id = {m["id"]: m["content"] for m in copied["memories"]}
    assert not set(by_id) & {m["id"] for m in source["memories"]}
    reflection = next(m for m in copied["memories"] if m["type"] == "reflection")
    assert sorted(by_id[e] for e in reflection["evidence_ids"]) == [
        "ひかりがカフェで笑っていた",
        "図書館で古い地図を見つけた",
    ]
    assert (
        copied["council_records"][0]["id"] != "c1"
        and copied["council_records"][0]["title"] == "公園に花壇を作る"
    )
    assert exported(town) == source


def _break(doc: dict[str, Any], how: str) -> None:
    if how == "version":
        doc["version"] = 2
    elif how == "format":
        doc["format"] = "something-else"
    elif how == "missing_content":
        del doc["memories"][1]["content"]
    elif how == "section":
        doc["plans"] = {"not": "a list"}
    elif how == "embedding":
        doc["memories"][0]["embedding"] = "***"
    elif how == "orphan":
        doc["memories"][2]["agent_id"] = "ghost"
    elif how == "duplicate":
        doc["turns"][1]["turn_index"] = 0
    elif how == "no_agents":
        del doc["agents"]


@pytest.mark.parametrize(
    ("how", "field"),
    [
        ("version", "version"),
        ("format", "format"),
        ("missing_content", "memories[1].content"),
        ("section", "plans"),
        ("embedding", "memories[0].embedding"),
        ("orphan", "memories[2].agent_id"),
        ("duplicate", "turns[1].turn_index"),
        ("no_agents", "agents"),
    ],
)
def test_bad_documents_are_422_and_change_nothing(town: TestClient, how: str, field: str) -> None:
    before = exported(town)
    doc = copy.deepcopy(town.get("/v1/world/export").json())
    _break(doc, how)
    response = town.post("/v1/world/import", json=doc)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["details"]["field"] == field
    assert field.split("[")[0] in response.json()["error"]["message"]
    assert exported(town) == before
    assert town.post("/v1/world/import", json=[1, 2]).status_code == 422


def test_a_failure_half_way_through_an_import_rolls_everything_back(
    town: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = exported(town)
    doc = town.get("/v1/world/export").json()
    doc["agents"] = doc["agents"][:2]
    doc["memories"] = doc["plans"] = doc["emotions"] = doc["agent_state_events"] = doc["intentions"] = []
    real_insert = transfer_repo.insert_rows

    def failing(session: Session, table: type, rows: list[Any]) -> None:
        if table is Turn:
            raise RuntimeError("disk full")
        real_insert(session, table, rows)

    monkeypatch.setattr(transfer_repo, "insert_rows", failing)
    with Session(town.app.state.engine) as session, pytest.raises(RuntimeError):  # type: ignore[attr-defined]
        transfer.import_world(session, "default", doc)
    assert exported(town) == before


def test_cli_reset_export_and_import(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    assert main(["world", "reset"]) == 0
    saved = tmp_path / "town.json"
    assert main(["world", "export", str(saved)]) == 0
    doc = json.loads(saved.read_text(encoding="utf-8"))
    assert {a["id"] for a in doc["agents"]} >= {"aoi", "hikari"} and doc["world_id"] == "default"
    assert main(["world", "import", str(saved), "--world", "rehearsal"]) == 0
    assert "6 agents" in capsys.readouterr().out
    doc["version"] = 99
    saved.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["world", "import", str(saved)]) == 2
    assert "version" in capsys.readouterr().err
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    assert main(["world", "import", str(tmp_path / "broken.json")]) == 2
    assert main(["world", "export", "-", "--world", "rehearsal"]) == 0
    assert json.loads(capsys.readouterr().out)["world_id"] == "rehearsal"


def test_cli_reset_wipes_the_world_back_to_the_demo(
    settings: Settings, scripted: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    with make_client(settings, scripted, load_demo_world=True) as client:
        populate(client)
        client.put("/v1/agents/extra", json={"name": "追加"})
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    assert main(["world", "reset"]) == 0
    with make_client(settings, scripted, load_demo_world=True) as client:
        doc = exported(client)
        assert "extra" not in {a["id"] for a in doc["agents"]} and len(doc["agents"]) == 6
        assert doc["memories"] == doc["plans"] == doc["turns"] == doc["council_records"] == []
