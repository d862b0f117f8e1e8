"""Bundled towns: the 25-agent town's data, `machi world load NAME`, relationships as person memory."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from backend.cli import main
from backend.config import Settings
from backend.errors import NotFound
from backend.memory import person
from backend.memory.models import PersonMemory
from backend.memory.relationship import relationship_density
from backend.memory.repo import MemoryRepo
from backend.scripted import ScriptedLLM
from backend.storage.db import create_db_engine, init_db
from backend.transfer import service as transfer
from backend.transfer.demo import TOWNS_DIR, Town, bundled_names, bundled_town, bundled_world
from backend.world.models import Agent, PointOfInterest
from tests.conftest import make_client


def engine_of(settings: Settings) -> Engine:
    engine = create_db_engine(settings.database_url)
    init_db(engine)
    return engine


def test_the_bundled_towns_are_listed_and_an_unknown_name_lists_them() -> None:
    assert {"demo", "town25"} <= set(bundled_names())
    with pytest.raises(NotFound) as refused:
        bundled_town("smallville")
    assert "demo" in refused.value.message and "town25" in refused.value.message
    assert refused.value.details["available"] == bundled_names()


def test_town25_is_the_papers_size_with_homes_work_and_ties() -> None:
    town = bundled_town("town25")
    agents = {agent.id: agent for agent in town.agents}
    places = {poi.id: poi for poi in town.pois}
    assert len(agents) == 25 == len(town.agents)
    english = [a for a in agents.values() if a.language == "en"]
    assert 3 <= len(english) <= 5 and len(agents) - len(english) >= 20
    assert all(agent.home_poi in places for agent in agents.values())
    assert {"cafe", "bakery", "library", "school", "clinic", "shop", "hall", "bar", "park"} <= {
        poi.kind for poi in places.values()
    }
    homes = [poi for poi in places.values() if poi.kind == "home"]
    assert len({agent.home_poi for agent in agents.values()}) == len(homes) < len(agents)  # families share
    assert len({(poi.position.x, poi.position.z) for poi in places.values()}) == len(places)
    assert town.cast["party_host"] in agents and town.cast["candidate"] in agents
    assert [a.council_role for a in agents.values() if a.council_role].count("moderator") == 1
    known: dict[str, set[str]] = {agent_id: set() for agent_id in agents}
    for rel in town.relationships:
        known[rel.from_].add(rel.to)
    for agent_id, others in known.items():  # everyone knows someone, and its backstory names one of them
        assert others, agent_id
        assert any(agents[o].name in agents[agent_id].backstory for o in others), agent_id


def test_the_demo_town_is_kept_as_it_was() -> None:
    demo = bundled_town("demo")
    assert [agent.id for agent in demo.agents] == ["aoi", "hikari", "ren", "yukino", "natsumi", "haruka"]
    assert demo.relationships == []


def _break(doc: dict[str, Any], how: str) -> None:
    if how == "home":
        doc["agents"][0]["home_poi"] = "nowhere"
    elif how == "duplicate_agent":
        doc["agents"][1]["id"] = doc["agents"][0]["id"]
    elif how == "duplicate_poi":
        doc["pois"][1]["id"] = doc["pois"][0]["id"]
    elif how == "stranger":
        doc["relationships"][0]["to"] = "ghost"
    elif how == "self":
        doc["relationships"][0]["to"] = doc["relationships"][0]["from"]
    elif how == "twice":
        doc["relationships"].append(dict(doc["relationships"][0]))
    elif how == "cast":
        doc["cast"]["party_host"] = "ghost"
    elif how == "unknown_field":
        doc["relationships"][0]["mood"] = "happy"


@pytest.mark.parametrize(
    "how", ["home", "duplicate_agent", "duplicate_poi", "stranger", "self", "twice", "cast", "unknown_field"]
)
def test_an_inconsistent_town_is_refused(how: str) -> None:
    doc = json.loads((TOWNS_DIR / "town25.json").read_text(encoding="utf-8"))
    Town.model_validate(copy.deepcopy(doc))
    _break(doc, how)
    with pytest.raises(ValidationError):
        Town.model_validate(doc)


def test_machi_world_load_wipes_the_world_and_seeds_the_relationships(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    assert main(["world", "reset"]) == 0  # the demo town, then a town on top of it
    assert main(["world", "load", "town25"]) == 0
    out = capsys.readouterr().out
    assert "25 agents" in out and "32 places" in out and "100 relationships" in out and "0.167" in out
    engine = engine_of(settings)
    with Session(engine) as session:
        assert len(session.exec(select(Agent)).all()) == 25
        assert len(session.exec(select(PointOfInterest)).all()) == 32
        density = relationship_density(session, "default")
    assert (density.agents, density.pairs) == (25, 100)
    assert density.value == pytest.approx(0.167, abs=0.005)  # the paper's starting density
    hint = person.context(MemoryRepo(engine).person(("default", "makoto"), "sachiko"))
    assert hint is not None and hint.startswith("幸子について(前からの知り合い)") and "妻" in hint
    english = person.context(MemoryRepo(engine).person(("default", "oliver"), "grace"))
    assert english is not None and english.startswith("About Grace (known from before)")
    assert main(["world", "load", "demo", "--world", "rehearsal"]) == 0
    with Session(engine) as session:
        assert relationship_density(session, "rehearsal").agents == 6
        assert relationship_density(session, "default").pairs == 100  # another world is left alone


def test_an_unknown_town_is_refused_with_the_names_and_changes_nothing(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    assert main(["world", "load", "town25"]) == 0
    capsys.readouterr()
    assert main(["world", "load", "smallville"]) == 2
    err = capsys.readouterr().err
    assert "'smallville'" in err and "demo, town25" in err
    with Session(engine_of(settings)) as session:
        assert relationship_density(session, "default").agents == 25


def test_town25_round_trips_through_export_and_import(settings: Settings, tmp_path: Path) -> None:
    engine = engine_of(settings)
    with Session(engine) as session:
        transfer.reset_world(session, "default", "town25")
        saved = transfer.export_world(session, "default")
    assert len(saved["people"]) == 100 and all(p["interaction_count"] == 0 for p in saved["people"])
    fresh = engine_of(settings.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'fresh.db'}"}))
    with Session(fresh) as session:
        counts = transfer.import_world(session, "default", json.loads(json.dumps(saved)))
        again = transfer.export_world(session, "default")
        assert relationship_density(session, "default").pairs == 100
    assert counts["agents"] == 25 and counts["people"] == 100
    saved.pop("exported_at"), again.pop("exported_at")
    assert again == saved


def test_a_benchmark_imports_the_town_over_http(settings: Settings, scripted: ScriptedLLM) -> None:
    doc = bundled_world("town25", "bench")
    with make_client(settings, scripted) as client:
        response = client.post("/v1/world/import", json=doc, headers={"X-Machi-World": "bench"})
        assert response.status_code == 200, response.text
        assert response.json()["imported"]["people"] == 100
        agents = client.get("/v1/agents", headers={"X-Machi-World": "bench"}).json()
        assert len(agents) == 25 and client.get("/v1/agents").json() == []
        with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
            rows = session.exec(select(PersonMemory).where(PersonMemory.agent_id == "hikari")).all()
            assert {row.other_id for row in rows} == {"aoi", "misaki", "daniel", "takumi", "kaito", "ren"}
            assert relationship_density(session, "bench").value == pytest.approx(100 / 600)
