"""A world import reads its document as a stream: the memory it takes does not grow with the document (a 100 MB
body held whole peaked at 2.8 GB), and the server answers other requests while one runs.

Peaks are Python allocations traced by tracemalloc (deterministic, not timings); bench/import_memory.py
measures the served process's RSS.
"""

from __future__ import annotations

import base64
import json
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from backend.cli import main
from backend.config import Settings
from backend.transfer import repo as transfer_repo

pytestmark = pytest.mark.slow


def big_document(memories: int) -> dict[str, Any]:
    """One agent with `memories` memories shaped like an export's (text and a 384-float embedding each)."""
    rng = np.random.default_rng(0)
    rows = [
        {
            "id": i + 1,
            "agent_id": "aoi",
            "type": "observation",
            "content": f"memory {i}: " + "the library was quiet today " * 4,
            "importance": 5,
            "importance_source": "caller",
            "embedding": base64.b64encode(rng.standard_normal(384).astype(np.float32).tobytes()).decode(),
        }
        for i in range(memories)
    ]
    agents = [{"id": "aoi", "name": "Aoi", "language": "en"}]
    return {
        "format": "machi-world",
        "version": 1,
        "world_id": "default",
        "agents": agents,
        "pois": [],
        "memories": rows,
    }


def traced_peak(run: Any) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_import_over_http_holds_less_than_the_document(client: TestClient) -> None:
    body = json.dumps(big_document(4000)).encode()  # ~9 MB
    replies: list[Any] = []
    peak = traced_peak(
        lambda: replies.append(
            client.post("/v1/world/import", content=body, headers={"Content-Type": "application/json"})
        )
    )
    assert replies[0].status_code == 200, replies[0].text
    assert replies[0].json()["imported"]["memories"] == 4000
    assert peak < len(body)  # held whole, the body and its parse took five times its size


def test_the_cli_import_holds_less_than_the_file(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any
) -> None:
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    saved = tmp_path / "world.json"
    saved.write_text(json.dumps(big_document(4000)), encoding="utf-8")
    assert main(["world", "export", str(tmp_path / "empty.json")]) == 0  # the CLI's modules loaded, untraced
    codes: list[int] = []
    peak = traced_peak(lambda: codes.append(main(["world", "import", str(saved)])))
    assert codes == [0] and "4000 memories" in capsys.readouterr().out
    assert peak < saved.stat().st_size


def test_the_server_answers_while_an_import_is_being_written(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    inside, release = threading.Event(), threading.Event()
    real_insert = transfer_repo.insert_rows

    def held(*args: Any) -> None:
        inside.set()
        assert release.wait(60)
        real_insert(*args)

    monkeypatch.setattr(transfer_repo, "insert_rows", held)
    replies: list[Any] = []
    worker = threading.Thread(
        target=lambda: replies.append(client.post("/v1/world/import", json=big_document(10)))
    )
    worker.start()
    try:
        assert inside.wait(60)
        assert client.get("/health").status_code == 200  # the import waits in its worker thread, not the loop
        assert client.get("/v1/agents").status_code == 200
    finally:
        release.set()
        worker.join(60)
    assert replies[0].status_code == 200 and replies[0].json()["imported"]["memories"] == 10
