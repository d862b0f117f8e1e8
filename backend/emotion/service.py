"""Emotion state per agent: read (decayed to now), re-evaluate in the background, keep a history.

An evaluation is one step, not a leap: each value moves at most `emotion_max_step` from the current
(decayed) state, so a model that answers all 0 then all 100 moves the face gradually instead of flipping it.
The label is the model's when it is one of the wheel's words (the schema offers only those) and fits the
stored values (`label_fits`: it names the strongest emotion, at most one intensity band off, or the dyad of
the two strongest, or calm when nothing is strong); otherwise the one the values give (`plutchik.label`).
So a small model's "loathing" for an all-low reading, or "ecstasy" for a joy held back to 30, is replaced.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from backend.config import Settings, settings_subset
from backend.emotion import repo
from backend.emotion.models import EmotionRecord
from backend.emotion.plutchik import (
    CALM_BELOW,
    CALM_LABEL,
    DYADS,
    INTENSE_AT,
    INTENSITY_LABELS,
    MILD_BELOW,
    PLUTCHIK,
    baseline_for,
    clamp_values,
    decay,
    feeling_targets,
    label,
    vrm_preset,
)
from backend.emotion.prompts import evaluation_messages
from backend.emotion.schemas import (
    EmotionEvaluation,
    EmotionState,
    evaluation_for,
    label_language,
    label_vocabulary,
)
from backend.errors import LLMError
from backend.events import EMOTION_UPDATED, EmotionPayload, EventBus
from backend.gametime import game_minutes
from backend.llm.base import LLM, PRIORITY_BACKGROUND, GenerateOptions
from backend.tasks import TaskRunner
from backend.world.models import Agent

if TYPE_CHECKING:
    from backend.storage.db import Engine, Session

log = logging.getLogger(__name__)
#: The history is pruned back to `emotion_history_limit` on every this-many-th insert per agent (so it may
#: briefly hold up to this many records more), not on each one.
PRUNE_EVERY = 8


@dataclass(frozen=True)
class EmotionSettings:
    """The settings emotion reads (derived from `Settings` in create_app; same names, so either serves)."""

    emotion_half_life_minutes: float
    emotion_history_limit: int
    emotion_min_interval_s: float
    emotion_max_step: float
    emotion_from_turn: bool

    @classmethod
    def of(cls, settings: Settings) -> EmotionSettings:
        return settings_subset(cls, settings)


def settle(
    reply: EmotionEvaluation, previous: Mapping[str, float], max_step: float, language: str
) -> tuple[dict[str, float], str]:
    """The values and label an evaluation leads to from `previous` (see the module docstring)."""
    wanted = clamp_values(reply.values())
    before = clamp_values(previous)
    values = {n: min(before[n] + max_step, max(before[n] - max_step, wanted[n])) for n in PLUTCHIK}
    word = reply.label.strip()
    if word in label_vocabulary(language) and label_fits(word, values, language):
        return values, word
    return values, label(values, language)


def label_fits(word: str, values: Mapping[str, float], language: str) -> bool:
    """Whether a word of the wheel describes `values` (see the module docstring)."""
    lang = label_language(language)
    top = max(values[n] for n in PLUTCHIK)
    if word == CALM_LABEL[lang] or top < CALM_BELOW:
        return word == CALM_LABEL[lang] and top < CALM_BELOW
    for name in (n for n in PLUTCHIK if values[n] == top):
        mild, basic, intense = INTENSITY_LABELS[lang][name]
        if word == basic or (word == mild and top < INTENSE_AT) or (word == intense and top >= MILD_BELOW):
            return True
    first, second = sorted(PLUTCHIK, key=lambda n: -values[n])[:2]
    return DYADS.get(frozenset({first, second}), {}).get(lang) == word and values[second] >= CALM_BELOW


class EmotionService:
    """Plutchik state per agent. Evaluation is fire-and-forget: a turn never waits for it.

    The state is read from the database on every request (no copy is kept), so another process's evaluation
    is seen at once. The maps below are this process's scheduling only: its locks, queued request and running
    worker per agent, when its last evaluation began (`emotion_min_interval_s` spaces this process's calls),
    the lines it last evaluated (a retried job with the same lines is not asked again here) and a count of its
    inserts (history is pruned every PRUNE_EVERY of them: the bound holds whichever process inserts).
    """

    def __init__(
        self,
        *,
        engine: Engine,
        llm: LLM,
        settings: EmotionSettings,
        tasks: TaskRunner,
        events: EventBus | None = None,
    ) -> None:
        self.engine = engine
        self.llm = llm
        self.settings = settings
        self.tasks = tasks
        self.events = events
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._queued: dict[tuple[str, str], tuple[Agent, list[str], str, int, float]] = {}
        self._workers: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._inserts: dict[tuple[str, str], int] = {}
        self._started: dict[tuple[str, str], float] = {}  # loop time the agent's last evaluation began
        self._seen: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {}  # lines and cause last evaluated

    # --- reading ---
    def current(
        self,
        agent: Agent,
        *,
        day: int | None = None,
        time_of_day: float | None = None,
        session: Session | None = None,
    ) -> EmotionState:
        """The newest evaluation drifted toward the baseline up to (day, time_of_day); the baseline if none.
        `session`: read in the caller's session (a turn reads everything it needs in one).

        This is the agent's emotion *now*: every reader that needs a current emotion (a turn, plan/now, the
        face) asks here with the game time. `repo.newest` is the same record undecayed, as it was evaluated
        (the agent's detail shows it with its own day and time)."""
        record = repo.newest(session if session is not None else self.engine, agent.world_id, agent.id)
        return self._state(agent, record, day=day, time_of_day=time_of_day)

    def history(self, agent: Agent, limit: int = 50) -> list[EmotionState]:
        return [self._state(agent, row) for row in repo.history(self.engine, agent.world_id, agent.id, limit)]

    def _state(
        self,
        agent: Agent,
        record: EmotionRecord | None,
        *,
        day: int | None = None,
        time_of_day: float | None = None,
    ) -> EmotionState:
        baseline = baseline_for(agent.traits, agent.backstory)
        if record is None:
            values, at_day, at_time, updated, cause = baseline, day or 1, time_of_day or 0.0, None, None
        else:
            values = clamp_values(record.values)
            at_day, at_time, updated, cause = record.day, record.time_of_day, record.created_at, record.cause
            if day is not None and time_of_day is not None:
                elapsed = game_minutes(day, time_of_day) - game_minutes(record.day, record.time_of_day)
                values = decay(values, baseline, elapsed, self.settings.emotion_half_life_minutes)
                at_day, at_time = day, time_of_day
        shown_label = record.label if record is not None and values == clamp_values(record.values) else None
        return EmotionState(
            agent_id=agent.id,
            values={k: round(v, 1) for k, v in values.items()},
            label=shown_label or label(values, agent.language),
            vrm_emotion=vrm_preset(values),
            baseline=baseline,
            day=at_day,
            time_of_day=at_time,
            updated_at=updated,
            cause=cause,
            evaluated=record is not None,
        )

    # --- evaluating ---
    def schedule(
        self, agent: Agent, *, lines: Sequence[str], cause: str, day: int, time_of_day: float
    ) -> None:
        """Re-evaluate in the background (fire-and-forget), latest-wins per agent.

        While an evaluation for the agent runs, or within `emotion_min_interval_s` of the last one starting,
        newer requests replace each other and only the newest runs next (when the interval is up): a busy
        town (or a slow emotion model) costs at most one call per agent per interval, never a backlog. The
        newest request carries the recent lines, so the skipped ones are still read.
        """
        key = (agent.world_id, agent.id)
        self._queued[key] = (agent, list(lines), cause, day, time_of_day)
        if key not in self._workers:
            self._workers[key] = self.tasks.spawn(self._drain(key), name=f"emotion:{agent.id}")

    async def _drain(self, key: tuple[str, str]) -> None:
        loop = asyncio.get_running_loop()
        try:
            while key in self._queued:
                wait = self._started.get(key, -math.inf) + self.settings.emotion_min_interval_s - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)  # requests arriving meanwhile replace the queued one
                agent, lines, cause, day, time_of_day = self._queued.pop(key)
                if self._seen.get(key) == (tuple(lines), cause):
                    continue  # the same lines for the same cause (a retried job): the answer cannot change
                self._seen[key] = (tuple(lines), cause)
                self._started[key] = loop.time()
                await self.evaluate(agent, lines=lines, cause=cause, day=day, time_of_day=time_of_day)
        finally:
            self._workers.pop(key, None)

    async def evaluate(
        self, agent: Agent, *, lines: Sequence[str], cause: str, day: int, time_of_day: float
    ) -> EmotionState | None:
        """Ask the emotion model for the new state; on failure the previous state stays (the trace says why)."""
        lock = self._locks.setdefault((agent.world_id, agent.id), asyncio.Lock())
        async with lock:  # one evaluation per agent at a time, each reading the previous result
            # Off the event loop like every other read: a turn waiting to be served must not wait on it.
            previous = await asyncio.to_thread(self.current, agent, day=day, time_of_day=time_of_day)
            options = GenerateOptions(
                purpose="emotion",
                priority=PRIORITY_BACKGROUND,
                world_id=agent.world_id,
                agent_id=agent.id,
                language=agent.language,
                temperature=0.3,
                facts={
                    "name": agent.name,
                    "traits": agent.traits,
                    "previous": previous.values,
                    "baseline": previous.baseline,
                    "lines": list(lines)[-12:],
                    "cause": cause,
                    "language": agent.language,
                },
            )
            messages = evaluation_messages(
                name=agent.name,
                persona=", ".join(agent.traits) + (f" / {agent.backstory}" if agent.backstory else ""),
                previous=previous.values,
                previous_label=previous.label,
                lines=lines,
                cause=cause,
                language=agent.language,
            )
            try:
                schema = evaluation_for(agent.language)
                reply = await self.llm.generate_json(messages, schema, options=options)
            except LLMError as exc:
                log.info("emotion evaluation for %s failed, keeping the previous state: %s", agent.id, exc)
                return None
            values, word = settle(reply, previous.values, self.settings.emotion_max_step, agent.language)
            record = await asyncio.to_thread(self._insert, agent, values, word, cause, day, time_of_day)
            return self._announce(agent, record)

    async def feel(
        self, agent: Agent, word: str, *, cause: str, day: int, time_of_day: float
    ) -> EmotionState | None:
        """Apply a feeling the model named elsewhere (a turn reply, the end-of-conversation call) without a
        model call: the word's emotion(s) at its intensity band are the target, reached by the same bounded
        step as an evaluation. None (nothing stored) for a word that is not on the wheel in the agent's
        language: the caller may ask for an evaluation instead."""
        lock = self._locks.setdefault((agent.world_id, agent.id), asyncio.Lock())
        async with lock:
            previous = await asyncio.to_thread(self.current, agent, day=day, time_of_day=time_of_day)
            targets = feeling_targets(word, previous.values, previous.baseline, agent.language)
            if targets is None:
                return None
            wanted = EmotionEvaluation(**{n: round(v) for n, v in targets.items()}, label=word.strip())
            values, label_word = settle(
                wanted, previous.values, self.settings.emotion_max_step, agent.language
            )
            record = await asyncio.to_thread(self._insert, agent, values, label_word, cause, day, time_of_day)
            return self._announce(agent, record)

    def _insert(
        self, agent: Agent, values: dict[str, float], word: str, cause: str, day: int, time_of_day: float
    ) -> EmotionRecord:
        record = repo.build(
            {
                "world_id": agent.world_id,
                "agent_id": agent.id,
                "values": values,
                "label": word,
                "cause": cause[:500],
                "day": day,
                "time_of_day": time_of_day,
            },
        )
        key = (agent.world_id, agent.id)
        inserts = self._inserts.get(key, 0)
        self._inserts[key] = inserts + 1
        keep = self.settings.emotion_history_limit if inserts % PRUNE_EVERY == 0 else None
        repo.insert(self.engine, record, keep=keep)
        return record

    def _announce(self, agent: Agent, record: EmotionRecord) -> EmotionState:
        # Published on the event loop (subscribers such as WebSocket queues are not thread-safe).
        state = self._state(agent, record)
        if self.events is not None:
            self.events.publish(
                EMOTION_UPDATED,
                agent.world_id,
                EmotionPayload(
                    agent_id=agent.id,
                    values=state.values,
                    label=state.label,
                    vrm_emotion=state.vrm_emotion,
                    day=record.day,
                    time_of_day=record.time_of_day,
                    cause=record.cause,
                ),
            )
        return state
