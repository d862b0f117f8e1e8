"""Council and judge replies that echo the prompt (the old templates' 意見/懸念/まとめ, "...") are re-asked
once with the reason, then degrade as any invalid reply does; no prompt shows a JSON example to copy."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from backend.council import prompts
from backend.council.deliberation import OPINION_ATTEMPTS
from backend.scripted import ScriptedLLM
from tests.council.helpers import SISTERS, opinion, traced
from tests.council.test_council_api import hold
from tests.llm.test_echo import assert_no_template

PROPOSAL = {"title": "広場で毎週マルシェを開く", "background": "商店街の声", "proposer": "町長"}
OLD_TEMPLATE = opinion("for", "意見（2〜4文、あなたの口調で）", ["懸念"], ["賛成の条件"])
GOOD = opinion("conditional", "月に一度なら賛成です。準備の負担が心配です。", ["人手"], ["月一回から始める"])
VERDICT = {
    "scores": [
        {"criterion": c, "score": 7, "reason": "よい点があります。"} for c in ("in_character", "coherence")
    ],
    "overall": 7,
    "rationale": "キャラクターらしさも話の一貫性も十分です。",
    "recommended_action": "accept",
}


def text(messages: list[dict[str, str]]) -> str:
    return "\n".join(m["content"] for m in messages)


def test_no_council_prompt_shows_a_template_and_each_describes_its_fields() -> None:
    other = {
        "agent_id": "natsumi",
        "name": "夏海",
        "stance": "against",
        "opinion": "多すぎる",
        "concerns": ["疲労"],
    }
    counts = {"for": 1, "conditional": 0, "against": 1, "abstain": 0}
    aggregation = {"agreements": ["広場は使える"], "differences": ["頻度"], "concerns": []}
    for language in ("ja", "en"):
        built = [
            prompts.opinion_messages(SISTERS[0], PROPOSAL, ["記憶"], language),
            prompts.opinion_messages(SISTERS[0], PROPOSAL, [], language, round_no=2, others_previous=[other]),
            prompts.aggregate_messages(PROPOSAL, [other], counts, language, 1),
            prompts.consensus_messages(
                SISTERS[0], PROPOSAL, [other], aggregation, counts, "revise", language
            ),
            prompts.judge_messages(
                "内容", ["in_character"], "文脈", language, labels={"in_character": "らしさ"}
            ),
        ]
        for messages in built:
            assert_no_template(messages)
    ja = text(prompts.opinion_messages(SISTERS[0], PROPOSAL, [], "ja"))
    assert "- opinion: この提案についてのあなた自身の考えを、あなたの口調で2〜4文" in ja
    assert "- concerns: あなたが心配している点。一つずつ短い文で" in ja
    en = text(prompts.opinion_messages(SISTERS[0], PROPOSAL, [], "en"))
    assert "- stance: your position on the proposal, one of for, conditional, against" in en
    aggregate = text(prompts.aggregate_messages(PROPOSAL, [other], counts, "ja", 1))
    assert "集計: 賛成 1、条件付き賛成 0、反対 1、棄権 0" in aggregate and "- differences: " in aggregate
    consensus = text(
        prompts.consensus_messages(SISTERS[0], PROPOSAL, [other], aggregation, counts, "revise", "en")
    )
    assert "Agreements: 広場は使える\nDifferences: 頻度\nConcerns: (none)" in consensus
    assert "Tally: for 1, conditional 0, against 1, abstain 0\nOutcome: revise" in consensus
    judge = text(prompts.judge_messages("c", ["in_character"], None, "en"))
    assert "- recommended_action: one of accept, revise, reject" in judge


def test_an_opinion_copying_the_template_is_re_asked_once(sisters: TestClient, scripted: ScriptedLLM) -> None:
    scripted.enqueue(OLD_TEMPLATE, GOOD, GOOD, GOOD, purpose="opinion")
    council = hold(sisters, rounds=1)
    opinions = council["record"]["rounds"][0]["opinions"]
    assert [o["opinion"] for o in opinions] == [GOOD["opinion"]] * 3 and not council["record"]["errors"]
    calls = scripted.calls("opinion")
    assert len(calls) == 4
    [reask] = [c for c in calls if c.messages[-1]["content"].startswith("Your last reply was not used")]
    assert (
        "opinion is a placeholder" in reask.messages[-1]["content"]
        and "意見（2〜4文、あなたの口調で）" not in reask.messages[-1]["content"]
    )  # the echo is not quoted back
    assert [t.ok for t in traced(sisters, council["id"], "opinion")].count(False) == 1


def test_members_echoing_twice_abstain_with_the_reason(sisters: TestClient, scripted: ScriptedLLM) -> None:
    calls = 3 * 2 * OPINION_ATTEMPTS  # three members, two calls (the re-ask) per attempt
    scripted.enqueue(*[OLD_TEMPLATE] * calls, purpose="opinion")
    council = hold(sisters, rounds=1)
    opinions = council["record"]["rounds"][0]["opinions"]
    assert {o["stance"] for o in opinions} == {"abstain"} and len(scripted.calls("opinion")) == calls
    assert all("echoes the prompt: opinion is a placeholder" in o["error"] for o in opinions)


def test_an_aggregation_of_placeholders_is_re_asked_then_used(
    sisters: TestClient, scripted: ScriptedLLM
) -> None:
    good = {"agreements": ["広場は使える"], "differences": ["開く頻度"], "concerns": ["人手"]}
    scripted.enqueue({"agreements": ["..."], "differences": [], "concerns": []}, good, purpose="aggregate")
    council = hold(sisters, rounds=1)
    aggregation = council["record"]["rounds"][0]["aggregation"]
    assert {k: aggregation[k] for k in good} == good
    first, second = scripted.calls("aggregate")
    assert (
        "agreements[0] is a placeholder" in second.messages[-1]["content"]
        and "..." not in second.messages[-1]["content"]
    )  # the echo is not quoted back


def test_an_aggregation_echoing_twice_degrades_as_today(sisters: TestClient, scripted: ScriptedLLM) -> None:
    scripted.enqueue(*[opinion("against", "やめておこう", ["疲れる"])] * 3, purpose="opinion")
    scripted.enqueue(
        *[{"agreements": ["agreements"], "differences": [], "concerns": []}] * 2, purpose="aggregate"
    )
    council = hold(sisters, rounds=1)
    aggregation = council["record"]["rounds"][0]["aggregation"]
    assert "agreements[0] repeats the field's name" in aggregation["error"] and aggregation["concerns"] == [
        "疲れる"
    ]
    assert len(scripted.calls("aggregate")) == 2


def test_a_consensus_copying_the_template_is_re_asked_then_falls_back(
    sisters: TestClient, scripted: ScriptedLLM
) -> None:
    good = {
        "summary": "全員が月一回の開催なら受け入れられると話した。",
        "agreements": [],
        "disagreements": [],
        "actions": [],
    }
    template: dict[str, Any] = {"summary": "まとめ", "agreements": [], "disagreements": [], "actions": []}
    scripted.enqueue(template, good, purpose="consensus")
    council = hold(sisters, rounds=1)
    assert council["record"]["consensus"]["summary"] == good["summary"]
    assert (
        "summary is a placeholder" in scripted.calls("consensus")[1].messages[-1]["content"]
        and "まとめ" not in scripted.calls("consensus")[1].messages[-1]["content"]
    )  # the echo is not quoted back
    scripted.enqueue(template, {**template, "summary": "…"}, purpose="consensus")
    again = hold(sisters, rounds=1)
    consensus = again["record"]["consensus"]
    assert consensus["summary"] == "" and "summary is a placeholder" in consensus["error"]
    assert len(scripted.calls("consensus")) == 4


def test_a_judge_rationale_that_echoes_is_re_asked_then_503(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    body = {
        "content": "いらっしゃい！新しいハーブティーがあるの。",
        "criteria": ["in_character", "coherence"],
    }
    scripted.enqueue({**VERDICT, "rationale": "..."}, VERDICT, purpose="judge")
    response = client.post("/v1/judge", json=body)
    assert response.status_code == 200 and response.json()["rationale"] == VERDICT["rationale"]
    assert "rationale is a placeholder" in scripted.calls("judge")[1].messages[-1]["content"]
    assert_no_template(scripted.calls("judge")[0].messages)
    scripted.enqueue(
        {**VERDICT, "rationale": "rationale"}, {**VERDICT, "rationale": "<理由>"}, purpose="judge"
    )
    failed = client.post("/v1/judge", json=body)
    assert failed.status_code == 503 and "rationale is a placeholder" in failed.json()["error"]["message"]
    assert len(scripted.calls("judge")) == 4
