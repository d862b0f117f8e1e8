"""The world's facts cache (world/facts.py): a turn reads the world's places, names and gestures once per
revision, and a change made anywhere (this process, another process, an import) is seen on the next read."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.config import Settings
from backend.scripted import ScriptedLLM
from backend.storage.db import create_db_engine, init_db
from backend.world import repo
from backend.world.facts import WorldFactsCache
from backend.world.models import PointOfInterest
from tests.conftest import make_client
from tests.conversation.helpers import add_agents, turn
from tests.visitor.helpers import dialogue_prompts


def _go_to(scripted: ScriptedLLM) -> str:
    prompt = "\n".join(m["content"] for m in dialogue_prompts(scripted)[-1])
    return next(line for line in prompt.splitlines() if line.startswith("- go_to:"))


def test_turns_read_the_facts_once_per_revision(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    client.put("/v1/pois/cafe", json={"name": "中央カフェ", "position": {"x": 0, "z": 0}})
    cache: WorldFactsCache = client.app.state.world_facts  # type: ignore[attr-defined]
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-1", []))
    loads = cache.loads
    client.post("/v1/conversation/turn", json=turn("hikari", "aoi", "s-1", ["葵: こんにちは"]))
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-2", []))
    assert cache.loads == loads  # nothing changed: no place or agent read again
    client.put("/v1/pois/shrine", json={"name": "神社", "position": {"x": 1, "z": 0}})
    client.post("/v1/conversation/turn", json=turn("hikari", "aoi", "s-2", ["葵: やあ"]))
    assert cache.loads == loads + 1 and "shrine" in _go_to(scripted)
    client.delete("/v1/pois/shrine")
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-3", []))
    assert "shrine" not in _go_to(scripted)


def test_a_place_added_in_another_process_is_seen_by_the_next_turn(
    settings: Settings, scripted: ScriptedLLM
) -> None:
    with make_client(settings, scripted) as serving, make_client(settings, ScriptedLLM()) as other:
        add_agents(serving)
        serving.put("/v1/pois/cafe", json={"name": "中央カフェ", "position": {"x": 0, "z": 0}})
        serving.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-1", []))
        assert "park" not in _go_to(scripted)
        assert (
            other.put("/v1/pois/park", json={"name": "公園", "position": {"x": 2, "z": 0}}).status_code == 201
        )
        serving.post("/v1/conversation/turn", json=turn("hikari", "aoi", "s-1", ["葵: こんにちは"]))
        assert re.search(r"\bpark\b", _go_to(scripted))
        # A rename in the other process too: the news a turn reads names people by the names of now.
        assert other.put("/v1/agents/hikari", json={"name": "ひかりちゃん"}).status_code == 200
        facts = serving.app.state.world_facts  # type: ignore[attr-defined]
        with Session(serving.app.state.engine) as session:  # type: ignore[attr-defined]
            assert facts.read(session, "default").names["hikari"] == "ひかりちゃん"


def test_the_revision_only_rises(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'w.db'}")
    init_db(engine)
    cache = WorldFactsCache()
    with Session(engine) as session:
        assert repo.facts_rev(session, "w") == 0 and cache.read(session, "w").pois == {}
        session.add(PointOfInterest(world_id="w", id="cafe", name="Cafe"))
        session.commit()
        # A row written behind the API's back is not seen until the revision moves (every write path
        # through the API, an import or a town raises it).
        assert cache.read(session, "w").pois == {}
        repo.touch_facts(session, "w")
        repo.touch_facts(session, "w")
        session.commit()
        assert repo.facts_rev(session, "w") == 2 and cache.read(session, "w").pois == {"cafe": "Cafe"}
        assert cache.loads == 2
