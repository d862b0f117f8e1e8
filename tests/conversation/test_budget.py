"""A turn's prompt fits the model's budget, whatever the history's length and however many memories the
speaker has: the oldest lines go first, then memories; the rules never."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from backend.config import Settings
from backend.llm.base import find_layer
from backend.llm.budget import PromptBudgetLLM, count_messages, estimate_tokens
from backend.llm.models import LLMCall
from backend.memory.models import MemoryCreate
from backend.scripted import ScriptedLLM
from tests.conftest import make_client
from tests.conversation.helpers import add_agents, turn
from tests.memory.helpers import call, service

CONTEXT = 2048
MEMORIES = 10_000


def _fill(client: TestClient) -> None:
    """10,000 long memories about the partner, so that retrieval brings long ones to every prompt."""
    texts = [
        f"ひかりと中央カフェで{i}回目に会った。新作のラテや図書館の本のことを長く話した。" * 3
        for i in range(MEMORIES)
    ]
    for start in range(0, MEMORIES, 1000):
        items = [
            MemoryCreate(type="observation", content=t, importance=5) for t in texts[start : start + 1000]
        ]
        call(client, service(client).add_many, "default", "aoi", items)


def test_a_long_conversation_with_10k_memories_never_exceeds_the_budget(
    settings: Settings, scripted: ScriptedLLM
) -> None:
    with make_client(settings, scripted, llm_context_tokens=CONTEXT, memory_dedup=False) as client:
        add_agents(client)
        _fill(client)
        app: Any = client.app
        budgeting = find_layer(app.state.llm, PromptBudgetLLM)
        assert budgeting is not None and budgeting.context_tokens == CONTEXT
        history: list[str] = []
        for index in range(12):  # long lines, as Unity relays them: the history alone is past the budget
            speaker, partner = ("hikari", "aoi") if index % 2 else ("aoi", "hikari")
            name = "ひかり" if speaker == "hikari" else "葵"
            history.append(f"{name}: " + f"{index}番目の長い話。" * 60)
        reply = client.post(
            "/v1/conversation/turn", json=turn("aoi", "hikari", "s-budget", history, time_of_day=15.0)
        )
        assert reply.status_code == 200 and reply.json()["fallback"] is False, reply.text
        dialogue = scripted.calls("dialogue")[-1]
        budget = budgeting.budget(dialogue.options)
        sent = count_messages(dialogue.messages, estimate_tokens)
        assert sent <= budget and dialogue.options.prompt_tokens_counted == sent
        system, user = dialogue.messages[0]["content"], dialogue.messages[1]["content"]
        client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-whole", [], time_of_day=15.0))
        assert scripted.calls("dialogue")[-1].messages[0]["content"] == system  # the rules are never cut
        assert "11番目の長い話" in user and "10番目の長い話" in user  # the last two lines always stay
        assert ": 0番目の長い話" not in user and ": 1番目の長い話" not in user  # the oldest went first
        with Session(app.state.engine) as session:
            traced = session.exec(select(LLMCall).where(LLMCall.purpose == "dialogue")).all()
        assert traced and all(
            row.prompt_tokens_counted and row.prompt_tokens_counted <= budget for row in traced
        )


def test_a_short_turn_is_sent_whole(client: TestClient, scripted: ScriptedLLM) -> None:
    add_agents(client)
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-short", ["ひかり: こんにちは"]))
    dialogue = scripted.calls("dialogue")[-1]
    assert "ひかり: こんにちは" in dialogue.messages[1]["content"]
    assert dialogue.options.prompt_tokens_counted == count_messages(dialogue.messages, estimate_tokens)
