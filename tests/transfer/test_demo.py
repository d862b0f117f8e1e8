"""The demo world: its data file, loading once on first start, and plans the scripted engine writes for it."""

from __future__ import annotations

import random

import pytest

from backend.config import Settings
from backend.llm.base import GenerateOptions
from backend.planning.schemas import PlanReply
from backend.planning.validation import repair_plan
from backend.scripted import ScriptedLLM
from backend.scripted.engine import WriterContext
from backend.scripted.writers.plan import write_plan
from backend.transfer.demo import bundled_town, demo_world
from tests.conftest import make_client


def test_demo_file_has_the_town_and_the_council() -> None:
    demo = demo_world()
    agents = {agent.id: agent for agent in demo.agents}
    places = {poi.id: poi for poi in demo.pois}
    assert len(agents) >= 5 and {"aoi", "hikari"} <= set(agents)
    assert {"中央カフェ", "公園", "図書館", "レストラン"} <= {poi.name for poi in places.values()}
    assert all(agent.home_poi in places for agent in agents.values())
    assert all(agent.language == "ja" for agent in agents.values())
    council = [agent for agent in agents.values() if agent.council_role]
    assert len(council) == 3
    assert [agent.council_role for agent in council].count("moderator") == 1
    moderator = next(agent for agent in council if agent.council_role == "moderator")
    assert "慎重" in moderator.traits and "分析的" in moderator.traits


def test_demo_world_loads_once_not_on_every_start(settings: Settings, scripted: ScriptedLLM) -> None:
    with make_client(settings, scripted, load_demo_world=True) as client:
        agents = client.get("/v1/agents").json()
        assert {"aoi", "hikari"} <= {a["id"] for a in agents}
        count = len(agents)
        assert client.delete("/v1/agents/hikari").status_code == 200
        persona = {k: v for k, v in client.get("/v1/agents/aoi").json().items() if k in ("name", "home_poi")}
        client.put("/v1/agents/aoi", json={**persona, "traits": ["変わった"]})
        client.delete("/v1/pois/park")
    with make_client(settings, scripted, load_demo_world=True) as client:
        agents = client.get("/v1/agents").json()
        assert len(agents) == count - 1 and "hikari" not in {a["id"] for a in agents}
        assert client.get("/v1/agents/aoi").json()["traits"] == ["変わった"]
        assert client.get("/v1/pois/park").status_code == 404


def test_demo_world_waits_for_the_setting_and_an_empty_world(
    settings: Settings, scripted: ScriptedLLM
) -> None:
    with make_client(settings, scripted) as client:  # load_demo_world is off in tests
        assert client.get("/v1/agents").json() == []
        client.put("/v1/agents/mine", json={"name": "自作"})
    with make_client(settings, scripted, load_demo_world=True) as client:
        assert [a["id"] for a in client.get("/v1/agents").json()] == ["mine"]


@pytest.mark.parametrize("town", ["demo", "town25"])
@pytest.mark.parametrize("language", ["ja", "en"])
def test_scripted_plans_for_every_demo_agent_need_no_repair(town: str, language: str) -> None:
    demo = bundled_town(town)
    pois = [{"id": p.id, "name": p.name, "kind": p.kind, "description": p.description} for p in demo.pois]
    for seed, agent in enumerate(demo.agents):
        facts = {
            "language": language,
            "persona": {"name": agent.name, "traits": agent.traits},
            "home_poi": agent.home_poi,
            "window": {"start": agent.wake_hour, "end": agent.sleep_hour},
            "pois": pois,
        }
        ctx = WriterContext(facts, random.Random(seed), [], GenerateOptions(language=language), None)
        reply = PlanReply.model_validate(write_plan(ctx))
        items, repairs = repair_plan(
            reply.items,
            known_pois={p["id"] for p in pois},
            home=agent.home_poi,
            start=agent.wake_hour,
            end=agent.sleep_hour,
        )
        assert repairs == [], (agent.id, repairs)
        assert len({item.poi_id for item in items}) >= 3
        assert items[0].poi_id == agent.home_poi and items[-1].poi_id == agent.home_poi
        for item in items:  # English activities still name the (Japanese) places
            assert item.activity[0].isascii() == (language == "en"), item.activity
