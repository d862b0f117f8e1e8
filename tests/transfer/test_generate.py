"""`machi world generate`: a seeded town of any size, the same for a seed, loaded like a bundled town."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, select

from backend.cli import main
from backend.config import Settings
from backend.memory.models import PersonMemory
from backend.storage.db import create_db_engine, init_db
from backend.transfer import service as transfer
from backend.transfer.demo import Town
from backend.transfer.generate import generate_town
from backend.world.models import Agent, PointOfInterest

JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def test_the_same_seed_makes_the_same_town_and_another_seed_another() -> None:
    random.seed(1)
    first = generate_town(200, seed=5)
    random.seed(2)  # the global random plays no part
    before = random.getstate()
    assert generate_town(200, seed=5) == first
    assert random.getstate() == before  # and is left alone
    other = generate_town(200, seed=6)
    assert other != first
    assert [a["name"] for a in other["agents"]] != [a["name"] for a in first["agents"]]
    assert generate_town(200, seed=5, language="en") != first


def test_a_thousand_agents_have_their_own_names_homes_and_streets() -> None:
    doc = generate_town(1000, seed=1)
    town = Town.model_validate(doc)
    agents, pois = town.agents, {poi.id: poi for poi in town.pois}
    assert len({a.id for a in agents}) == len(agents) == 1000
    assert len({a.name for a in agents}) == 1000
    assert not any(char.isdigit() for a in agents for char in a.name)  # no number suffix: the lists suffice
    assert len(pois) == 1280  # town25's 1.28 places per agent
    assert all(agent.home_poi in pois and pois[agent.home_poi].kind == "home" for agent in agents)
    sharing = Counter(agent.home_poi for agent in agents)
    assert 1 < max(sharing.values()) <= 4 and len(sharing) < 800  # families share a home
    kinds = Counter(poi.kind for poi in pois.values())
    assert {"cafe", "park", "library", "shop", "school", "shrine", "clinic", "workshop"} <= set(kinds)
    assert "church" not in kinds  # a Japanese town has shrines
    assert len({(poi.position.x, poi.position.z) for poi in pois.values()}) == len(pois)  # one place a lot
    xs = [poi.position.x for poi in pois.values()]
    assert max(xs) - min(xs) > 300
    assert len({poi.name for poi in pois.values()}) == len(pois)
    assert len({a.backstory for a in agents}) == 1000
    assert len({a.speaking_style for a in agents}) > 5 and len({tuple(a.traits) for a in agents}) > 900
    bakers = [a for a in agents if "でパン職人を" in a.backstory]
    assert bakers and all(a.wake_hour <= 5.0 for a in bakers)  # hours follow the work


def test_everyone_knows_two_to_four_others_and_works_at_a_place_of_the_town() -> None:
    doc = generate_town(1000, seed=2)
    town = Town.model_validate(doc)
    knows = Counter(rel.from_ for rel in town.relationships)
    assert set(knows) == {a.id for a in town.agents} and set(knows.values()) <= {2, 3, 4}
    public = [poi.name for poi in town.pois if poi.kind != "home"]
    agents = {a.id: a for a in town.agents}
    # Work, school or a pastime's place: a name in the backstory is one of the town's places.
    named = [a for a in town.agents if any(name in a.backstory for name in public)]
    assert len(named) > 800
    workers = [a for a in town.agents if "をしている。" in a.backstory and "家で仕事" not in a.backstory]
    assert workers and all(any(f"{name}で" in a.backstory for name in public) for a in workers)
    host = agents[town.cast["party_host"]]
    cafe = next(poi for poi in town.pois if poi.id == town.cast["party_place"])
    assert cafe.kind == "cafe" and f"{cafe.name}で店主" in host.backstory
    family = [rel for rel in town.relationships if rel.summary.startswith(("妻。", "夫。", "娘。", "息子。"))]
    assert family and all(agents[r.from_].home_poi == agents[r.to].home_poi for r in family)


@pytest.mark.parametrize("language", ["ja", "en", "mixed"])
def test_each_agent_speaks_and_knows_others_in_its_own_language(language: Any) -> None:
    town = Town.model_validate(generate_town(300, seed=3, language=language))
    speaks = {agent.id: agent.language for agent in town.agents}
    names = sorted((poi.name for poi in town.pois), key=len, reverse=True)

    def words(text: str) -> str:  # a mixed town's places keep their own language's names
        for name in names:
            text = text.replace(name, "")
        return text

    for agent in town.agents:
        texts = [agent.name, words(agent.backstory), agent.speaking_style, *agent.traits]
        if agent.language == "ja":
            assert all(JAPANESE.search(text) for text in texts), agent
        else:
            assert all(text.isascii() for text in texts), [t for t in texts if not t.isascii()]
            assert re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+", agent.name)
    for rel in town.relationships:
        assert bool(JAPANESE.search(words(rel.summary))) == (speaks[rel.from_] == "ja"), rel
    expected = {"ja": {"ja"}, "en": {"en"}, "mixed": {"ja", "en"}}[language]
    assert set(speaks.values()) == expected
    if language == "en":
        assert all(poi.name.isascii() and poi.description.isascii() for poi in town.pois)


@pytest.mark.parametrize("agents", [1, 2, 3, 7, 30])
def test_a_small_town_is_still_a_town(agents: int) -> None:
    town = Town.model_validate(generate_town(agents, seed=agents))
    assert len(town.agents) == agents
    assert town.cast["party_host"] == town.agents[0].id
    assert {"cafe", "park"} <= {poi.kind for poi in town.pois}
    knows = Counter(rel.from_ for rel in town.relationships)
    assert all(min(2, agents - 1) <= knows[a.id] <= 4 for a in town.agents)


def test_an_impossible_town_is_refused() -> None:
    with pytest.raises(ValueError, match="agents must be"):
        generate_town(0)
    with pytest.raises(ValueError, match="language"):
        generate_town(5, language="fr")  # type: ignore[arg-type]


def _rows(settings: Settings, world: str) -> tuple[int, int, int]:
    """(agents, places, person memories) of `world` in the database."""
    engine = create_db_engine(settings.database_url)
    init_db(engine)
    with Session(engine) as session:
        agents = session.exec(select(Agent).where(col(Agent.world_id) == world)).all()
        places = session.exec(select(PointOfInterest).where(col(PointOfInterest.world_id) == world)).all()
        people = session.exec(select(PersonMemory).where(col(PersonMemory.world_id) == world)).all()
    return len(agents), len(places), len(people)


def test_the_cli_writes_the_town_and_loads_it_into_a_world(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    out = tmp_path / "town.json"
    assert main(["world", "generate", "--agents", "30", "--seed", "4", "--out", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc == generate_town(30, seed=4)
    assert "30 agents" in capsys.readouterr().err
    engine = create_db_engine(settings.database_url)
    init_db(engine)
    with Session(engine) as session:  # the file loads like a bundled town
        counts = transfer.reset_world(session, "default", Town.model_validate(doc))
    assert counts == {"agents": 30, "pois": len(doc["pois"]), "people": len(doc["relationships"])}
    assert _rows(settings, "default") == (30, len(doc["pois"]), len(doc["relationships"]))

    load = ["world", "generate", "--agents", "30", "--seed", "4", "--language", "en", "--load", "big"]
    assert main(load) == 0
    err = capsys.readouterr().err
    assert "world 'big' loaded" in err and "30 agents" in err and "relationships" in err
    english = generate_town(30, seed=4, language="en")
    assert _rows(settings, "big") == (30, len(english["pois"]), len(english["relationships"]))
    assert _rows(settings, "default")[0] == 30  # another world is left alone

    assert main(["world", "generate", "--agents", "3"]) == 0  # stdout: the JSON alone
    captured = capsys.readouterr()
    assert json.loads(captured.out) == generate_town(3) and "written to stdout" in captured.err
    with pytest.raises(SystemExit):
        main(["world", "generate", "--agents", "0"])
