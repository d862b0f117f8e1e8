"""A world document names its embedder; imported under another one, its memories are embedded again by the
worker (found by their words meanwhile), and under the same one they keep their vectors."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.config import Settings
from backend.memory.models import Memory
from backend.scripted import ScriptedLLM
from tests.conftest import make_client
from tests.memory.agents import add_agent
from tests.reliability.helpers import wait_until

FACTS = ["ひかりから焼きたてのパンを分けてもらった。", "ソラが来月引っ越すと聞いた。", "図書館で宿題をした。"]


def embedders(client: TestClient) -> set[str | None]:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        return {row.embedder for row in session.exec(select(Memory)).all()}


def exported_from_local(settings: Settings, scripted: ScriptedLLM) -> dict[str, Any]:
    with make_client(settings, scripted, embedding_provider="local") as old:
        add_agent(old)
        for text in FACTS:
            body = {"type": "observation", "content": text, "importance": 5}
            assert old.post("/v1/agents/aoi/memories", json=body).status_code == 201
        doc: dict[str, Any] = old.get("/v1/world/export").json()
    return doc


def test_an_import_under_another_embedder_re_embeds(settings: Settings, scripted: ScriptedLLM) -> None:
    doc = exported_from_local(settings, scripted)
    assert doc["embedder"] == "local/hashed-char-ngrams-384"
    assert {m["embedder"] for m in doc["memories"]} == {"local/hashed-char-ngrams-384"}
    fresh = settings.model_copy(update={"database_url": settings.database_url.replace("machi.db", "new.db")})
    with make_client(fresh, scripted) as new:  # the default: the packaged e5
        assert new.post("/v1/world/import", json=doc).status_code == 200
        identity = new.get("/health").json()["embeddings"]["embedder"]
        wait_until(lambda: embedders(new) == {identity}, what="the imported memories re-embedded")
        found = new.post(
            "/v1/agents/aoi/memories/retrieve",
            json={"query": "誰にパンを貰ったっけ？", "k": 1, "touch": False},
        ).json()["results"]
        assert found[0]["memory"]["content"] == FACTS[0]


def test_an_import_under_the_same_embedder_keeps_the_vectors(
    settings: Settings, scripted: ScriptedLLM
) -> None:
    doc = exported_from_local(settings, scripted)
    fresh = settings.model_copy(update={"database_url": settings.database_url.replace("machi.db", "same.db")})
    with make_client(fresh, scripted, embedding_provider="local") as same:
        assert same.post("/v1/world/import", json=doc).status_code == 200
        assert embedders(same) == {"local/hashed-char-ngrams-384"}
        assert same.get("/health").json()["embeddings"]["pending"] == 0
