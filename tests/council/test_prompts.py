"""Isolation is a property of the prompt builder, not only of scheduling."""

from __future__ import annotations

from backend.council.prompts import opinion_messages
from tests.council.helpers import SISTERS

OTHER = {
    "agent_id": "natsumi",
    "name": "夏海",
    "stance": "against",
    "opinion": "毎週は多すぎる",
    "concerns": ["疲労"],
    "conditions": [],
}


def text(messages: list[dict[str, str]]) -> str:
    return "\n".join(m["content"] for m in messages)


def test_round_one_prompt_never_carries_other_answers_even_if_given() -> None:
    prompt = text(
        opinion_messages(
            SISTERS[0], {"title": "マルシェ"}, ["自分の記憶"], "ja", round_no=1, others_previous=[OTHER]
        )
    )
    assert "毎週は多すぎる" not in prompt and "夏海" not in prompt and "疲労" not in prompt
    assert "雪乃" in prompt and "自分の記憶" in prompt and "マルシェ" in prompt


def test_later_round_prompt_quotes_the_others_and_allows_a_change() -> None:
    prompt = text(
        opinion_messages(
            SISTERS[0],
            {"title": "Market"},
            [],
            "en",
            round_no=2,
            own_previous={**OTHER, "name": "Yukino", "opinion": "mine"},
            others_previous=[OTHER],
        )
    )
    assert "毎週は多すぎる" in prompt and "疲労" in prompt and "mine" in prompt
    assert "You may keep or change your stance" in prompt and "not obliged to agree" in prompt
