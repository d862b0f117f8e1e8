"""What happens after a turn's reply is sent: memories, emotion, events, reflections, person memory.

Nothing here is on the request path. Observations are tracked per session so that the end-of-conversation
reflection waits for every line to be stored.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from backend.conversation import store
from backend.conversation.prompts import TurnContext, observation_texts
from backend.events import (
    CONVERSATION_ENDED,
    CONVERSATION_TURN,
    ConversationEndedPayload,
    EventBus,
    TurnPayload,
)
from backend.tasks import TaskRunner
from backend.world.models import Agent

if TYPE_CHECKING:
    from backend.emotion.service import EmotionService
    from backend.memory.service import MemoryService

log = logging.getLogger(__name__)

#: Lines of the conversation the emotion model reads.
EMOTION_LINES = 8


class Aftermath:
    def __init__(
        self,
        *,
        engine: Any,
        memory: MemoryService,
        tasks: TaskRunner,
        emotion: EmotionService | None = None,
        events: EventBus | None = None,
    ) -> None:
        self.engine = engine
        self.memory = memory
        self.tasks = tasks
        self.emotion = emotion
        self.events = events
        # Observation tasks per (world, session): a reflection waits for them so it sees every line.
        self._pending: dict[tuple[str, str], set[asyncio.Task[Any]]] = {}

    def after_turn(
        self, world_id: str, ctx: TurnContext, result: dict[str, Any], location: str | None
    ) -> None:
        """Publish the turn, store both observations, re-evaluate both participants' emotion."""
        session_id = result["session_id"]
        if self.events is not None:
            self.events.publish(
                CONVERSATION_TURN,
                world_id,
                TurnPayload(
                    session_id=session_id,
                    agent_id=ctx.speaker.id,
                    target_id=ctx.partner.id,
                    turn_index=result["turn_index"],
                    dialogue=result["dialogue"],
                    emotion=result["emotion"],
                    fallback=result["fallback"],
                    is_conversation_end=result["is_conversation_end"],
                    end_reason=result["end_reason"],
                    location_name=location,
                ),
            )
        self._track(
            world_id, session_id, self._observe(world_id, ctx, result["dialogue"], location, session_id)
        )
        if self.emotion is not None:
            lines = [*ctx.history, f"{ctx.speaker.name}: {result['dialogue']}"][-EMOTION_LINES:]
            for agent in (ctx.speaker, ctx.partner):
                cause = self._turn_cause(agent, ctx)
                self.emotion.schedule(
                    agent, lines=lines, cause=cause, day=ctx.day, time_of_day=ctx.time_of_day
                )

    @staticmethod
    def _turn_cause(agent: Agent, ctx: TurnContext) -> str:
        other = ctx.partner if agent is ctx.speaker else ctx.speaker
        place = ctx.location_name or ""
        if agent.language == "en":
            return f"talking with {other.name}" + (f" at {place}" if place else "")
        return f"{place}で{other.name}と話している" if place else f"{other.name}と話している"

    def _track(self, world_id: str, session_id: str, coro: Any) -> None:
        key = (world_id, session_id)
        task = self.tasks.spawn(coro, name=f"observe:{session_id}")
        pending = self._pending.setdefault(key, set())
        pending.add(task)

        def _forget(done: asyncio.Task[Any]) -> None:
            pending.discard(done)
            if not pending:
                self._pending.pop(key, None)

        task.add_done_callback(_forget)

    async def _observe(
        self, world_id: str, ctx: TurnContext, dialogue: str, location: str | None, session_id: str
    ) -> None:
        """One observation memory for each participant (importance is rated in the background)."""
        from backend.memory.models import MemoryCreate

        for agent, content in observation_texts(ctx.speaker, ctx.partner, dialogue):
            item = MemoryCreate(
                type="observation",
                content=content,
                location_name=location,
                day=ctx.day,
                time_of_day=ctx.time_of_day,
            )
            await self.memory.add(world_id, agent.id, item, session_id=session_id)

    def ended(self, world_id: str, session_id: str, participants: list[str], reason: str, turns: int) -> None:
        if self.events is not None:
            self.events.publish(
                CONVERSATION_ENDED,
                world_id,
                ConversationEndedPayload(
                    session_id=session_id, participants=participants, reason=reason, turn_count=turns
                ),
            )

    def reflect(self, world_id: str, session_id: str) -> None:
        waiting = set(self._pending.get((world_id, session_id), set()))
        self.tasks.spawn(self._reflect(world_id, session_id, waiting), name=f"reflect:{session_id}")

    async def _reflect(self, world_id: str, session_id: str, waiting: set[asyncio.Task[Any]]) -> None:
        """Per participant: a conversation reflection, person memory, emotion, then a threshold check."""
        if waiting:
            await asyncio.gather(*waiting, return_exceptions=True)
        conv, agents = await asyncio.to_thread(store.load_participants, self.engine, world_id, session_id)
        day = conv.end_day or conv.start_day
        time_of_day = conv.end_time_of_day if conv.end_time_of_day is not None else conv.start_time_of_day
        transcript = list(conv.transcript or [])
        for me, partner in ((agents.get(conv.agent_a), agents.get(conv.agent_b)),
                            (agents.get(conv.agent_b), agents.get(conv.agent_a))):  # fmt: skip
            if me is None or partner is None:
                continue  # an agent deleted mid-conversation has nothing left to reflect into
            try:
                evidence = await asyncio.to_thread(
                    store.observation_ids, self.engine, world_id, me.id, session_id
                )
                await self.memory.reflect_on_conversation(
                    world_id,
                    me.id,
                    session_id=session_id,
                    partner_name=partner.name,
                    transcript=transcript,
                    evidence_ids=evidence,
                    day=day,
                    time_of_day=time_of_day,
                    language=me.language,
                )
                await self.memory.update_person_memory(
                    world_id,
                    me.id,
                    other_id=partner.id,
                    other_name=partner.name,
                    transcript=transcript,
                    session_id=session_id,
                    day=day,
                    time_of_day=time_of_day,
                    language=me.language,
                )
                if self.emotion is not None:
                    cause = (
                        f"finished talking with {partner.name}"
                        if me.language == "en"
                        else f"{partner.name}との会話が終わった"
                    )
                    self.emotion.schedule(
                        me, lines=transcript[-EMOTION_LINES:], cause=cause, day=day, time_of_day=time_of_day
                    )
                await self.memory.maybe_reflect(world_id, me.id, day=day, time_of_day=time_of_day)
            except Exception:  # noqa: BLE001 - one participant's failure must not cost the other its reflection
                log.exception("conversation reflection for %s in %s failed", me.id, session_id)
