"""Per-purpose completion-token caps and LLM_SEED, as every adapter sends them (llama.cpp, OpenAI, Ollama).

The caps are checked against the reply schemas themselves: a reply at its schema's limits (every string at
its maxLength, every list at its maxItems) fits at 2 tokens a character, up to MAX_COMPLETION_CAP.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import BaseModel

from backend.config import Settings
from backend.conversation.schemas import TurnReply
from backend.council import schemas as council
from backend.emotion.schemas import EmotionEvaluation
from backend.interview.schemas import InterviewReply
from backend.llm.base import (
    COMPLETION_CAPS,
    DEFAULT_COMPLETION_CAP,
    MAX_COMPLETION_CAP,
    GenerateOptions,
    completion_cap,
    json_schema_for,
)
from backend.llm.llamacpp import LlamaCppLLM
from backend.llm.ollama import OllamaLLM
from backend.llm.openai_compat import VLLMLLM, OpenAILLM
from backend.memory import prompts as memory
from backend.planning.schemas import PlanReply
from tests.llm.conftest import settings_for

TOKENS_PER_CHAR = 2

#: (purpose, the reply schema of its calls, how many memories a call names)
REPLIES: list[tuple[str, type[BaseModel], int | None]] = [
    ("dialogue", TurnReply, None),
    ("emotion", EmotionEvaluation, None),
    ("importance", memory.ImportanceRating, None),
    ("importance", memory.ImportanceRatings, 16),
    ("reflection", memory.ConversationReflection, None),
    ("questions", memory.SalientQuestions, None),
    ("insight", memory.InsightList, None),
    ("person", memory.PersonUpdate, None),
    ("person", memory.PersonSummary, None),
    ("plan", PlanReply, None),
    ("opinion", council.MemberOpinion, None),
    ("response", council.MemberOpinion, None),
    ("aggregate", council.Aggregation, None),
    ("consensus", council.Consensus, None),
    ("judge", council.JudgeReply, None),
    ("interview", InterviewReply, None),
]


def longest_reply_tokens(node: Any) -> float:
    """Tokens of the longest reply the schema allows: strings at maxLength (TOKENS_PER_CHAR each), lists at
    maxItems, keys and punctuation at about three characters a token; infinite where nothing bounds it."""
    if not isinstance(node, dict):
        return 4
    if "anyOf" in node:
        return max(longest_reply_tokens(option) for option in node["anyOf"])
    if "enum" in node:
        return max(len(str(value)) for value in node["enum"]) / 2 + 2
    kind = node.get("type")
    if kind == "object":
        fields = node.get("properties", {}).items()
        return 2 + sum(len(key) / 3 + 3 + longest_reply_tokens(value) for key, value in fields)
    if kind == "array":
        items = node.get("maxItems")
        return math.inf if items is None else 2 + items * (longest_reply_tokens(node.get("items", {})) + 1)
    if kind == "string":
        length = node.get("maxLength")
        return math.inf if length is None else 2 + length * TOKENS_PER_CHAR
    return 6  # a number, a boolean


@pytest.mark.parametrize(("purpose", "schema", "items"), REPLIES, ids=lambda v: getattr(v, "__name__", v))
def test_a_reply_at_its_schema_limits_fits_the_cap(
    purpose: str, schema: type[BaseModel], items: int | None
) -> None:
    facts = {"memories": ["m"] * items} if items else {}
    cap = completion_cap(GenerateOptions(purpose=purpose, facts=facts))
    needed = longest_reply_tokens(json_schema_for(schema))
    assert cap >= min(MAX_COMPLETION_CAP, needed), (
        f"{purpose}: {schema.__name__} may need {needed:.0f} tokens"
    )


def test_caps_follow_the_purpose_and_yield_to_max_tokens() -> None:
    assert completion_cap(GenerateOptions(purpose="dialogue")) == COMPLETION_CAPS["dialogue"]
    assert completion_cap(GenerateOptions(purpose="dialogue", max_tokens=32)) == 32
    assert completion_cap(GenerateOptions(purpose="something-new")) == DEFAULT_COMPLETION_CAP
    one, sixteen = (
        completion_cap(GenerateOptions(purpose="importance", facts={"memories": ["m"] * n})) for n in (1, 16)
    )
    assert one < COMPLETION_CAPS["emotion"] and sixteen > one  # a rating is a few tokens per memory


def _llamacpp(settings: Settings) -> LlamaCppLLM:
    # `request` builds the call's arguments without touching the model (no schema: no grammar to build).
    return LlamaCppLLM(object(), model_name="m.gguf", seed=settings.llm_seed)


def _sent(provider: str, settings: Settings, options: GenerateOptions) -> tuple[int, int | None]:
    """(the completion-token limit, the seed) of the request the adapter builds."""
    configured = settings_for(settings, provider, "http://127.0.0.1:1")
    messages = [{"role": "user", "content": "x"}]
    if provider == "llamacpp":
        request = _llamacpp(configured).request(messages, options, None)
        return request["max_tokens"], request["seed"]
    if provider == "ollama":
        sampling = OllamaLLM.from_settings(configured).request(messages, options, None)["options"]
        return sampling["num_predict"], sampling.get("seed")
    adapter = (VLLMLLM if provider == "vllm" else OpenAILLM).from_settings(configured)
    request = adapter.request(messages, options, None)
    return request["max_completion_tokens"], request.get("seed")


@pytest.mark.parametrize("provider", ["llamacpp", "ollama", "openai", "vllm"])
def test_every_adapter_sends_the_cap_and_llm_seed(settings: Settings, provider: str) -> None:
    seeded = settings.model_copy(update={"llm_seed": 77})
    cap, seed = _sent(provider, seeded, GenerateOptions(purpose="emotion"))
    assert (cap, seed) == (COMPLETION_CAPS["emotion"], 77)
    # A call's own max_tokens and seed win over the cap and LLM_SEED.
    assert _sent(provider, seeded, GenerateOptions(purpose="emotion", max_tokens=9, seed=5)) == (9, 5)


@pytest.mark.parametrize("provider", ["ollama", "openai", "vllm"])
def test_without_llm_seed_remote_calls_name_no_seed(settings: Settings, provider: str) -> None:
    assert _sent(provider, settings, GenerateOptions(purpose="emotion"))[1] is None


def test_without_llm_seed_llama_cpp_draws_a_fresh_seed_per_call(settings: Settings) -> None:
    # llama-cpp-python keeps the last seed it was given: each call gets a new one, so replies vary.
    seeds = {_sent("llamacpp", settings, GenerateOptions(purpose="emotion"))[1] for _ in range(8)}
    assert len(seeds) > 1


def test_llm_seed_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_SEED", "1234")
    assert Settings(_env_file=None).llm_seed == 1234  # type: ignore[call-arg]
    monkeypatch.setenv("LLM_SEED", "")
    assert Settings(_env_file=None).llm_seed is None  # type: ignore[call-arg]
