"""The re-ask instruction never reaches Unity: a model that copies its partner, then copies the re-ask
(word for word or in other words), gets the in-character fallback line, plain and streamed; a labelled line
("Sam's line: ...", "（葵のセリフ）...") reaches Unity without its label."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from backend.conversation.rules import FALLBACK_LINES
from backend.llm.reask import REASK, leaks_instruction
from backend.scripted import ScriptedLLM
from tests.conversation.helpers import EMMA, LIAM, add_agents, turn
from tests.conversation.test_echo_turn import ASKED, say
from tests.conversation.test_stream import events

COPIED = REASK.format(
    reason="its dialogue repeats a line of the prompt word for word: write it anew, in your own words"
)
ASKED_EN = "Liam: Tomorrow at 7pm I am throwing a party at the Corner Cafe!"


@pytest.mark.parametrize(
    "leak",
    [COPIED, "前の返事は使えなかったみたい、ごめんね。", "Your previous reply could not be used, sorry."],
)
def test_a_copied_instruction_falls_back_instead(
    client: TestClient, scripted: ScriptedLLM, leak: str
) -> None:
    add_agents(client)
    scripted.enqueue(say("今日は何してるの？図書館？"), say(leak), purpose="dialogue")
    reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-leak", [ASKED])).json()
    assert reply["fallback"] and reply["dialogue"] in FALLBACK_LINES["ja"]
    first, second = scripted.calls("dialogue")
    assert second.messages[-1]["content"] == COPIED  # the copy was of the re-ask itself
    assert "今日は何してるの" not in second.messages[-1]["content"]
    assert second.options.temperature is not None and second.options.banned_openings


def test_a_streamed_turn_never_shows_the_instruction(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client, EMMA, LIAM)
    scripted.enqueue(say(ASKED_EN.split(": ", 1)[1]), say(COPIED), purpose="dialogue")
    evs = events(client, turn("emma", "liam", "s-leak-st", [ASKED_EN]))
    shown = [body.get("text", "") for name, body in evs if name == "delta"]
    assert not any(leaks_instruction(text) for text in shown)
    assert evs[-1][1]["fallback"] and evs[-1][1]["dialogue"] in FALLBACK_LINES["en"]


@pytest.mark.parametrize(
    ("said", "line"),
    [
        ("Emma's line: A party? I'll be there!", "A party? I'll be there!"),
        ("dialogue: Sure, Liam.", "Sure, Liam."),
    ],
)
def test_a_labelled_line_reaches_unity_without_its_label(
    client: TestClient, scripted: ScriptedLLM, said: str, line: str
) -> None:
    add_agents(client, EMMA, LIAM)
    scripted.enqueue(say(said), purpose="dialogue")
    reply = client.post("/v1/conversation/turn", json=turn("emma", "liam", "s-label", [ASKED_EN])).json()
    assert reply["dialogue"] == line and not reply["fallback"]
    assert len(scripted.calls("dialogue")) == 1


def test_a_japanese_label_alone_is_re_asked(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    good = "図書館で地図を見てたの。"
    scripted.enqueue(say("（葵のセリフ）"), say(f"葵の返事：「{good}」"), purpose="dialogue")
    reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-label-ja", [ASKED])).json()
    assert reply["dialogue"] == good and not reply["fallback"]
    assert "its dialogue is only a label" in scripted.calls("dialogue")[1].messages[-1]["content"]
