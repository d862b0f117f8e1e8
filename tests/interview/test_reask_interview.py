"""Nothing of the re-ask reaches an interview answer: an answer that copies the instruction (or says it in
other words) falls back to "I don't remember"; a paraphrased field description alone is re-asked, and a
label before a real answer is cut off. Japanese and English."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from backend.interview.prompts import FALLBACK_ANSWERS
from backend.llm.reask import REASK
from backend.scripted import ScriptedLLM
from tests.interview.helpers import EMMA, HIKARI, add_agents, ask

EN_ANSWER = "Liam is throwing a party at the park tomorrow at 7."
JA_ANSWER = "葵が明日の19時に公園でパーティーをするって言ってたよ。"


@pytest.mark.parametrize(
    "leak",
    [
        "Your previous reply could not be used, Liam is throwing a party.",
        REASK.format(
            reason="its answer is only a label or a description of the field, not an answer: write it anew, in your own words"
        ),
        "My last answer was not usable. Liam is throwing a party.",
    ],
)
def test_an_answer_that_repeats_the_instruction_falls_back(
    client: TestClient, scripted: ScriptedLLM, leak: str
) -> None:
    add_agents(client, EMMA)
    scripted.enqueue({"answer": "Emma's spoken reply to the interviewer's question:"}, {"answer": leak})
    reply = ask(client, "emma", "What do you know about the party?")
    assert reply["fallback"] and reply["answer"] == FALLBACK_ANSWERS["en"]
    reask = scripted.calls("interview")[1].messages[-1]["content"]
    assert "its answer is only a label" in reask and "spoken reply to the interviewer" not in reask


@pytest.mark.parametrize(
    ("agent", "first", "second", "expected"),
    [
        (
            EMMA,
            "Emma's spoken reply to the interviewer's question:",
            f"Emma's answer: {EN_ANSWER}",
            EN_ANSWER,
        ),
        (HIKARI, "（ひかりのセリフ）", f"ひかりの返事：「{JA_ANSWER}」", JA_ANSWER),
        (HIKARI, "インタビュアーへのひかりの答え：", JA_ANSWER, JA_ANSWER),
    ],
)
def test_a_description_alone_is_re_asked_and_a_label_cut_off(
    client: TestClient, scripted: ScriptedLLM, agent: dict[str, str], first: str, second: str, expected: str
) -> None:
    add_agents(client, agent)
    scripted.enqueue({"answer": first}, {"answer": second})
    reply = ask(client, agent["id"], "パーティーのこと、何か知ってる？")
    assert not reply["fallback"] and reply["answer"] == expected
    assert len(scripted.calls("interview")) == 2
