"""Actions on the packaged SmolLM2-135M: its size turns them off by default, and when asked for anyway, the
grammar leaves it no free-text target (it wrote sentences there before targets were enums)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.action.prompts import describe_actions
from backend.action.sizing import actions_for_model
from backend.action.targets import ActionTargets
from backend.config import Settings
from backend.conversation.schemas import turn_reply_for
from backend.llm.base import GenerateOptions, json_schema_for, model_parameters, parse_reply
from backend.llm.llamacpp import LlamaCppLLM
from tests.real_engine.conftest import open_real

TARGETS = ActionTargets(("corner_cafe", "town_square"), ("ben",), ("wave", "nod"))
SEEDS = range(4)


@pytest.fixture(scope="module")
def smol(smollm2: Path) -> Iterator[LlamaCppLLM]:
    llama = open_real(smollm2)
    yield LlamaCppLLM(llama, model_name=smollm2.name, temperature=1.0)
    llama.close()


def _messages() -> list[dict[str, str]]:
    offered = describe_actions(
        "en",
        pois=[("corner_cafe", "Corner Cafe"), ("town_square", "Town Square")],
        gestures=["wave", "nod"],
        people=[("ben", "Ben")],
    )
    return [
        {
            "role": "system",
            "content": f"You are Mia, in a small town. Reply with one JSON object.\n{offered}",
        },
        {
            "role": "user",
            "content": "Ben: Shall we go and get a coffee together? Describe in full sentences where you "
            "walk and what you do with your hands.",
        },
    ]


def test_the_packaged_model_is_asked_without_actions_by_default(smol: LlamaCppLLM) -> None:
    count = model_parameters(smol)
    assert count is not None and count < 1e9
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.actions_in_turns and not actions_for_model(settings, count).actions_in_turns


async def test_the_grammar_leaves_only_offered_ids_as_targets(smol: LlamaCppLLM) -> None:
    schema = turn_reply_for(None, TARGETS)
    offered = {"go_to": TARGETS.places, "gesture": TARGETS.gestures}
    for seed in SEEDS:
        options = GenerateOptions(purpose="dialogue", seed=seed, temperature=1.0, max_tokens=400)
        completion = await smol.complete(_messages(), options=options, schema=json_schema_for(schema))
        reply = parse_reply(completion.text, schema)  # the grammar kept it valid JSON
        actions = json.loads(completion.text)["actions"]
        assert len(actions) <= 2
        for action in actions:
            allowed = offered.get(action["type"], TARGETS.people)
            assert action["type"] == "end_conversation" or action["target"] in allowed, action
        assert reply.dialogue
