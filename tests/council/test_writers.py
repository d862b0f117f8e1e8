"""The scripted engine's council and judge writers: valid replies whose stances follow temperament."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from backend.council.schemas import Aggregation, Consensus, MemberOpinion, judge_reply_for
from backend.llm.base import GenerateOptions
from backend.scripted import WriterContext
from backend.scripted.writers import council as writers
from tests.council.helpers import SISTERS

BY_ID = {s["id"]: s for s in SISTERS}


def ctx(facts: dict[str, Any], seed: int = 0, language: str = "ja") -> WriterContext:
    options = GenerateOptions(purpose="opinion", language=language)
    return WriterContext(facts=facts, rng=random.Random(seed), messages=[], options=options, schema=None)


def test_temperaments_are_read_from_the_persona() -> None:
    assert writers.temperament(BY_ID["yukino"]) == "analytical"
    assert writers.temperament(BY_ID["natsumi"]) == "passionate"
    assert writers.temperament(BY_ID["haruka"]) == "empathetic"
    assert writers.temperament({"id": "x", "traits": ["kind", "gentle"]}) == "empathetic"
    assert writers.temperament({"id": "x", "traits": [], "council_role": "moderator"}) == "analytical"


def round_one(member: dict[str, Any], seeds: range) -> Counter[str]:
    proposal = {"title": "広場でマルシェ"}
    return Counter(
        writers.member_opinion(ctx({"member": member, "proposal": proposal, "round": 1}, seed))["stance"]
        for seed in seeds
    )


def test_round_one_stances_follow_temperament() -> None:
    seeds = range(300)
    analytical, passionate, empathetic = (round_one(BY_ID[i], seeds) for i in ("yukino", "natsumi", "haruka"))
    assert analytical["conditional"] > passionate["conditional"]
    assert passionate["against"] > empathetic["against"]
    assert empathetic["for"] > analytical["for"]


def moved(member: dict[str, Any], seeds: range) -> int:
    others = [
        {"name": "A", "stance": "for", "opinion": "やろう", "concerns": []},
        {"name": "B", "stance": "for", "opinion": "賛成", "concerns": []},
    ]
    count = 0
    for seed in seeds:
        facts = {
            "member": member,
            "proposal": {"title": "t"},
            "round": 2,
            "previous": {"stance": "against", "opinion": "反対"},
            "others": others,
        }
        count += writers.member_opinion(ctx(facts, seed))["stance"] != "against"
    return count


def test_later_rounds_move_toward_the_others_by_temperament() -> None:
    seeds = range(300)
    assert moved(BY_ID["haruka"], seeds) > moved(BY_ID["natsumi"], seeds) > 0
    assert moved(BY_ID["natsumi"], seeds) < 300  # some councils never converge


def test_replies_are_deterministic_and_schema_valid_in_both_languages() -> None:
    for language in ("ja", "en"):
        facts = {
            "member": BY_ID["yukino"],
            "proposal": {"title": "Open late"},
            "round": 1,
            "memories": ["I saw students waiting outside."],
        }
        first = writers.member_opinion(ctx(facts, 3, language))
        assert first == writers.member_opinion(ctx(facts, 3, language))
        MemberOpinion.model_validate(first)
        opinions = [
            {"name": "A", "stance": "for", "opinion": "x", "concerns": ["c1"], "conditions": []},
            {"name": "B", "stance": "against", "opinion": "y", "concerns": ["c2"], "conditions": []},
        ]
        aggregated = Aggregation.model_validate(writers.aggregation(ctx({"opinions": opinions}, 1, language)))
        assert aggregated.concerns == ["c1", "c2"] and aggregated.differences
        summary = writers.consensus(
            ctx(
                {
                    "opinions": opinions,
                    "outcome": "revise",
                    "proposal": {"title": "t"},
                    "aggregation": aggregated.model_dump(),
                },
                1,
                language,
            )
        )
        assert Consensus.model_validate(summary).actions
        verdict = writers.judge_reply(ctx({"criteria": ["a", "b"], "content": "hello there"}, 1, language))
        judged = judge_reply_for(["a", "b"]).model_validate(verdict)
        assert [s.criterion for s in judged.scores] == ["a", "b"]


@pytest.mark.parametrize("outcome", ["adopt", "adopt_with_conditions", "revise", "reconsider"])
def test_consensus_names_the_outcome(outcome: str) -> None:
    opinions = [{"name": "雪乃", "stance": "for", "opinion": "x"}]
    reply = writers.consensus(ctx({"opinions": opinions, "outcome": outcome, "proposal": {"title": "花壇"}}))
    assert writers.OUTCOME_JA[outcome] in reply["summary"] and "雪乃" in reply["summary"]
