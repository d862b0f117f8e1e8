"""The outcome and stopping rules, as pure functions."""

from __future__ import annotations

import pytest

from backend.council.outcome import (
    ADOPT,
    ADOPT_WITH_CONDITIONS,
    ANOTHER_ROUND,
    RECONSIDER,
    REVISE,
    decide_outcome,
    should_continue,
    supporting_conditions,
    tally,
    unanimous,
)


def test_tally_counts_every_stance_exactly() -> None:
    assert tally(["for", "against", "for", "abstain"]) == {
        "for": 2,
        "conditional": 0,
        "against": 1,
        "abstain": 1,
    }
    with pytest.raises(ValueError):
        tally(["maybe"])


def test_all_for_adopts() -> None:
    assert decide_outcome(["for", "for", "for"], []) == ADOPT
    assert decide_outcome(["for", "for", "for"], ["even with conditions"]) == ADOPT


def test_all_against_reconsiders() -> None:
    assert decide_outcome(["against", "against"], []) == RECONSIDER


def test_supporting_majority_with_conditions_adopts_with_conditions() -> None:
    assert decide_outcome(["for", "conditional", "against"], ["a trial first"]) == ADOPT_WITH_CONDITIONS
    assert decide_outcome(["conditional", "conditional"], ["a trial first"]) == ADOPT_WITH_CONDITIONS


def test_supporting_majority_without_conditions_revises() -> None:
    assert decide_outcome(["for", "for", "against"], []) == REVISE
    assert decide_outcome(["for", "for", "against"], ["  "]) == REVISE


def test_no_supporting_majority_revises_even_with_conditions() -> None:
    assert decide_outcome(["for", "against", "against"], ["x"]) == REVISE
    assert decide_outcome(["conditional", "against"], ["x"]) == REVISE  # a tie is not a majority


def test_revise_becomes_another_round_while_rounds_remain() -> None:
    assert decide_outcome(["for", "against"], [], rounds_left=1) == ANOTHER_ROUND
    assert decide_outcome(["for", "against"], [], rounds_left=0) == REVISE
    assert decide_outcome(["for", "for"], [], rounds_left=3) == ADOPT


def test_abstentions_are_left_out_of_the_vote() -> None:
    assert decide_outcome(["for", "for", "abstain"], []) == ADOPT
    assert decide_outcome(["against", "abstain"], []) == RECONSIDER
    assert decide_outcome(["for", "against", "abstain", "abstain"], ["x"]) == REVISE
    assert decide_outcome(["abstain", "abstain"], ["x"]) == REVISE


def test_unanimity_ignores_nothing_and_never_counts_abstentions() -> None:
    assert unanimous(["for", "for"])
    assert not unanimous(["for", "conditional"])
    assert not unanimous(["abstain", "abstain"])
    assert not unanimous(["for", "abstain"])
    assert not unanimous([])


def test_stopping_rule() -> None:
    assert not should_continue(["for", "for"], ADOPT, rounds_left=2)  # early stop
    assert should_continue(["for", "against"], ANOTHER_ROUND, rounds_left=1)
    assert should_continue(["for", "conditional"], ADOPT_WITH_CONDITIONS, rounds_left=1)  # not yet unanimous
    assert not should_continue(["for", "against"], REVISE, rounds_left=0)
    # all conditional but nobody named a condition: unanimous, yet the rule asks for another round
    assert should_continue(["conditional", "conditional"], ANOTHER_ROUND, rounds_left=1)


def test_supporting_conditions_come_only_from_supporters_and_are_distinct() -> None:
    opinions = [
        {"stance": "conditional", "conditions": ["試行期間を設ける", "費用を公開する"]},
        {"stance": "for", "conditions": ["試行期間を設ける"]},
        {"stance": "against", "conditions": ["やめる"]},
        {"stance": "abstain", "conditions": []},
    ]
    assert supporting_conditions(opinions) == ["試行期間を設ける", "費用を公開する"]
