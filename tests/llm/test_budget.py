"""The prompt budget: prompts are counted and fitted to the context; the rules (system message) are never cut."""

from __future__ import annotations

import pytest

from backend.llm.base import GenerateOptions
from backend.llm.budget import CUT_MARK, PromptBudgetLLM, count_messages, estimate_tokens, fit_messages
from backend.scripted import ScriptedLLM


def test_the_estimate_is_generous_for_japanese_and_english() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("図書館で本を読む") == 8  # one token per Japanese character
    assert estimate_tokens("The quick brown fox jumps over the lazy dog.") == 13  # 44 chars / 3.5


def test_a_prompt_within_budget_is_unchanged() -> None:
    messages = [{"role": "system", "content": "rules"}, {"role": "user", "content": "hello"}]
    fitted, tokens = fit_messages(messages, 1000, estimate_tokens)
    assert fitted == messages and tokens == count_messages(messages, estimate_tokens)


def test_an_oversized_prompt_loses_the_oldest_part_of_its_longest_message_never_the_rules() -> None:
    rules = "Rules: stay in character. " * 40
    history = "\n".join(f"line {i}: " + "word " * 20 for i in range(200))
    ask = "Write the next line."
    messages = [
        {"role": "system", "content": rules},
        {"role": "user", "content": f"Conversation so far:\n{history}\n{ask}"},
    ]
    fitted, tokens = fit_messages(messages, 800, estimate_tokens)
    assert tokens <= 800 and tokens == count_messages(fitted, estimate_tokens)
    assert fitted[0]["content"] == rules
    user = fitted[1]["content"]
    assert user.startswith(f"Conversation so far:\n{CUT_MARK}") and user.endswith(ask)
    assert "line 199:" in user and "line 0:" not in user  # the newest lines stay


def test_when_only_the_rules_are_left_the_fit_stops() -> None:
    messages = [{"role": "system", "content": "x" * 4000}, {"role": "user", "content": "y" * 4000}]
    fitted, tokens = fit_messages(messages, 100, estimate_tokens)
    assert fitted[0]["content"] == "x" * 4000 and fitted[1]["content"] == ""
    assert tokens > 100  # the rules alone are over: nothing else is cut


async def test_the_wrapper_fits_each_call_and_says_what_it_counted() -> None:
    scripted = ScriptedLLM(seed=0)
    llm = PromptBudgetLLM(scripted, context_tokens=1024)
    options = GenerateOptions(purpose="generic", max_tokens=200)
    assert llm.budget(options) == 1024 - 200 - 32
    long = "\n".join("とても長い話の一行です。" * 5 for _ in range(200))
    await llm.complete(
        [{"role": "system", "content": "規則"}, {"role": "user", "content": long}], options=options
    )
    call = scripted.history[-1]
    assert call.options.prompt_tokens_counted is not None
    assert call.options.prompt_tokens_counted <= llm.budget(options)
    assert count_messages(call.messages, estimate_tokens) == call.options.prompt_tokens_counted


@pytest.mark.parametrize(("context", "budget"), [(512, 256), (2048, 1024 - 32)])
async def test_a_long_reply_leaves_the_prompt_half_the_context_and_never_below_the_minimum(
    context: int, budget: int
) -> None:
    llm = PromptBudgetLLM(ScriptedLLM(seed=0), context_tokens=context)
    assert llm.budget(GenerateOptions(max_tokens=4000)) == budget
