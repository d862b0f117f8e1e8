"""Completion-token caps and LLM_SEED, as every adapter sends them (llama.cpp, OpenAI, Ollama).

A structured reply's cap comes from its schema: the longest reply the schema allows (every string at its
maxLength, every list at its maxItems, every enum at its longest word) must fit its cap at TOKENS_PER_CHAR
tokens a character, for every reply schema the server sends, the per-call ones (a world's places, a batch's
count, a council's criteria, the person summary's length) included.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from backend.config import Settings
from backend.conversation.schemas import TurnReply, turn_reply_for
from backend.council import schemas as council
from backend.emotion.schemas import EmotionEvaluation, evaluation_for
from backend.intention.schemas import IntentionsReply
from backend.interview.schemas import InterviewReply
from backend.llm.base import (
    COMPLETION_CAPS,
    DEFAULT_COMPLETION_CAP,
    TOKENS_PER_CHAR,
    GenerateOptions,
    completion_cap,
    json_schema_for,
    reply_tokens,
)
from backend.llm.budget import PromptBudgetLLM
from backend.llm.llamacpp import LlamaCppLLM
from backend.llm.ollama import OllamaLLM
from backend.llm.openai_compat import VLLMLLM, OpenAILLM
from backend.memory import prompts as memory
from backend.memory.afterthought import afterthought_for
from backend.memory.reflection import ratings_for
from backend.planning.schemas import PlanReply, plan_reply_for
from backend.scripted.engine import ScriptedLLM
from tests.llm.conftest import settings_for

#: (purpose, the reply schema of its calls): every reply schema the server sends, per-call ones included.
REPLIES: list[tuple[str, type[BaseModel]]] = [
    ("dialogue", TurnReply),
    ("dialogue", turn_reply_for("ja")),
    ("dialogue", turn_reply_for("en")),
    ("emotion", EmotionEvaluation),
    ("emotion", evaluation_for("ja")),
    ("importance", memory.ImportanceRating),
    ("importance", memory.ImportanceRatings),
    ("importance", ratings_for(1)),
    ("importance", ratings_for(16)),
    ("reflection", memory.ConversationReflection),
    ("reflection", afterthought_for("ja", 400)),
    ("reflection", afterthought_for(None, 4000)),  # PERSON_SUMMARY_CHARS at its largest
    ("questions", memory.SalientQuestions),
    ("insight", memory.InsightList),
    ("person", memory.PersonUpdate),
    ("person", memory.PersonSummary),
    ("plan", PlanReply),
    ("plan", plan_reply_for(("cafe", "park", "home_of_somebody_with_a_long_name"))),
    ("opinion", council.MemberOpinion),
    ("response", council.MemberOpinion),
    ("aggregate", council.Aggregation),
    ("consensus", council.Consensus),
    ("judge", council.JudgeReply),
    ("judge", council.judge_reply_for(["feasibility", "cost", "fairness to every resident"])),
    ("interview", InterviewReply),
    ("intention", IntentionsReply),
]


def longest(node: dict[str, Any]) -> Any:
    """The longest reply a JSON schema allows: strings at maxLength (of a CJK character, a token or two
    each), lists at maxItems, the longest enum word, numbers at their widest bound."""
    if "anyOf" in node:
        return max((longest(option) for option in node["anyOf"]), key=lambda v: len(json.dumps(v)))
    if "enum" in node:
        return max(node["enum"], key=lambda v: len(json.dumps(v, ensure_ascii=False)))
    if "const" in node:
        return node["const"]
    kind = node.get("type")
    if kind == "object":
        return {key: longest(sub) for key, sub in node.get("properties", {}).items()}
    if kind == "array":
        prefix = node.get("prefixItems", [])  # the judge's criteria, in order
        return [longest(prefix[i] if i < len(prefix) else node["items"]) for i in range(node["maxItems"])]
    if kind == "string":
        return "語" * node["maxLength"]
    if kind == "integer":
        return max([node.get("minimum", -1), node.get("maximum", 10**16)], key=lambda v: len(str(v)))
    if kind == "number":
        high = node.get("maximum")
        return -1.5 * 10**14 if high is None else float(f"{int(high) - 1}.999999")
    return False if kind == "boolean" else None


NAMES = [f"{purpose}-{schema.__name__}-{index}" for index, (purpose, schema) in enumerate(REPLIES)]


@pytest.mark.parametrize(("purpose", "schema"), REPLIES, ids=NAMES)
def test_a_reply_at_its_schema_limits_fits_its_cap(purpose: str, schema: type[BaseModel]) -> None:
    sent = json_schema_for(schema)
    reply = longest(sent)
    schema.model_validate(reply)  # a valid reply, at every limit
    # A space after every token, as the grammar allows; every character at TOKENS_PER_CHAR tokens.
    text = json.dumps(reply, ensure_ascii=False, separators=(", ", ": "))
    cap = completion_cap(GenerateOptions(purpose=purpose), sent)
    assert cap >= TOKENS_PER_CHAR * len(text), f"{purpose}: {schema.__name__} may need {len(text)} chars"
    assert cap == reply_tokens(sent)  # derived from the schema, not a number per purpose


def test_an_importance_batch_is_capped_by_its_count() -> None:
    one, sixteen = (
        completion_cap(GenerateOptions(purpose="importance"), json_schema_for(ratings_for(n)))
        for n in (1, 16)
    )
    assert one < COMPLETION_CAPS["emotion"] < sixteen  # a rating is a few tokens per memory


def test_free_text_and_unbounded_schemas_take_the_purposes_cap_and_max_tokens_wins() -> None:
    unbounded = {"type": "object", "properties": {"text": {"type": "string"}}}
    assert completion_cap(GenerateOptions(purpose="dialogue")) == COMPLETION_CAPS["dialogue"]
    assert completion_cap(GenerateOptions(purpose="dialogue"), unbounded) == COMPLETION_CAPS["dialogue"]
    assert completion_cap(GenerateOptions(purpose="something-new")) == DEFAULT_COMPLETION_CAP
    sent = json_schema_for(council.Consensus)
    assert completion_cap(GenerateOptions(purpose="consensus", max_tokens=32), sent) == 32


async def test_the_budget_sends_the_schemas_cap_where_the_context_holds_it() -> None:
    scripted = ScriptedLLM()
    messages = [{"role": "system", "content": "rules"}, {"role": "user", "content": "word " * 300}]
    sent = json_schema_for(memory.PersonUpdate)
    needed = completion_cap(GenerateOptions(purpose="person"), sent)
    roomy = PromptBudgetLLM(scripted, context_tokens=64_000)
    await roomy.complete(messages, options=GenerateOptions(purpose="person"), schema=sent)
    assert scripted.history[-1].options.max_tokens == needed
    # A context smaller than the schema allows: the prompt keeps half of it, the reply gets the rest.
    small = PromptBudgetLLM(scripted, context_tokens=2048)
    assert small.budget(GenerateOptions(purpose="person"), sent) == 2048 - 1024 - 32
    await small.complete(messages, options=GenerateOptions(purpose="person"), schema=sent)
    call = scripted.history[-1].options
    assert call.prompt_tokens_counted is not None
    assert call.max_tokens == 2048 - call.prompt_tokens_counted - 32 < needed


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
