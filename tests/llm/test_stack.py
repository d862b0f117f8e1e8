"""Each real adapter through the full wrapper stack (repair/re-ask -> retry -> trace -> timeout), traced in SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import pytest
from pydantic import BaseModel, Field
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from backend.config import Settings
from backend.errors import LLMReplyError, LLMTimeout, LLMUnavailable
from backend.llm.base import LLM, GenerateOptions
from backend.llm.models import LLMCall
from backend.llm.registry import build_provider, wrap
from backend.storage.db import create_db_engine, init_db
from tests.llm.conftest import settings_for
from tests.llm.fakes import FakeModelServer, Said, closed_port_url

PROVIDERS = ["ollama", "openai", "vllm"]
MESSAGES = [
    {"role": "system", "content": "感情を判定して。"},
    {"role": "user", "content": "ヒカリとカフェで話した。"},
]


class Mood(BaseModel):
    emotion: Literal["joy", "sadness", "calm"]
    intensity: int = Field(ge=1, le=10)


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    db = create_db_engine(settings.database_url)
    init_db(db)
    yield db
    db.dispose()


def stack(settings: Settings, provider: str, url: str, engine: Engine, **overrides: object) -> LLM:
    configured = settings_for(settings, provider, url, **overrides)
    return wrap(build_provider(configured), configured, engine)


def traces(engine: Engine) -> list[LLMCall]:
    with Session(engine) as session:
        return list(session.exec(select(LLMCall).order_by(col(LLMCall.id))).all())


def chat_bodies(fake: FakeModelServer) -> list[dict]:  # type: ignore[type-arg]
    return [r.body for r in fake.requests if r.path in ("/api/chat", "/v1/chat/completions")]


OPTIONS = GenerateOptions(
    purpose="emotion",
    agent_id="aoi",
    session_id="s-1",
    labels={"council_id": "c-9", "stage": "opinion", "round": 2},
)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_fenced_reply_parses_and_is_traced(
    provider: str, settings: Settings, fake: FakeModelServer, engine: Engine
) -> None:
    llm = stack(settings, provider, fake.url, engine)
    fake.say('はい:\n```json\n{"emotion": "joy", "intensity": 6}\n```', prompt_tokens=42, completion_tokens=8)
    assert await llm.generate_json(MESSAGES, Mood, options=OPTIONS) == Mood(emotion="joy", intensity=6)
    [call] = traces(engine)
    assert (call.purpose, call.agent_id, call.session_id, call.council_id) == ("emotion", "aoi", "s-1", "c-9")
    assert (call.stage, call.round, call.provider, call.schema_name) == ("opinion", 2, provider, "Mood")
    assert call.model == chat_bodies(fake)[0]["model"] != ""
    assert call.messages == MESSAGES
    assert call.raw_reply is not None and "```json" in call.raw_reply
    assert call.ok and call.error is None
    assert (call.prompt_tokens, call.completion_tokens) == (42, 8)
    assert call.latency_ms > 0
    await llm.aclose()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_missing_field_is_re_asked_once_with_the_error(
    provider: str, settings: Settings, fake: FakeModelServer, engine: Engine
) -> None:
    llm = stack(settings, provider, fake.url, engine)
    fake.say('{"emotion": "joy"}', '{"emotion": "calm", "intensity": 2}')
    assert await llm.generate_json(MESSAGES, Mood, options=OPTIONS) == Mood(emotion="calm", intensity=2)
    first, second = chat_bodies(fake)
    assert first["messages"] == MESSAGES
    # The refused reply is not shown back (llm/reask.py): the prompt and one sentence saying what was wrong.
    assert second["messages"][:-1] == MESSAGES
    reask = second["messages"][-1]
    assert "joy" not in reask["content"] and "logit_bias" not in second
    assert (
        reask["role"] == "user" and "intensity" in reask["content"] and "Field required" in reask["content"]
    )
    bad, good = traces(engine)
    assert not bad.ok and bad.error is not None and "intensity" in bad.error
    assert bad.raw_reply == '{"emotion": "joy"}'
    assert good.ok
    await llm.aclose()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_two_bad_replies_give_up_after_one_re_ask(
    provider: str, settings: Settings, fake: FakeModelServer, engine: Engine
) -> None:
    llm = stack(settings, provider, fake.url, engine)
    fake.say(
        "I feel happy today!", '{"emotion": "ecstatic", "intensity": 5}', '{"emotion": "joy", "intensity": 1}'
    )
    with pytest.raises(LLMReplyError, match="emotion"):
        await llm.generate_json(MESSAGES, Mood, options=OPTIONS)
    assert len(chat_bodies(fake)) == 2
    assert [c.ok for c in traces(engine)] == [False, False]
    await llm.aclose()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_timeout_is_retried_then_raised(
    provider: str, settings: Settings, fake: FakeModelServer, engine: Engine
) -> None:
    llm = stack(settings, provider, fake.url, engine, llm_timeout_s=0.2, llm_max_retries=2)
    for _ in range(3):
        fake.queue.append(Said('{"emotion": "joy", "intensity": 1}', delay_s=3.0))
    with pytest.raises(LLMTimeout):
        await llm.generate_json(MESSAGES, Mood, options=OPTIONS)
    assert len(chat_bodies(fake)) == 3  # the first try and max_retries=2 retries
    calls = traces(engine)
    assert len(calls) == 3
    assert all(not c.ok and c.error is not None and c.error.startswith("llm_timeout") for c in calls)
    assert all(c.model for c in calls)  # the model is known even though no reply came
    await llm.aclose()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_connection_refused_raises_unavailable(
    provider: str, settings: Settings, engine: Engine
) -> None:
    llm = stack(settings, provider, closed_port_url(), engine, llm_max_retries=1)
    with pytest.raises(LLMUnavailable, match="cannot reach"):
        await llm.generate_json(MESSAGES, Mood, options=OPTIONS)
    calls = traces(engine)
    assert len(calls) == 2  # one retry: a refused connection may be a server still starting
    assert all(c.error is not None and c.error.startswith("llm_unavailable") for c in calls)
    await llm.aclose()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_streamed_call_is_traced_with_tokens(
    provider: str, settings: Settings, fake: FakeModelServer, engine: Engine
) -> None:
    llm = stack(settings, provider, fake.url, engine)
    fake.say("また明日、カフェで会おうね。", chunks=4, prompt_tokens=25, completion_tokens=10)
    options = GenerateOptions(purpose="turn", agent_id="hikari", session_id="s-2")
    text = "".join([piece async for piece in llm.stream(MESSAGES, options=options)])
    assert text == "また明日、カフェで会おうね。"
    [call] = traces(engine)
    assert call.streamed and call.ok and call.raw_reply == text
    assert (call.prompt_tokens, call.completion_tokens) == (25, 10)
    assert (call.purpose, call.agent_id, call.session_id) == ("turn", "hikari", "s-2")
    await llm.aclose()
