"""A populated world for the security tests: agents, places, memories, a conversation (so emotion and
person memory), a plan, a council and traced model calls, all created through the API as Unity would."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi.testclient import TestClient

from tests.conftest import drain


@dataclass
class Seeded:
    world: str
    ids: dict[str, Any] = field(default_factory=dict)
    #: Strings that only this world's data contains (names, texts): none may show up in another world.
    markers: list[str] = field(default_factory=list)


def _ok(response: Any) -> Any:
    assert response.status_code < 300, f"{response.request.method} {response.request.url}: {response.text}"
    return response.json() if response.content else None


def seed_world(client: TestClient, world: str, tag: str, headers: dict[str, str] | None = None) -> Seeded:
    """Fill `world` with one of everything; every text carries `tag` so a leak can be spotted."""
    h = {"X-Machi-World": world, **(headers or {})}
    out = Seeded(world=world, markers=[tag])
    place = {
        "name": f"{tag}カフェ",
        "kind": "cafe",
        "description": f"{tag}の店",
        "position": {"x": 1, "z": 2},
    }
    _ok(client.put("/v1/pois/cafe", json=place, headers=h))
    for agent_id, name, role in (
        ("hana", "ハナ", "moderator"),
        ("ren", "レン", "member"),
        ("sora", "ソラ", "member"),
    ):
        persona = {"name": f"{name}{tag}", "backstory": f"{tag}町の住人", "traits": ["明るい"],
                   "home_poi": "cafe", "council_role": role}  # fmt: skip
        _ok(client.put(f"/v1/agents/{agent_id}", json=persona, headers=h))
    memory = _ok(client.post("/v1/agents/hana/memories", headers=h,
                             json={"type": "observation", "content": f"{tag}の秘密を聞いた", "importance": 7}))  # fmt: skip
    state = {"state": "wandering_in_poi", "location_name": f"{tag}カフェ", "day": 1, "time_of_day": 9.0}
    _ok(client.post("/v1/agents/hana/state", json=state, headers=h))
    _ok(client.post("/v1/agents/hana/plan", json={"day": 1}, headers=h))
    session_id = f"talk-{tag}"
    history: list[str] = []
    for speaker, target in (("hana", "ren"), ("ren", "hana")):
        turn = {"agent_id": speaker, "target_id": target, "session_id": session_id, "history": history,
                "time_of_day": 10.0, "day": 1}  # fmt: skip
        reply = _ok(client.post("/v1/conversation/turn", json=turn, headers=h))
        history = [*history, f"{speaker}: {reply['dialogue']}"]
    _ok(client.put("/v1/players/guest", json={"display_name": f"来場者{tag}"}, headers=h))
    visit = {"session_id": f"visit-{tag}", "player_id": "player:guest", "agent_id": "hana",
             "text": f"{tag}の話を聞かせて", "time_of_day": 10.5}  # fmt: skip
    _ok(client.post("/v1/conversation/player-turn", json=visit, headers=h))
    _ok(client.post("/v1/conversation/end", json={"session_id": session_id, "reason": "distance"}, headers=h))
    council = _ok(client.post("/v1/council", json={"title": f"{tag}祭りを開く", "rounds": 1}, headers=h))
    drain(client)
    calls = _ok(client.get("/v1/llm-calls", headers=h))
    out.ids = {
        "agent_id": "hana",
        "other_id": "ren",
        "player_id": "player:guest",
        "poi_id": "cafe",
        "memory_id": memory["id"],
        "session_id": session_id,
        "council_id": council["id"],
        "call_id": calls["calls"][0]["id"] if calls.get("calls") else 1,
    }
    out.markers += [session_id, council["id"], f"visit-{tag}"]
    return out
