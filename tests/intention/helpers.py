"""A small town for the intention tests: three Japanese agents, one English, a park and a café."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.conversation.helpers import AOI, EMMA, HIKARI, add_agents, turn

REN = {
    "id": "ren",
    "name": "蓮",
    "language": "ja",
    "backstory": "家具職人。",
    "speaking_style": "短く落ち着いた言葉",
}
PARTY = "明日の19時に公園で花火大会を開く。町のみんなに来てほしい"
NAMES = {"aoi": "葵", "hikari": "ひかり", "ren": "蓮", "emma": "Emma", "liam": "Liam"}


def town(client: TestClient) -> None:
    add_agents(client, AOI, HIKARI, REN, EMMA)
    for poi_id, name, kind, x in (("park", "公園", "park", 30.0), ("cafe", "中央カフェ", "cafe", 0.0)):
        body = {"name": name, "kind": kind, "position": {"x": x, "y": 0.0, "z": 0.0}}
        assert client.put(f"/v1/pois/{poi_id}", json=body).status_code in (200, 201)


def whisper(
    client: TestClient, agent: str = "aoi", text: str = PARTY, day: int = 1, hour: float = 8.0
) -> Any:
    return client.post(f"/v1/agents/{agent}/whisper", json={"text": text, "day": day, "time_of_day": hour})


def talk(
    client: TestClient, a: str, b: str, session: str, lines: int, *, day: int = 1, hour: float = 10.0
) -> list[str]:
    """`lines` turns between a and b (a first), then the end report; returns the transcript."""
    history: list[str] = []
    for index in range(lines):
        speaker, listener = (a, b) if index % 2 == 0 else (b, a)
        body = turn(speaker, listener, session, history, day=day, time_of_day=hour + index / 60)
        reply = client.post("/v1/conversation/turn", json=body).json()
        history.append(f"{NAMES[speaker]}: {reply['dialogue']}")
        if reply["is_conversation_end"]:
            break
    client.post("/v1/conversation/end", json={"session_id": session, "reason": "distance", "day": day,
                                              "time_of_day": hour + 0.2})  # fmt: skip
    return history
