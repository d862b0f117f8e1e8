"""A speaker's standing memories: chosen at its first turn of a conversation and shown on every later one in
the same order, so its turn prompts share everything up to the end of the history (a prompt cache reads only
the new lines and the tail); what the last lines bring up comes after the history, and the conversation's
own lines never come back as memories."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.conversation.models import Conversation
from backend.conversation.prompts import HISTORY_CLOSE
from backend.scripted import ScriptedLLM
from tests.conftest import drain
from tests.conversation.helpers import add_agents, turn

PAST = ["公園で桜が咲き始めた", "図書館で星の図鑑を借りた", "ひかりとケーキを焼いた", "雨の日に傘を忘れた"]


def _remember(client: TestClient) -> None:
    for hour, text in enumerate(PAST, start=8):
        client.post("/v1/agents/aoi/memories", json={"type": "observation", "content": text, "importance": 4,
                                                      "day": 1, "time_of_day": hour})  # fmt: skip


def _talk(client: TestClient, scripted: ScriptedLLM, lines: int) -> list[str]:
    """`lines` turns of 葵 and ひかり in one session (each waits for the previous line's memories)."""
    history: list[str] = []
    for index in range(lines):
        speaker, target = ("aoi", "hikari") if index % 2 == 0 else ("hikari", "aoi")
        scripted.enqueue({"dialogue": f"{PAST[index % 4][:4]}の話をしよう、その{index}", "emotion": "happy",
                          "is_conversation_end": False}, purpose="dialogue")  # fmt: skip
        reply = client.post("/v1/conversation/turn", json=turn(speaker, target, "s-stand", history,
                                                                time_of_day=12 + index / 10)).json()  # fmt: skip
        history.append(f"{'葵' if speaker == 'aoi' else 'ひかり'}: {reply['dialogue']}")
        drain(client)
    return [
        call.messages[-1]["content"] for call in scripted.calls("dialogue") if call.options.agent_id == "aoi"
    ]


def test_a_speakers_turn_prompts_share_all_up_to_the_end_of_the_history(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    _remember(client)
    prompts = _talk(client, scripted, 5)  # 葵 speaks lines 0, 2 and 4
    assert len(prompts) == 3
    for earlier, later in zip(prompts[1:-1], prompts[2:], strict=True):  # turn 0 has no history yet
        shared = earlier[: earlier.index(HISTORY_CLOSE)]  # the history block without its close
        assert later.startswith(shared)
    memories = prompts[0].split("What you remember that may matter (oldest first):\n")[1].split("\n")
    shown = [line[2:] for line in memories if line.startswith("- ")]
    assert shown == [text for text in PAST if text in shown] and len(shown) == len(PAST)  # oldest first


def test_standing_memories_are_kept_with_the_conversation_and_exclude_its_own_lines(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    _remember(client)
    prompts = _talk(client, scripted, 5)
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        conv = session.exec(select(Conversation).where(Conversation.session_id == "s-stand")).one()
    assert set(conv.standing) == {"aoi", "hikari"} and len(conv.standing["aoi"]) == len(PAST)
    assert conv.memory_watermark is not None
    assert all(memory_id < conv.memory_watermark for memory_id in conv.standing["aoi"])
    last = prompts[-1]
    standing = last[: last.index(HISTORY_CLOSE)].split("(quoted data)")[0]
    assert "その0" not in standing and "その1" not in standing  # the conversation's lines are history only
