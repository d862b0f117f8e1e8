"""The in-process engine's runtime on a real model (SmolLM2-135M): a call that is cancelled or times out
stops generating and frees the model, a live turn preempts a background generation (which runs again and
still answers), and LLM_SEED makes two runs give the same replies.

Order is asserted through what the engine itself did (a recording Llama), never through timings; the
timeouts are generous sanity bounds for a loaded 2-core machine.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.config import Settings
from backend.emotion.schemas import EmotionEvaluation
from backend.errors import LLMTimeout
from backend.llm.base import PRIORITY_BACKGROUND, PRIORITY_TURN, GenerateOptions, json_schema_for, parse_reply
from backend.llm.llamacpp import LlamaCppLLM
from backend.llm.retry import TimeoutLLM
from backend.llm.scheduler import Scheduler, SchedulingLLM
from tests.real_engine.conftest import REAL_N_CTX, open_real, real_settings

LONG = [{"role": "user", "content": "Write a very long story about a cat who sails around the world."}]
SHORT = [{"role": "user", "content": "Say hello."}]
EMOTION = [
    {"role": "system", "content": "Rate the speaker's emotions from 0 to 100 and give a one-word label."},
    {"role": "user", "content": "Aoi: I finally finished my painting and everyone loved it!"},
]
SANITY_S = 300  # a bound for a loaded machine, not a measurement


class Recording:
    """A Llama that notes each generation: its start, the chunks it made, and its end (the worker's view)."""

    def __init__(self, llama: Any) -> None:
        self._llama = llama
        self.events: list[tuple[int, str]] = []
        self.chunks: list[int] = []
        self.lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)

    def __setattr__(self, name: str, value: Any) -> None:
        # The engine wraps `eval` (chunked prompt evaluation): that belongs to the real Llama.
        target = self._llama if name == "eval" else self
        object.__setattr__(target, name, value)

    def create_chat_completion(self, **request: Any) -> Iterator[Any]:
        with self.lock:
            index = len(self.chunks)
            self.chunks.append(0)
            self.events.append((index, "start"))
        chunks = self._llama.create_chat_completion(**request)

        def recorded() -> Iterator[Any]:
            try:
                for chunk in chunks:
                    self.chunks[index] += 1
                    yield chunk
            finally:
                chunks.close()
                self.events.append((index, "end"))

        return recorded()

    def ended(self, index: int) -> bool:
        return (index, "end") in self.events


@pytest.fixture(scope="module")
def smol_llama(smollm2: Path) -> Iterator[Any]:
    llama = open_real(smollm2)
    yield llama
    llama.close()


@pytest.fixture
def recording(smol_llama: Any) -> Recording:
    return Recording(smol_llama)


@pytest.fixture
def provider(recording: Recording) -> LlamaCppLLM:
    return LlamaCppLLM(recording, model_name="SmolLM2-135M-Instruct.Q4_1.gguf")


async def until(condition: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(SANITY_S):
        while not condition():
            await asyncio.sleep(0.02)
    assert condition(), what


def long_options(**extra: Any) -> GenerateOptions:
    return GenerateOptions(purpose="reflection", max_tokens=400, seed=3, temperature=0.8, **extra)


async def test_a_cancelled_call_stops_at_the_next_token_and_the_next_call_gets_the_model(
    provider: LlamaCppLLM, recording: Recording
) -> None:
    call = asyncio.create_task(provider.complete(LONG, options=long_options()))
    await until(lambda: bool(recording.chunks) and recording.chunks[0] >= 3, "the generation never started")
    at_cancel = recording.chunks[0]
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    # When the cancelled call returns, its generation has already ended, a few tokens on at most.
    assert recording.ended(0)
    assert recording.chunks[0] <= at_cancel + 8 < 400
    reply = await provider.complete(SHORT, options=GenerateOptions(max_tokens=8, seed=1))
    assert reply.completion_tokens and reply.completion_tokens <= 8
    assert recording.events == [(0, "start"), (0, "end"), (1, "start"), (1, "end")]


async def test_a_call_cancelled_while_the_prompt_is_read_stops_within_a_chunk(
    provider: LlamaCppLLM, recording: Recording
) -> None:
    words = " ".join(["apple", "river", "stone", "cloud", "bread"] * 160)
    prompt = [{"role": "user", "content": f"Summarise these words: {words}"}]
    prompt_tokens = len(recording.tokenize(prompt[0]["content"].encode(), add_bos=False))
    assert 600 < prompt_tokens < REAL_N_CTX - 64
    call = asyncio.create_task(provider.complete(prompt, options=GenerateOptions(max_tokens=16, seed=1)))
    await until(lambda: provider.engine.stopping is not None, "the worker never took the call")
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert recording.ended(0) and recording.chunks[0] == 0  # stopped before its first token...
    assert recording.n_tokens < prompt_tokens  # ...part of the way through the prompt


async def test_a_timed_out_call_stops_generating(provider: LlamaCppLLM, recording: Recording) -> None:
    hurried = TimeoutLLM(provider, timeout_s=1.0)
    with pytest.raises(LLMTimeout):
        await hurried.complete(LONG, options=long_options())
    assert recording.ended(0)  # not still generating behind the next caller's back
    assert recording.chunks[0] < 400
    await provider.complete(SHORT, options=GenerateOptions(max_tokens=4, seed=1))
    assert recording.events[2:] == [(1, "start"), (1, "end")]


async def test_a_live_turn_preempts_a_background_generation_which_answers_later(
    provider: LlamaCppLLM, recording: Recording
) -> None:
    scheduler = Scheduler(1)
    llm = SchedulingLLM(TimeoutLLM(provider, timeout_s=SANITY_S), scheduler)
    schema = json_schema_for(EmotionEvaluation)
    background = asyncio.create_task(
        llm.complete(
            EMOTION,
            options=GenerateOptions(purpose="emotion", priority=PRIORITY_BACKGROUND, seed=5),
            schema=schema,
        )
    )
    await until(
        lambda: bool(recording.chunks) and recording.chunks[0] >= 2, "the background call never began"
    )
    turn = await llm.complete(
        SHORT, options=GenerateOptions(purpose="dialogue", priority=PRIORITY_TURN, max_tokens=12, seed=1)
    )
    assert turn.text
    assert not background.done()  # the turn was served while the background call waited
    assert recording.events[:4] == [(0, "start"), (0, "end"), (1, "start"), (1, "end")]
    evaluation = parse_reply((await background).text, EmotionEvaluation)  # run again, from the start
    assert evaluation.label
    assert recording.events[4:] == [(2, "start"), (2, "end")]
    assert recording.chunks[0] < recording.chunks[2]  # the first run was cut short
    assert scheduler.snapshot()["priorities"]["background"]["preempted"] == 1


async def _run(settings: Settings) -> list[str]:
    provider = LlamaCppLLM.from_settings(settings)
    try:
        free = await provider.complete(SHORT, options=GenerateOptions(purpose="dialogue", max_tokens=24))
        rated = await provider.complete(
            EMOTION, options=GenerateOptions(purpose="emotion"), schema=json_schema_for(EmotionEvaluation)
        )
        return [free.text, rated.text]
    finally:
        await provider.aclose()


async def test_llm_seed_makes_two_runs_give_the_same_replies(smollm2: Path, tmp_path: Path) -> None:
    settings = real_settings(tmp_path, "package:smollm2", llm_seed=1234)
    first, second = await _run(settings), await _run(settings)  # two processes' worth: two loaded models
    assert first == second
    assert all(first)
    parse_reply(first[1], EmotionEvaluation)
