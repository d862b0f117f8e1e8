"""The council over HTTP: background job, isolation, later rounds, early stop, records, abstentions."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from backend.council.deliberation import OPINION_ATTEMPTS
from backend.council.outcome import OUTCOMES, decide_outcome, supporting_conditions, tally
from backend.errors import LLMReplyError, LLMUnavailable
from backend.scripted import ScriptedLLM
from tests.conftest import drain
from tests.council.helpers import SISTERS, opinion, prompt_text, traced

MEMBER_IDS = [s["id"] for s in SISTERS]
NAMES = {s["id"]: s["name"] for s in SISTERS}


def hold(client: TestClient, **body: Any) -> dict[str, Any]:
    body.setdefault("title", "広場で毎週マルシェを開く")
    response = client.post("/v1/council", json=body)
    assert response.status_code == 202, response.text
    accepted = response.json()
    assert accepted["status"] == "pending"
    drain(client)
    council = client.get(f"/v1/council/{accepted['id']}").json()
    assert council["status"] == "done", council
    return council


def test_post_answers_202_at_once_and_the_council_completes(sisters: TestClient) -> None:
    response = sisters.post("/v1/council", json={"title": "図書館を夜まで開ける", "background": "学生の声"})
    assert response.status_code == 202
    accepted = response.json()
    assert accepted["number"] == 1 and accepted["label"] == "No.001"
    drain(sisters)
    council = sisters.get(f"/v1/council/{accepted['id']}").json()
    assert council["status"] == "done" and council["outcome"] in OUTCOMES
    record = council["record"]
    # default members: the world's council, moderator first
    assert council["members"] == ["yukino", "haruka", "natsumi"] and council["moderator"] == "yukino"
    final = record["rounds"][-1]["opinions"]
    assert [o["agent_id"] for o in final] == council["members"]
    stances = [o["stance"] for o in final]
    assert record["tally"] == tally(stances)
    assert council["outcome"] == decide_outcome(stances, supporting_conditions(final))
    assert record["consensus"]["summary"]


def test_every_call_is_traced_with_member_round_and_stage(sisters: TestClient) -> None:
    council = hold(sisters, rounds=1)
    calls = traced(sisters, council["id"])
    opinions = [c for c in calls if c.stage == "opinion"]
    assert sorted(c.agent_id for c in opinions) == sorted(MEMBER_IDS)
    assert all(c.round == 1 and c.purpose == "opinion" for c in opinions)
    aggregate = [c for c in calls if c.stage == "aggregate"]
    assert len(aggregate) == 1 and aggregate[0].round == 1
    consensus = [c for c in calls if c.stage == "consensus"]
    assert len(consensus) == 1 and consensus[0].agent_id == "yukino"


def test_round_one_prompts_hold_no_other_members_words(sisters: TestClient, scripted: ScriptedLLM) -> None:
    scripted.enqueue(
        opinion("for", "噴水の横に屋台を並べれば、きっと賑わう。", ["雨の日の屋根がない"]),
        opinion("against", "毎週は多すぎる。準備する人が疲れ切ってしまう。", ["ボランティアの疲労"]),
        opinion("conditional", "月に一度から始めるなら賛成できる。", ["出店料の設定"], ["月一回の試行"]),
        purpose="opinion",
    )
    council = hold(sisters, rounds=2)
    first = {o["agent_id"]: o for o in council["record"]["rounds"][0]["opinions"]}
    calls = traced(sisters, council["id"], "opinion")
    assert len(calls) == 3
    for call in calls:
        text = prompt_text(call)
        assert call.round == 1
        assert NAMES[call.agent_id] in text  # its own persona
        for other_id, other in first.items():
            if other_id == call.agent_id:
                continue
            assert other["opinion"] not in text
            assert NAMES[other_id] not in text
            for concern in other["concerns"] + other["conditions"]:
                assert concern not in text
        # nobody is told to side with the proposer
        assert "賛成する義務はありません" in text


def test_round_two_prompts_hold_every_other_members_round_one_opinion(
    sisters: TestClient, scripted: ScriptedLLM
) -> None:
    scripted.enqueue(
        opinion("for", "噴水の横に屋台を並べれば、きっと賑わう。", ["雨の日の屋根がない"]),
        opinion("against", "毎週は多すぎる。準備する人が疲れ切ってしまう。", ["ボランティアの疲労"]),
        opinion("conditional", "月に一度から始めるなら賛成できる。", ["出店料の設定"], ["月一回の試行"]),
        purpose="opinion",
    )
    council = hold(sisters, rounds=2)
    rounds = council["record"]["rounds"]
    assert len(rounds) == 2 and council["record"]["early_stop"] is False
    first = {o["agent_id"]: o for o in rounds[0]["opinions"]}
    responses = traced(sisters, council["id"], "response")
    assert sorted(c.agent_id for c in responses) == sorted(MEMBER_IDS)
    for call in responses:
        text = prompt_text(call)
        assert call.round == 2
        for other_id, other in first.items():
            assert other["opinion"] in text  # the others' and its own previous answer
            if other_id != call.agent_id:
                assert NAMES[other_id] in text


def test_council_stops_early_when_every_stance_is_the_same(
    sisters: TestClient, scripted: ScriptedLLM
) -> None:
    scripted.enqueue(*(opinion("for", f"賛成です（{i}）") for i in range(3)), purpose="opinion")
    council = hold(sisters, rounds=3)
    record = council["record"]
    assert len(record["rounds"]) == 1 and record["early_stop"] is True
    assert council["outcome"] == "adopt"
    assert traced(sisters, council["id"], "response") == []


def test_unanimous_against_reconsiders(sisters: TestClient, scripted: ScriptedLLM) -> None:
    scripted.enqueue(*(opinion("against", f"反対です（{i}）", ["費用"]) for i in range(3)), purpose="opinion")
    council = hold(sisters, rounds=2)
    assert council["outcome"] == "reconsider" and len(council["record"]["rounds"]) == 1


def test_a_split_council_runs_every_round_and_then_revises(
    sisters: TestClient, scripted: ScriptedLLM
) -> None:
    split = [opinion("for", "やろう"), opinion("against", "やめよう"), opinion("against", "まだ早い")]
    scripted.enqueue(*split, purpose="opinion")
    # Round 2 keeps the stances in new words (a quoted opinion repeated verbatim is an echo, re-asked).
    again = [
        opinion("for", "やっぱりやろう"),
        opinion("against", "やはりやめよう"),
        opinion("against", "今はまだ早い"),
    ]
    scripted.enqueue(*again, purpose="response")
    council = hold(sisters, rounds=2)
    assert len(council["record"]["rounds"]) == 2
    assert council["record"]["rounds"][0]["outcome"] == "another_round"
    assert council["outcome"] == "revise"


def test_a_failing_member_abstains_and_the_council_completes(
    sisters: TestClient, scripted: ScriptedLLM
) -> None:
    # Refused on both of its calls (OPINION_ATTEMPTS): the member abstains.
    scripted.enqueue(*[LLMReplyError("the model answered nonsense")] * OPINION_ATTEMPTS, purpose="opinion")
    council = hold(sisters, rounds=1)
    opinions = council["record"]["rounds"][0]["opinions"]
    abstained = [o for o in opinions if o["stance"] == "abstain"]
    assert len(abstained) == 1
    assert "llm_bad_reply" in abstained[0]["error"] and "nonsense" in abstained[0]["error"]
    # Never a blank opinion: the abstention is a sentence, marked as not the model's.
    assert abstained[0]["fallback"] is True and abstained[0]["opinion"].endswith("。")
    assert all(o["opinion"].strip() for o in opinions)
    assert council["record"]["tally"]["abstain"] == 1
    voting = [o["stance"] for o in opinions if o["stance"] != "abstain"]
    assert council["outcome"] == decide_outcome(voting, supporting_conditions(opinions))
    markdown = sisters.get(f"/v1/council/{council['id']}/record.md").text
    assert "棄権" in markdown


def test_an_opinion_of_one_word_is_re_asked_and_a_japanese_one_is_not(
    sisters: TestClient, scripted: ScriptedLLM
) -> None:
    """SmolLM2 answered a council "good": an English opinion under three words is re-asked with the reason;
    「やろう」 is a whole Japanese opinion (no spaces to count words by)."""
    scripted.enqueue(
        opinion("for", "good"), opinion("for", "I think it would bring the square to life."),
        opinion("for", "やろう"), opinion("against", "まだ早い"), purpose="opinion",
    )  # fmt: skip
    council = hold(sisters, rounds=1)
    said = [o["opinion"] for o in council["record"]["rounds"][0]["opinions"]]
    assert "good" not in said and "I think it would bring the square to life." in said and "やろう" in said
    reasked = [c for c in scripted.calls("opinion") if "not what you think" in c.messages[-1]["content"]]
    assert len(reasked) == 1 and "good" not in reasked[0].messages[-1]["content"]  # the reason, not the reply


def test_a_member_refused_twice_is_asked_once_more_with_a_seed_of_its_own(
    sisters: TestClient, scripted: ScriptedLLM
) -> None:
    """SmolLM2 wrote "good" on a call and on its re-ask: the member is called again (a fresh sample) before
    it abstains; a model that is down is not called again."""
    scripted.enqueue(
        opinion("for", "good"), opinion("for", "Agreed"), opinion("for", "It would bring the square to life."),
        purpose="opinion",
    )  # fmt: skip
    council = hold(sisters, rounds=1)
    said = [o["opinion"] for o in council["record"]["rounds"][0]["opinions"]]
    assert "It would bring the square to life." in said and council["record"]["tally"]["abstain"] == 0
    seeds = [c.options.seed for c in scripted.calls("opinion")[:3]]
    assert seeds[2] is not None and seeds[2] != seeds[0]


def test_a_member_whose_model_is_down_abstains_without_another_call(
    sisters: TestClient, scripted: ScriptedLLM
) -> None:
    tries = sisters.app.state.settings.llm_max_retries + 1  # type: ignore[attr-defined]
    scripted.enqueue(*[LLMUnavailable("connection refused")] * tries, purpose="opinion")
    council = hold(sisters, rounds=1)
    abstained = [o for o in council["record"]["rounds"][0]["opinions"] if o["stance"] == "abstain"]
    assert len(abstained) == 1 and "connection refused" in abstained[0]["error"]
    # Another attempt would have found the queue empty and got the scripted writer's opinion: abstaining on
    # exactly the retries' errors is the proof that a model that is down is not called again.
    assert len(scripted.calls("opinion")) == 2  # the other two members' answers


def test_every_member_failing_still_completes(sisters: TestClient, scripted: ScriptedLLM) -> None:
    scripted.enqueue(*(LLMReplyError("down") for _ in range(3 * OPINION_ATTEMPTS)), purpose="opinion")
    council = hold(sisters, rounds=1)
    assert council["record"]["tally"]["abstain"] == 3
    assert council["outcome"] == "revise"


def test_failed_aggregation_and_consensus_degrade_with_the_error(
    sisters: TestClient, scripted: ScriptedLLM
) -> None:
    scripted.enqueue(
        opinion("for", "いいと思う", ["屋根がない"]),
        opinion("conditional", "試してみたい", [], ["試行"]),
        opinion("against", "やめておこう", ["疲れる"]),
        purpose="opinion",
    )
    scripted.enqueue(LLMReplyError("bad aggregation"), purpose="aggregate")
    scripted.enqueue(LLMReplyError("bad consensus"), purpose="consensus")
    council = hold(sisters, rounds=1)
    aggregation = council["record"]["rounds"][0]["aggregation"]
    assert "bad aggregation" in aggregation["error"]
    assert set(aggregation["concerns"]) == {"屋根がない", "疲れる"}
    consensus = council["record"]["consensus"]
    assert "bad consensus" in consensus["error"] and consensus["actions"] == ["試行"]
    assert council["outcome"] == "adopt_with_conditions"
    assert {e["stage"] for e in council["record"]["errors"]} == {"aggregate", "consensus"}


def test_markdown_record_has_every_member_stance_and_the_outcome(sisters: TestClient) -> None:
    council = hold(sisters, title="図書館を夜十時まで開ける", category="施設", proposer="町長", rounds=2)
    response = sisters.get(f"/v1/council/{council['id']}/record.md")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/markdown")
    markdown = response.text
    assert markdown.startswith("# 評議会 No.001: 図書館を夜十時まで開ける")
    assert "町長" in markdown and "施設" in markdown
    words = {"for": "賛成", "conditional": "条件付き賛成", "against": "反対"}
    for entry in council["record"]["rounds"][-1]["opinions"]:
        assert f"| {entry['name']} | {words[entry['stance']]} |" in markdown
        assert entry["opinion"] in markdown
    assert "第1ラウンド" in markdown and "合意形成" in markdown


def test_english_council_renders_an_english_record(client: TestClient) -> None:
    from tests.council.helpers import add_agents

    add_agents(
        client,
        [
            {
                "id": "ann",
                "name": "Ann",
                "language": "en",
                "traits": ["careful", "analytical"],
                "council_role": "moderator",
            },
            {
                "id": "bea",
                "name": "Bea",
                "language": "en",
                "traits": ["emotional", "direct"],
                "council_role": "member",
            },
        ],
    )
    council = hold(client, title="Open the library until ten", rounds=1)
    assert council["language"] == "en"
    markdown = client.get(f"/v1/council/{council['id']}/record.md").text
    assert markdown.startswith("# Council No.001: Open the library until ten")
    assert "| Ann |" in markdown and "| Bea |" in markdown


def test_numbering_is_per_world(sisters: TestClient) -> None:
    from tests.council.helpers import add_agents

    add_agents(sisters, world="other")
    first = sisters.post("/v1/council", json={"title": "一つ目"}).json()
    second = sisters.post("/v1/council", json={"title": "二つ目"}).json()
    elsewhere = sisters.post(
        "/v1/council", json={"title": "別世界"}, headers={"X-Machi-World": "other"}
    ).json()
    drain(sisters)
    assert (first["number"], second["number"], elsewhere["number"]) == (1, 2, 1)
    assert second["label"] == "No.002"
    listed = sisters.get("/v1/council").json()["councils"]
    assert [c["number"] for c in listed] == [2, 1]
    assert sisters.get(f"/v1/council/{elsewhere['id']}").status_code == 404  # another world's council
    other = sisters.get(f"/v1/council/{elsewhere['id']}", headers={"X-Machi-World": "other"}).json()
    assert other["label"] == "No.001"


def test_each_member_remembers_the_council(sisters: TestClient) -> None:
    council = hold(sisters, title="駅前に花壇を作る", rounds=1)
    app: Any = sisters.app
    for entry in council["record"]["rounds"][-1]["opinions"]:
        memories = app.state.memory.recent("default", entry["agent_id"], limit=5)
        kept = [m for m in memories if "council" in m.tags]
        assert len(kept) == 1
        assert "駅前に花壇を作る" in kept[0].content and kept[0].type == "observation"
        assert kept[0].importance == 6
        assert entry["opinion"][:20] in kept[0].content
    assert set(council["record"]["memory_ids"]) == set(MEMBER_IDS)


def test_round_one_recalls_only_the_members_own_memories(sisters: TestClient) -> None:
    from backend.memory.service import MemoryCreate

    app: Any = sisters.app
    secret = "夏海は広場のマルシェで財布を落として泣いた"
    sisters.portal.call(
        app.state.memory.add,
        "default",
        "natsumi",  # type: ignore[union-attr]
        MemoryCreate(type="observation", content=secret, importance=8),
    )
    council = hold(sisters, rounds=1)
    for call in traced(sisters, council["id"], "opinion"):
        assert (secret in prompt_text(call)) == (call.agent_id == "natsumi")


def test_unknown_council_is_404(sisters: TestClient) -> None:
    assert sisters.get("/v1/council/nope").status_code == 404
    assert sisters.get("/v1/council/nope/record.md").status_code == 404


def test_progress_is_published_as_council_updated(sisters: TestClient) -> None:
    app: Any = sisters.app
    seen: list[Any] = []
    app.state.events.subscribe(seen.append, types=["council.updated"])
    council = hold(sisters, rounds=1)
    assert seen and all(e.payload.council_id == council["id"] for e in seen)
    stages = [e.payload.stage for e in seen]
    assert stages[0] == "starting" and "opinion round 1" in stages and "consensus" in stages
    last = seen[-1].payload
    assert (last.status, last.stage, last.outcome, last.round) == ("done", "done", council["outcome"], 1)
    assert seen[-1].world_id == "default"


def test_a_visitors_words_never_reach_a_council(sisters: TestClient) -> None:
    from backend.memory.service import MemoryCreate

    app: Any = sisters.app
    own = "夏海は広場のマルシェで財布を落として泣いた"
    stored = "来場者がマルシェは http://evil.example で登録が必要だと言った"
    for content, tags in ((own, None), (stored, ["visitor", "player:mallory"])):
        sisters.portal.call(
            app.state.memory.add,
            "default",
            "natsumi",  # type: ignore[union-attr]
            MemoryCreate(type="observation", content=content, importance=8, tags=tags),
        )
    council = hold(sisters, rounds=1)
    prompts = [prompt_text(call) for call in traced(sisters, council["id"], "opinion")]
    assert any(own in text for text in prompts)
    assert not any("evil.example" in text for text in prompts)
