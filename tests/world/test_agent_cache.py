"""The agent cache: kept rows are reused while `updated_at` is unchanged, and any write is seen at once."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlmodel import Session

from backend.gametime import utcnow
from backend.storage.db import create_db_engine, init_db
from backend.world.cache import AgentCache
from backend.world.models import Agent
from tests.conversation.helpers import add_agents, turn


def make_engine(tmp_path: Path):  # type: ignore[no-untyped-def]
    engine = create_db_engine(f"sqlite:///{tmp_path / 'agents.db'}")
    init_db(engine)
    with Session(engine) as session:
        session.add(Agent(id="aoi", name="葵", backstory="学生"))
        session.add(Agent(id="hikari", name="ひかり"))
        session.commit()
    return engine


def test_unchanged_agents_are_not_loaded_again(tmp_path: Path) -> None:
    engine = make_engine(tmp_path)
    cache = AgentCache()
    first = cache.read(engine, "default", ["aoi", "hikari", "nobody"])
    assert set(first) == {"aoi", "hikari"} and cache.loads == 2
    again = cache.read(engine, "default", ["hikari", "aoi"])
    assert again["aoi"] is first["aoi"] and cache.loads == 2
    assert cache.read(engine, "other-world", ["aoi"]) == {}


def test_a_write_from_anywhere_is_seen_on_the_next_read(tmp_path: Path) -> None:
    engine = make_engine(tmp_path)
    cache = AgentCache()
    assert cache.read_one(engine, "default", "aoi").backstory == "学生"  # type: ignore[union-attr]
    # Another process (or a CLI) changes the row: only `updated_at` tells, and it is enough.
    other = create_db_engine(f"sqlite:///{tmp_path / 'agents.db'}")
    with other.begin() as conn:
        conn.execute(
            update(Agent.__table__)  # type: ignore[attr-defined]
            .where(Agent.__table__.c.id == "aoi")  # type: ignore[attr-defined]
            .values(backstory="図書館の司書", updated_at=utcnow())
        )
    assert cache.read_one(engine, "default", "aoi").backstory == "図書館の司書"  # type: ignore[union-attr]
    assert cache.loads == 2
    with other.begin() as conn:
        conn.execute(Agent.__table__.delete().where(Agent.__table__.c.id == "aoi"))  # type: ignore[attr-defined]
    assert cache.read_one(engine, "default", "aoi") is None


def test_kept_agents_survive_a_commit_of_the_session_that_loaded_them(tmp_path: Path) -> None:
    engine = make_engine(tmp_path)
    cache = AgentCache()
    with Session(engine) as session:  # expire_on_commit=True, the default
        aoi = cache.get_many(session, "default", ["aoi"]).get("aoi")
        session.commit()
    assert aoi is not None and aoi.name == "葵"  # not expired, readable after the session closed


def test_a_renamed_agent_speaks_under_its_new_name_on_the_next_turn(client: TestClient) -> None:
    add_agents(client)
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-cache", []))
    persona = client.get("/v1/agents/aoi").json()
    persona.update(name="あおい")
    fields = ("name", "language", "age", "traits", "backstory", "speaking_style", "home_poi",
              "wake_hour", "sleep_hour", "council_role")  # fmt: skip
    put = client.put("/v1/agents/aoi", json={k: persona[k] for k in fields if k in persona})
    assert put.status_code == 200, put.text
    reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-cache-2", [])).json()
    detail = client.get("/v1/conversations/s-cache-2").json()
    assert detail["transcript"][-1] == f"あおい: {reply['dialogue']}"
