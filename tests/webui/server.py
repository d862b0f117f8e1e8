"""The real Machi server for browser tests: uvicorn on a free 127.0.0.1 port, in a thread, demo world loaded,
plus the HTTP calls that give the dashboard something to show (a short conversation, a plan, states)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from backend.app import create_app
from backend.config import Settings
from backend.scripted import ScriptedLLM

ENV_PREFIXES = (
    "MACHI_", "LLM_", "OLLAMA_", "OPENAI_", "VLLM_", "EMBEDDING_", "DATABASE_", "PLAYER_", "WORLD_PLAYER_",
    "MODERATION",
)  # fmt: skip
SESSION_ID = "webui-cafe-1"


#: How the browser tests start Debian's chromium headless as root on a machine with no network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
#: Where the browser tests leave a screenshot of each page.
SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"
TIMEOUT_MS = 15_000


@contextmanager
def running_server(tmp: Path) -> Iterator[str]:
    """Start the app with uvicorn on a free port; yields its base URL and stops it afterwards."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith(ENV_PREFIXES)}
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=f"sqlite:///{tmp / 'machi.db'}",
        llm_provider="scripted",
        llm_retry_backoff_s=0.0,
        load_demo_world=True,
    )
    app = create_app(settings, llm=ScriptedLLM(seed=0))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", ws="websockets-sansio"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the Machi server did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
        os.environ.update(saved)


def wait_idle(http: httpx.Client, timeout: float = 30.0) -> None:
    """Wait until the server's background work (ratings, reflections, emotion) is done."""
    deadline = time.monotonic() + timeout
    while http.get("/health").json()["background_tasks"] and time.monotonic() < deadline:
        time.sleep(0.1)


def simulate(http: httpx.Client, turns: int = 4) -> dict[str, Any]:
    """What Unity would do: report states, ask for a plan, hold a short conversation, end it."""
    for agent_id, x, z in (("aoi", -1.5, 0.5), ("hikari", 1.5, -0.5)):
        report = {
            "state": "talking",
            "location_name": "中央カフェ",
            "position": {"x": x, "y": 0, "z": z},
            "day": 1,
            "time_of_day": 14.5,
        }
        http.post(f"/v1/agents/{agent_id}/state", json=report).raise_for_status()
    http.post("/v1/agents/aoi/plan", json={"day": 1}).raise_for_status()
    names = {
        "aoi": http.get("/v1/agents/aoi").json()["name"],
        "hikari": http.get("/v1/agents/hikari").json()["name"],
    }
    history: list[str] = []
    replies = []
    speaker, target = "aoi", "hikari"
    for i in range(turns):
        body = {
            "agent_id": speaker,
            "target_id": target,
            "session_id": SESSION_ID,
            "location_name": "中央カフェ",
            "history": history,
            "time_of_day": 14.5 + i * 0.05,
            "day": 1,
        }
        reply = http.post("/v1/conversation/turn", json=body)
        reply.raise_for_status()
        replies.append(reply.json())
        history.append(f"{names[speaker]}: {reply.json()['dialogue']}")
        if reply.json()["is_conversation_end"]:
            break
        speaker, target = target, speaker
    if not replies[-1]["is_conversation_end"]:
        http.post(
            "/v1/conversation/end", json={"session_id": SESSION_ID, "reason": "distance"}
        ).raise_for_status()
    wait_idle(http)
    return {"names": names, "replies": replies}
