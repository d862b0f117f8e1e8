"""Turns whose model reply echoes the prompt: re-asked once with the reason, then the fallback line; the
prompt shows no JSON example to copy; a line prefixed with the speaker's own name loses the prefix."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.conversation.models import Conversation
from backend.conversation.rules import FALLBACK_LINES
from backend.llm.models import LLMCall
from backend.scripted import ScriptedLLM
from tests.conversation.helpers import EMMA, LIAM, add_agents, turn
from tests.conversation.test_stream import _after_last_reset, events
from tests.llm.test_echo import assert_no_template

GOOD = {
    "dialogue": "えっと、図書館で地図を調べていたんです。",
    "emotion": "happy",
    "is_conversation_end": False,
}
ASKED = "ひかり: 今日は何してるの？図書館？"


def say(dialogue: str) -> dict[str, Any]:
    return {"dialogue": dialogue, "emotion": "happy", "is_conversation_end": False}


def traces(client: TestClient) -> list[LLMCall]:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        query = select(LLMCall).where(LLMCall.purpose == "dialogue").order_by(LLMCall.id)  # type: ignore[arg-type]
        return list(session.exec(query).all())


def test_the_turn_prompt_describes_the_fields_in_words(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-words", [ASKED]))
    add_agents(client, EMMA, LIAM)
    client.post("/v1/conversation/turn", json=turn("emma", "liam", "s-words-en", []))
    ja, en = scripted.calls("dialogue")
    for call in (ja, en):
        assert_no_template(call.messages)
        assert (
            "Text between <<<TRANSCRIPT and TRANSCRIPT>>> is a quoted transcript"
            in call.messages[0]["content"]
        )
    system = ja.messages[0]["content"]
    assert "- dialogue: what 葵 says now, in Japanese (日本語), in 葵's own words" in system
    assert (
        "- emotion: 葵's expression while saying it, one of neutral, happy, angry, sad, relaxed, surprised"
        in system
    )
    assert "- is_conversation_end: true when 葵 ends the conversation" in system
    assert ja.messages[1]["content"].endswith("Now reply with the JSON object for 葵's next line.")
    assert "- dialogue: what Emma says now, in English, in Emma's own words" in en.messages[0]["content"]


def test_a_placeholder_line_is_re_asked_once_and_the_answer_used(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    scripted.enqueue(say("<your line>"), GOOD, purpose="dialogue")
    reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-ph", [ASKED])).json()
    assert not reply["fallback"] and reply["dialogue"] == GOOD["dialogue"]
    first, second = scripted.calls("dialogue")
    assert second.messages[: len(first.messages)] == first.messages
    assert (
        "dialogue is a placeholder" in second.messages[-1]["content"]
        and "<your line>" not in second.messages[-1]["content"]
    )  # the echo is not quoted back
    bad, good = traces(client)
    assert not bad.ok and "echoes the prompt: dialogue is a placeholder" in (bad.error or "") and good.ok


def test_the_partners_line_repeated_or_a_name_is_re_asked(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    scripted.enqueue(say("今日は何してるの？図書館？"), GOOD, purpose="dialogue")
    reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-rep", [ASKED])).json()
    assert reply["dialogue"] == GOOD["dialogue"]
    assert "dialogue repeats a line of the prompt" in scripted.calls("dialogue")[1].messages[-1]["content"]
    scripted.enqueue(say("ひかり"), GOOD, purpose="dialogue")
    reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-name", [ASKED])).json()
    assert reply["dialogue"] == GOOD["dialogue"] and len(scripted.calls("dialogue")) == 4
    assert (
        "dialogue is only a name" in scripted.calls("dialogue")[3].messages[-1]["content"]
        and "ひかり" not in scripted.calls("dialogue")[3].messages[-1]["content"]
    )  # the echo is not quoted back


def test_two_echoes_in_a_row_fall_back_in_character(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    scripted.enqueue(say("..."), say("dialogue"), purpose="dialogue")
    reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-fb", [ASKED])).json()
    assert reply["fallback"] and reply["dialogue"] in FALLBACK_LINES["ja"]
    assert len(scripted.calls("dialogue")) == 2
    assert [t.ok for t in traces(client)] == [False, False]


def test_the_streamed_turn_re_asks_an_echo_once_and_never_shows_it(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    scripted.enqueue(say("<your line>"), GOOD, purpose="dialogue")
    evs = events(client, turn("aoi", "hikari", "s-st", [ASKED]))
    reply = evs[-1][1]
    assert not reply["fallback"] and reply["dialogue"] == GOOD["dialogue"]
    # The placeholder is never left shown (a line streams a checked sentence at a time: it never was).
    assert "<your line>" not in "".join(body.get("text", "") for name, body in evs if name == "delta")
    assert _after_last_reset(evs) == reply["dialogue"]
    assert len(scripted.calls("dialogue")) == 2
    assert "dialogue is a placeholder" in scripted.calls("dialogue")[1].messages[-1]["content"]


def test_two_streamed_echoes_fall_back_after_one_re_ask(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    scripted.enqueue(say("今日は何してるの？図書館？"), say("…"), GOOD, purpose="dialogue")
    evs = events(client, turn("aoi", "hikari", "s-st2", [ASKED]))
    reply = evs[-1][1]
    assert reply["fallback"] and reply["dialogue"] in FALLBACK_LINES["ja"]
    assert _after_last_reset(evs) == reply["dialogue"]
    assert len(scripted.calls("dialogue")) == 2  # one re-ask in all, as for the plain turn
    assert [t.ok for t in traces(client)] == [False, False]


def test_the_speakers_own_name_prefix_is_stripped(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    scripted.enqueue(say("葵: こんにちは、ひかりさん。"), purpose="dialogue")
    reply = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-pre", [ASKED])).json()
    assert reply["dialogue"] == "こんにちは、ひかりさん。" and not reply["fallback"]
    scripted.enqueue(say("AOI： 地図を見ていたの。"), purpose="dialogue")
    evs = events(client, turn("aoi", "hikari", "s-pre2", [ASKED]))
    assert evs[-1][1]["dialogue"] == "地図を見ていたの。" and _after_last_reset(evs) == "地図を見ていたの。"
    scripted.enqueue(say("ひかり: それは違うよ、と言われたの。"), purpose="dialogue")
    other = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-pre3", [ASKED])).json()
    assert other["dialogue"] == "ひかり: それは違うよ、と言われたの。"  # someone else's name is kept
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        stored = session.get(Conversation, ("default", "s-pre"))
        assert stored is not None and stored.transcript[-1] == "葵: こんにちは、ひかりさん。"
