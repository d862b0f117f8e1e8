"""In a town of 300 places a turn prompt and a plan prompt name at most PROMPT_PLACES_MAX of them, always where
the agent is, its home and its plan's place; an action or plan item naming a place of the world that was not
offered is still accepted (world/nearby.py)."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.scripted import ScriptedLLM
from backend.world.models import Agent
from tests.conversation.helpers import add_agents, turn
from tests.visitor.helpers import dialogue_prompts

PLACES = 300


def _town(client: TestClient) -> None:
    for i in range(PLACES):
        body = {"name": f"店{i}", "kind": "shop", "position": {"x": float(i), "y": 0.0, "z": 0.0}}
        assert client.put(f"/v1/pois/p{i:03d}", json=body).status_code == 201
    far = {"name": "中央カフェ", "kind": "cafe", "position": {"x": 1000.0, "y": 0.0, "z": 0.0}}
    assert client.put("/v1/pois/cafe", json=far).status_code == 201
    home = {"name": "葵の家", "kind": "home", "position": {"x": -500.0, "y": 0.0, "z": 0.0}}
    assert client.put("/v1/pois/aoi_home", json=home).status_code == 201
    add_agents(client)
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        aoi = session.get(Agent, ("default", "aoi"))
        assert aoi is not None
        aoi.home_poi, aoi.position = "aoi_home", {"x": 150.0, "y": 0.0, "z": 0.0}
        session.add(aoi)
        session.commit()


def _go_to_ids(prompt: str) -> list[str]:
    line = next(line for line in prompt.splitlines() if line.startswith("- go_to:"))
    return re.findall(r"\b(p\d{3}|cafe|aoi_home)\b", line)


def test_a_turn_offers_at_most_the_cap_and_accepts_any_real_place(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    _town(client)
    cap = client.app.state.settings.prompt_places_max  # type: ignore[attr-defined]
    line: dict[str, Any] = {"dialogue": "店に行こう。", "emotion": "happy", "is_conversation_end": False,
                            "actions": [{"type": "go_to", "target": "p299"}]}  # fmt: skip
    scripted.enqueue(line, purpose="dialogue")
    reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-1", [])).json()
    prompt = "\n".join(m["content"] for m in dialogue_prompts(scripted)[-1])
    offered = _go_to_ids(prompt)
    assert len(offered) == cap and offered[:2] == ["cafe", "aoi_home"]  # where it is, its home
    assert "p150" in offered and "p299" not in offered  # then the nearest to where it stands
    schema = scripted.calls("dialogue")[-1].schema or {}
    assert "p299" not in str(schema) and "p150" in str(schema)  # the grammar names the offered ids only
    # A provider that ignores the schema named a real place that was not offered: kept.
    assert [(a["type"], a["target"]) for a in reply["actions"]] == [("go_to", "p299")]


def test_a_plan_prompt_lists_at_most_the_cap(client: TestClient, scripted: ScriptedLLM) -> None:
    _town(client)
    cap = client.app.state.settings.prompt_places_max  # type: ignore[attr-defined]
    plan = client.post("/v1/agents/aoi/plan", json={"day": 1}).json()
    assert plan["source"] in ("model", "repaired")
    prompt = scripted.calls("plan")[-1].messages[-1]["content"]
    listed = re.findall(r"^- (p\d{3}|cafe|aoi_home): ", prompt, flags=re.M)
    assert len(listed) == cap and listed[0] == "aoi_home"
    assert all(item["poi_id"] in listed for item in plan["items"])
    # A model that ignores the schema plans a real place that was not listed: kept, not repaired away.
    items = [{"start": 7, "end": 15, "poi_id": "p299", "activity": "店番をする"},
             {"start": 15, "end": 23, "poi_id": "aoi_home", "activity": "家で本を読む"}]  # fmt: skip
    scripted.enqueue({"items": items}, purpose="plan")
    plan = client.post("/v1/agents/aoi/plan", json={"day": 2}).json()
    assert plan["items"][0]["poi_id"] == "p299" and plan["source"] in ("model", "repaired")
