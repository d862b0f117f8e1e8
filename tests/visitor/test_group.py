"""Conversations of three or more: turns go round, everyone remembers every line, a goodbye removes one."""

from __future__ import annotations

from fastapi.testclient import TestClient

from backend.scripted import ScriptedLLM
from tests.conftest import drain
from tests.conversation.helpers import AOI, HIKARI, add_agents, turn
from tests.visitor.helpers import REN, YUKI, dialogue_prompts, say, visitor_line

GROUP = ["aoi", "hikari", "ren"]
NAMES = {"aoi": "葵", "hikari": "ひかり", "ren": "蓮"}
LINES = [
    "ひかりさん、今日のおすすめは何ですか？",
    "今日は桜のラテだよ。蓮さんも飲む？",
    "いただこう。花の香りがするね。",
    "蓮さんのお店の桜も見に行きたいです。",
]


def _say(
    client: TestClient,
    scripted: ScriptedLLM,
    speaker: str,
    target: str,
    history: list[str],
    line: str,
    session_id: str = "g-1",
    end: bool = False,
) -> dict:
    scripted.enqueue(say(line, end=end), purpose="dialogue")
    reply = client.post(
        "/v1/conversation/turn", json=turn(speaker, target, session_id, history, participants=GROUP)
    )
    assert reply.status_code == 200, reply.text
    history.append(f"{NAMES[speaker]}: {reply.json()['dialogue']}")
    return reply.json()


def test_a_group_of_three_takes_turns_and_each_remembers_every_line(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client, AOI, HIKARI, REN)
    history: list[str] = []
    first = _say(client, scripted, "aoi", "hikari", history, LINES[0])
    assert first["participants"] == GROUP and first["next_speaker"] == "hikari"  # named in the line
    second = _say(client, scripted, "hikari", "aoi", history, LINES[1])
    assert second["next_speaker"] == "ren"
    third = _say(client, scripted, "ren", "hikari", history, LINES[2])
    # Nobody named: the one addressed answers (aoi spoke two lines ago, within the round).
    assert third["next_speaker"] == "hikari"
    _say(client, scripted, "aoi", "ren", history, LINES[3])
    # The group is in the prompt: whom the speaker talks with, and to whom its line goes.
    moment = dialogue_prompts(scripted)[-1][-1]["content"]
    assert "talking in a group with 蓮 and ひかり" in moment and "addressed to 蓮" in moment
    drain(client)
    for agent in GROUP:
        remembered = " ".join(
            m["content"] for m in client.get(f"/v1/agents/{agent}/memories").json()["memories"]
        )
        for line in LINES:
            assert line in remembered, (agent, line)
    listed = client.get("/v1/conversations", params={"agent_id": "ren"}).json()["conversations"]
    assert [c["session_id"] for c in listed] == ["g-1"]  # a third participant finds its group


def test_one_goodbye_leaves_the_other_two_talking(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client, AOI, HIKARI, REN)
    history: list[str] = []
    _say(client, scripted, "aoi", "hikari", history, LINES[0])
    _say(client, scripted, "hikari", "aoi", history, LINES[1])
    gone = _say(client, scripted, "ren", "hikari", history, "そろそろ店に戻るよ。またね。")
    assert gone["left"] == ["ren"] and not gone["is_conversation_end"]
    assert gone["participants"] == ["aoi", "hikari"] and gone["next_speaker"] == "hikari"
    # A goodbye said back to the one who left is not a leaving.
    back = _say(client, scripted, "hikari", "ren", history, "うん、またね蓮さん！")
    assert back["left"] == [] and not back["is_conversation_end"] and back["next_speaker"] == "aoi"
    # The one who left cannot speak in it again.
    again = client.post("/v1/conversation/turn", json=turn("ren", "aoi", "g-1", history, participants=GROUP))
    assert again.status_code == 409 and again.json()["error"]["details"]["field"] == "agent_id"
    on = _say(client, scripted, "aoi", "hikari", history, "ラテ、もう一杯ください。")
    assert not on["is_conversation_end"] and on["next_speaker"] == "hikari"
    last = _say(client, scripted, "hikari", "aoi", history, "はい、どうぞ。じゃあね！")
    assert last["is_conversation_end"] and last["end_reason"] == "farewell" and last["left"] == ["hikari"]
    drain(client)
    detail = client.get("/v1/conversations/g-1").json()
    assert detail["ended"] and [p["left"] for p in detail["participants"]] == [False, True, True]
    reflections = [
        m
        for agent in GROUP
        for m in client.get(f"/v1/agents/{agent}/memories").json()["memories"]
        if m["type"] == "reflection"
    ]
    assert len(reflections) == 3  # each participant reflects on its own


def test_a_visitor_joins_a_group_and_says_goodbye(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client, AOI, HIKARI)
    members = ["aoi", "hikari", YUKI]
    opening = client.post(
        "/v1/conversation/turn", json=turn("aoi", "hikari", "g-v", [], participants=["aoi", "hikari"])
    )
    history = [f"葵: {opening.json()['dialogue']}"]
    joined = client.post(
        "/v1/conversation/player-turn",
        json=visitor_line("g-v", "こんにちは、混ぜてください！", history, participants=members),
    )
    assert joined.status_code == 200, joined.text
    assert joined.json()["participants"] == members
    history += [joined.json()["player_line"], f"葵: {joined.json()['dialogue']}"]
    bye = client.post(
        "/v1/conversation/player-turn",
        json=visitor_line("g-v", "じゃあ、またね！", history, participants=members),
    )
    body = bye.json()
    assert not body["is_conversation_end"] and body["participants"] == ["aoi", "hikari"]
    drain(client)
    heard = " ".join(m["content"] for m in client.get("/v1/agents/hikari/memories").json()["memories"])
    assert "ユキ" not in heard or "yuki" in heard  # an unregistered visitor is named by id
    assert "yukiが「こんにちは、混ぜてください！」と言った" in heard


def test_bad_groups_are_refused_with_the_field(client: TestClient) -> None:
    add_agents(client, AOI, HIKARI, REN)
    dup = client.post(
        "/v1/conversation/turn", json=turn("aoi", "hikari", "g-b", [], participants=["aoi", "hikari", "aoi"])
    )
    assert dup.status_code == 422 and "repeat" in dup.text
    missing = client.post(
        "/v1/conversation/turn", json=turn("aoi", "hikari", "g-b", [], participants=["aoi", "ren"])
    )
    assert missing.status_code == 422 and "target_id" in missing.text
    seven = [f"a{i}" for i in range(5)] + ["aoi", "hikari"]
    assert (
        client.post(
            "/v1/conversation/turn", json=turn("aoi", "hikari", "g-b", [], participants=seven)
        ).status_code
        == 422
    )
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "g-p", []))
    outsider = client.post("/v1/conversation/turn", json=turn("ren", "aoi", "g-p", ["葵: やあ"]))
    assert outsider.status_code == 409 and "participants" in outsider.json()["error"]["message"]
    ghost = client.post(
        "/v1/conversation/turn",
        json=turn("aoi", "hikari", "g-g", [], participants=["aoi", "hikari", "ghost"]),
    )
    assert ghost.status_code == 404


def test_listing_by_agent_finds_only_its_own_groups(client: TestClient) -> None:
    """A third member is found in the participants list; '_' in an id is no wildcard there."""
    add_agents(client, AOI, HIKARI, {**REN, "id": "r_n"}, {**REN, "id": "rxn", "name": "レン"})
    client.post(
        "/v1/conversation/turn", json=turn("aoi", "hikari", "g-x", [], participants=["aoi", "hikari", "rxn"])
    )
    client.post(
        "/v1/conversation/turn", json=turn("aoi", "hikari", "g-u", [], participants=["aoi", "hikari", "r_n"])
    )
    by = {
        agent: [
            c["session_id"]
            for c in client.get("/v1/conversations", params={"agent_id": agent}).json()["conversations"]
        ]
        for agent in ("rxn", "r_n")
    }
    assert by == {"rxn": ["g-x"], "r_n": ["g-u"]}
