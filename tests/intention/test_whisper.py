"""A whisper puts a thought in an agent's mind: a memory, an intention, and the next turn's prompt."""

from __future__ import annotations

from fastapi.testclient import TestClient

from backend.scripted import ScriptedLLM
from tests.conftest import drain
from tests.conversation.helpers import turn
from tests.intention.helpers import PARTY, town, whisper


def _prompt(scripted: ScriptedLLM) -> str:
    call = scripted.calls("dialogue")[-1]
    return "\n".join(str(m["content"]) for m in call.messages)


def test_whisper_changes_the_next_turn_prompt(client: TestClient, scripted: ScriptedLLM) -> None:
    town(client)
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "before", [], day=1, time_of_day=9.0))
    assert PARTY not in _prompt(scripted)

    reply = whisper(client)
    assert reply.status_code == 200
    body = reply.json()
    assert body["intentions"]["text"] == PARTY and body["memory_id"]
    memory = client.get("/v1/agents/aoi/memories", params={"q": "花火"}).json()["memories"][0]
    assert memory["importance"] == 9 and "whisper" in memory["tags"]
    assert client.get("/v1/agents/aoi").json()["intentions"] == PARTY

    client.post("/v1/conversation/turn", json=turn("aoi", "ren", "after", [], day=1, time_of_day=9.5))
    prompt = _prompt(scripted)
    assert "What is on your mind today:" in prompt and PARTY in prompt
    assert "News 蓮 has not heard from you yet" in prompt
    drain(client)


def test_whisper_bad_input_names_the_field(client: TestClient) -> None:
    town(client)
    for text in ("", "   ", "あ" * 161):
        reply = client.post("/v1/agents/aoi/whisper", json={"text": text})
        assert reply.status_code == 422, text
        assert "text" in str(reply.json()["error"])
    assert client.post("/v1/agents/nobody/whisper", json={"text": "hello"}).status_code == 404
    assert client.get("/v1/agents/aoi/intentions").json()["lines"] == []


def test_a_whisper_in_another_world_never_reaches_this_one(client: TestClient) -> None:
    town(client)
    other = {"X-Machi-World": "rehearsal"}
    client.put("/v1/agents/aoi", json={"name": "葵", "language": "ja"}, headers=other)
    assert client.post("/v1/agents/aoi/whisper", json={"text": PARTY}, headers=other).status_code == 200
    assert client.get("/v1/agents/aoi/intentions").json()["text"] == ""
    assert client.get("/v1/agents/aoi/intentions", headers=other).json()["text"] == PARTY
    assert client.get("/v1/agents/aoi/memories", params={"q": "花火"}).json()["total"] == 0


def test_an_important_plan_memory_becomes_an_intention_at_once(client: TestClient) -> None:
    town(client)
    small = {"type": "plan", "content": "午後は図書館で本を返す", "importance": 4}
    big = {"type": "plan", "content": "明日の10時に中央カフェでひかりの誕生日を祝う", "importance": 8}
    client.post("/v1/agents/aoi/memories", json=small)
    assert client.get("/v1/agents/aoi/intentions").json()["text"] == ""
    client.post("/v1/agents/aoi/memories", json=big)
    lines = client.get("/v1/agents/aoi/intentions").json()["lines"]
    assert [line["text"] for line in lines] == [big["content"]] and lines[0]["source"] == "memory"
    # Said from a later day, the relative word moves with it.
    assert client.get("/v1/agents/aoi/intentions", params={"day": 2}).json()["text"].startswith("今日の10時")


def test_intentions_stay_few_and_short(client: TestClient) -> None:
    town(client)
    for index in range(5):
        assert (
            whisper(client, text=f"やりたいこと{index}番目。" + "大事なことを忘れない" * 8).status_code == 200
        )
    long_plan = "明日の10時に中央カフェで会議。" + "準備することがたくさんある。" * 40
    client.post("/v1/agents/aoi/memories", json={"type": "plan", "content": long_plan, "importance": 9})
    lines = client.get("/v1/agents/aoi/intentions").json()["lines"]
    assert (
        len(lines) == 4
        and lines[0]["text"].startswith("明日の10時")
        and lines[1]["text"].startswith("やりたいこと4番目")
    )
    assert all(len(line["text"]) <= 160 for line in lines) and lines[0]["text"].endswith("。")


def test_a_whisper_with_a_word_longer_than_a_tag_is_stored(client: TestClient) -> None:
    """A 120-character word is a thought like any other: its tag is cut to a tag's 100 characters (it was a
    500: the word became a tag over the memory's limit)."""
    town(client)
    word = "supercalifragilistic" * 6
    reply = client.post("/v1/agents/aoi/whisper", json={"text": f"I keep thinking of {word} today"})
    assert reply.status_code == 200, reply.text
    memory = client.get("/v1/agents/aoi/memories", params={"q": "supercalifragilistic"}).json()["memories"][0]
    assert word[:100] in memory["tags"] and all(len(tag) <= 100 for tag in memory["tags"])
    katakana = "ア" * 120
    assert client.post("/v1/agents/aoi/whisper", json={"text": f"{katakana}を探す"}).status_code == 200
