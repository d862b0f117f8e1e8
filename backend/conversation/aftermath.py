"""What happens after a turn's reply is sent: memories, emotion, events, reflections, person memory.

Nothing here is on the request path. The turn's observations and the conversation's reflections are
persisted jobs (conversation/jobs.py) committed with the turn; `observe_job` and `reflect_job` are their
handlers, registered on the app's job runner in backend/app.py. Emotion and events stay in memory.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from backend.conversation import group, repo
from backend.conversation import jobs as turn_jobs
from backend.conversation.people import read_people_apart
from backend.conversation.prompts import TurnContext, observation_texts
from backend.conversation.rules import lang_key
from backend.errors import LLMError
from backend.events import (
    CONVERSATION_ENDED,
    CONVERSATION_TURN,
    ConversationEndedPayload,
    EventBus,
    TurnPayload,
)
from backend.ids import is_player
from backend.intention.fact import Slots
from backend.jobs import repo as job_repo
from backend.jobs.models import Job
from backend.jobs.runner import NotReady
from backend.memory import afterthought
from backend.tasks import TaskRunner
from backend.world.models import Agent

if TYPE_CHECKING:
    from backend.emotion.service import EmotionService
    from backend.memory.models import Memory, MemoryCreate
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

    def after_turn(
        self,
        world_id: str,
        ctx: TurnContext,
        result: dict[str, Any],
        location: str | None,
        *,
        feeling: str | None = None,
    ) -> None:
        """Publish the turn and update emotion (its observations are the turn's persisted job).

        With EMOTION_FROM_TURN the speaker's `feeling` (its reply's wheel word) is applied without a model call
        and the listener waits for its own reply (or the end of the conversation); a reply without a usable
        word gets the speaker evaluated. Otherwise both participants are evaluated by the emotion model.
        Emotion stays in-memory fire-and-forget even with persisted jobs: it is latest-wins (the next turn
        updates it again) and decays to neutral, so a crash loses nothing a later update would not replace.
        """
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
        if self.emotion is not None:
            self._turn_emotion(ctx, result["dialogue"], feeling)

    def visitor_said(self, world_id: str, reply: dict[str, Any], location: str | None) -> None:
        """Publish a visitor's stored line (`conversation.turn` with the player as `agent_id`): a dashboard or
        another Unity client sees the whole conversation. Nothing else follows a visitor's line (no emotion)."""
        if self.events is None:
            return
        self.events.publish(
            CONVERSATION_TURN,
            world_id,
            TurnPayload(
                session_id=reply["session_id"], agent_id=reply["speaker_id"], target_id=reply["target_id"],
                turn_index=reply["turn_index"], dialogue=reply["dialogue"], emotion=reply["emotion"],
                fallback=False, is_conversation_end=False, location_name=location,
            ),
        )  # fmt: skip

    def _turn_emotion(self, ctx: TurnContext, dialogue: str, feeling: str | None) -> None:
        assert self.emotion is not None
        lines = [*ctx.history, f"{ctx.speaker.name}: {dialogue}"][-EMOTION_LINES:]
        evaluate = [agent for agent in (ctx.speaker, ctx.partner) if not is_player(agent.id)]
        if self.emotion.settings.emotion_from_turn:
            evaluate = [] if feeling else [ctx.speaker]
            if feeling:
                self.tasks.spawn(self._feel(ctx, lines, feeling), name=f"feel:{ctx.speaker.id}")
        for agent in evaluate:
            cause = self._turn_cause(agent, ctx)
            self.emotion.schedule(agent, lines=lines, cause=cause, day=ctx.day, time_of_day=ctx.time_of_day)

    async def _feel(self, ctx: TurnContext, lines: list[str], feeling: str) -> None:
        """The speaker's own word for its feeling; one off the wheel costs an evaluation instead."""
        assert self.emotion is not None
        cause, day, time_of_day = self._turn_cause(ctx.speaker, ctx), ctx.day, ctx.time_of_day
        felt = await self.emotion.feel(ctx.speaker, feeling, cause=cause, day=day, time_of_day=time_of_day)
        if felt is None:
            self.emotion.schedule(ctx.speaker, lines=lines, cause=cause, day=day, time_of_day=time_of_day)

    @staticmethod
    def _turn_cause(agent: Agent, ctx: TurnContext) -> str:
        other = ctx.partner if agent is ctx.speaker else ctx.speaker
        place = ctx.location_name or ""
        if agent.language == "en":
            return f"talking with {other.name}" + (f" at {place}" if place else "")
        return f"{place}で{other.name}と話している" if place else f"{other.name}と話している"

    async def observe_job(self, job: Job) -> None:
        """The `conversation.observe` handler (`attempts` counts this run: 1 means no earlier run can have
        stored anything)."""
        await self.observe(job.world_id, job.payload, rerun=job.attempts > 1)

    async def reflect_job(self, job: Job) -> None:
        """The `conversation.reflect` handler.

        Raises:
            NotReady: an observation of the conversation is still pending or running (the reflection reads
                every line's: deferred without holding a job slot).
            RuntimeError: the model failed to reflect (the runner retries the job).
        """
        session_id = str(job.payload["session_id"])
        prefix = turn_jobs.observe_prefix(job.world_id, session_id)
        if await asyncio.to_thread(job_repo.live_with_prefix, self.engine, prefix):
            raise NotReady("observations of the conversation are still pending", delay_s=0.2)
        made = await self.reflect_participant(job.world_id, session_id, str(job.payload["agent_id"]))
        if not made:
            raise RuntimeError(f"the conversation reflection for {job.payload['agent_id']} failed")

    async def observe(self, world_id: str, payload: dict[str, Any], *, rerun: bool = True) -> None:
        """The `conversation.observe` job: every listener's and the speaker's observation of each of its
        lines (players have no memory stream: only agents remember), each stored once, with one memory
        write per agent for all the lines.

        On a `rerun` (the job ran before, and a crash or an error may have cut it short), a line already in
        an agent's memories for this session is skipped; a first run has nothing to skip, so it does not ask.
        """
        session_id = str(payload["session_id"])
        lines = turn_jobs.lines_of(payload)
        ids = sorted(
            {str(who) for line in lines for who in (line["speaker_id"], *turn_jobs.listeners_of(line))}
        )
        people = await asyncio.to_thread(read_people_apart, self.engine, self.memory.agents, world_id, ids)
        items: dict[str, list[MemoryCreate]] = {}
        news: dict[str, list[MemoryCreate]] = {}
        for line in lines:
            for agent, said, heard in self._line_observations(line, people):
                content = _with_facts(said, line, agent, people) if heard and line.get("news") else said
                if rerun and await asyncio.to_thread(
                    self.memory.repo.has_observation, (world_id, agent.id), session_id, content
                ):
                    continue
                heard_news = bool(line.get("news")) and heard
                item = _observation(
                    content, line.get("location_name"), int(line["day"]), float(line["time_of_day"]),
                    news=heard_news, marks=line.get("marks") or (),
                    invitation=heard_news and bool(line.get("invitation")),
                )  # fmt: skip
                (news if heard_news else items).setdefault(agent.id, []).append(item)
        if items:  # every agent's memories of the lines in one write
            await self.memory.add_for(world_id, items, session_id=session_id, rated_later=True)
        if news:  # news the listener heard is rated on its own, not with the conversation's small talk
            await self.memory.add_for(world_id, news, session_id=session_id)

    @staticmethod
    def _line_observations(line: dict[str, Any], people: dict[str, Agent]) -> list[tuple[Agent, str, bool]]:
        """(agent, what it remembers, whether it heard rather than said) for one line, agents only."""
        speaker, target = people.get(line["speaker_id"]), people.get(line["partner_id"])
        if speaker is None:
            return []  # an agent deleted since: nothing to remember into
        listeners = [people[who] for who in turn_jobs.listeners_of(line) if who in people]
        out = []
        for agent, content in observation_texts(speaker, target or speaker, listeners, str(line["dialogue"])):
            if is_player(agent.id) or agent.id in line.get("forgotten", ()):
                continue  # a visitor remembers nothing here; a deleted agent forgot (jobs.forget_agent)
            out.append((agent, content, agent is not speaker))
        return out

    def ended(self, world_id: str, session_id: str, participants: list[str], reason: str, turns: int) -> None:
        if self.events is not None:
            self.events.publish(
                CONVERSATION_ENDED,
                world_id,
                ConversationEndedPayload(
                    session_id=session_id, participants=participants, reason=reason, turn_count=turns
                ),
            )

    async def reflect_participant(self, world_id: str, session_id: str, agent_id: str) -> bool:
        """One participant's end-of-conversation call (reflection, person memory, feeling) and threshold check.

        The call is about the participant it talked with most (in a conversation of two, the other one); in
        a group, what it learnt of each other participant who spoke is folded into person memory too.
        Idempotent (the `conversation.reflect` job runs it again after a crash): the call is asked only while
        the session's reflection or its fold into person memory is missing, and only the missing one is
        written (backend/memory/afterthought.py).
        Returns False when the model failed to reflect (the caller may retry), True otherwise.
        """
        conv = await asyncio.to_thread(repo.read_conversation, self.engine, world_id, session_id)
        members = repo.participants(conv)
        people = await asyncio.to_thread(
            read_people_apart, self.engine, self.memory.agents, world_id, members
        )
        me = people.get(agent_id)
        transcript = list(conv.transcript or [])
        others = _by_lines(agent_id, members, people, transcript)
        if me is None or not others:
            return True  # an agent deleted mid-conversation has nothing left to reflect into
        partner = others[0]
        day = conv.end_day or conv.start_day
        time_of_day = conv.end_time_of_day if conv.end_time_of_day is not None else conv.start_time_of_day
        made = await asyncio.to_thread(
            self.memory.repo.conversation_reflection, (world_id, me.id), session_id
        )
        evidence = await asyncio.to_thread(self.memory.repo.observation_ids, (world_id, me.id), session_id)
        about = afterthought.Conversation(
            session_id, partner.id, partner.name, transcript, evidence, day, time_of_day, me.language,
            conv.location_name,
        )  # fmt: skip
        made = await self._afterthought(me, partner, about, made)
        if made is not None:  # the lines are rated with their conversation (again after a crash: idempotent)
            await self.memory.rate_lines((world_id, me.id), session_id, evidence, int(made.importance))
        for other in others[1:]:  # the rest of a group: what it learnt of each (background calls)
            await self.memory.people.update(
                (world_id, me.id), other_id=other.id, other_name=other.name, transcript=transcript,
                session_id=session_id, day=day, time_of_day=time_of_day, language=me.language,
            )  # fmt: skip
        await self.memory.maybe_reflect(world_id, me.id, day=day, time_of_day=time_of_day)
        return made is not None

    async def _afterthought(
        self, me: Agent, partner: Agent, about: afterthought.Conversation, made: Memory | None
    ) -> Memory | None:
        """The one end-of-conversation call, asked only while a half of it is not stored; its feeling is
        applied like a turn's (with EMOTION_FROM_TURN), else the emotion model evaluates the conversation."""
        key = (me.world_id, me.id)
        state = await self.memory.afterthoughts.done(key, about, made)
        if state.complete:
            return state.reflection
        from_reply = self.emotion is not None and self.emotion.settings.emotion_from_turn
        reply = await self.memory.afterthoughts.ask(
            key, about, state.person, me.language if from_reply else None
        )
        made = await self.memory.afterthoughts.apply(key, about, state, reply)
        if self.emotion is not None and not isinstance(reply, LLMError):
            await self._felt_at_end(me, partner, about, reply.feeling if from_reply else None)
        return made

    async def _felt_at_end(
        self, me: Agent, partner: Agent, about: afterthought.Conversation, word: str | None
    ) -> None:
        """The participant's feeling once it is over, from its own word (so a listener who did not speak
        last gets one too); no usable word, or EMOTION_FROM_TURN off, costs an evaluation instead."""
        assert self.emotion is not None
        cause = (
            f"finished talking with {partner.name}"
            if me.language == "en"
            else f"{partner.name}との会話が終わった"
        )
        day, time_of_day = about.day, about.time_of_day
        if word and await self.emotion.feel(me, word, cause=cause, day=day, time_of_day=time_of_day):
            return
        lines = about.transcript[-EMOTION_LINES:]
        self.emotion.schedule(me, lines=lines, cause=cause, day=day, time_of_day=time_of_day)


def _by_lines(
    agent_id: str, members: list[str], people: dict[str, Agent], transcript: list[str]
) -> list[Agent]:
    """The other participants who still exist, the one who said most lines first (then in joining order);
    in a group, only those who said something (a silent bystander teaches nothing)."""
    names = {member: people[member].name for member in members if member in people}
    said = group.speakers(transcript, names)
    others = [people[m] for m in members if m != agent_id and m in people]
    counts = {other.id: said.count(other.id) for other in others}
    ranked = sorted(others, key=lambda other: -counts[other.id])
    return ranked if len(others) == 1 else [other for other in ranked if counts[other.id]]


def _observation(
    content: str,
    location: str | None,
    day: int,
    time_of_day: float,
    *,
    news: bool = False,
    marks: Sequence[str] = (),
    invitation: bool = False,
) -> MemoryCreate:
    """A participant's observation of a line (importance left to the background rating); news the listener
    heard is tagged `news`, which keeps the conversation's own importance off it (see rate_lines); `marks`
    (a visitor's words: conversation/heard.py) are added as they are. An `invitation` to the listener is
    rated by rule at once (INVITATION_IMPORTANCE, tagged `invitation`): a small model's low rating, or a
    rating job preempted by live turns, cannot keep it from being passed on."""
    from backend.memory.models import INVITATION_IMPORTANCE, INVITATION_TAG, NEWS_TAG, MemoryCreate
    from backend.memory.tags import memory_tags

    extra = [*([NEWS_TAG] if news else []), *([INVITATION_TAG] if invitation else []), *marks]
    return MemoryCreate(
        type="observation", content=content, location_name=location, day=day, time_of_day=time_of_day,
        tags=[*memory_tags(content), *extra] if extra else None,
        importance=INVITATION_IMPORTANCE if invitation else None,
    )  # fmt: skip


def _with_facts(content: str, line: dict[str, Any], listener: Agent, people: dict[str, Agent]) -> str:
    """A listener's memory of a line that told it news, with the news's facts after the words (`facts`:
    the told item's slots and host): when, where and who hosts survive however the teller worded them. In
    the listener's own voice ("I heard it from Ben."): a small model copies a memory's words into its lines."""
    facts = line.get("facts")
    if not facts:
        return content
    slots = Slots.from_dict(facts["slots"])
    teller = people.get(str(line["speaker_id"]))
    names = {person.id: person.name for person in people.values()}
    language = lang_key(listener.language)
    fact_line = slots.describe(
        language, host_name=str(facts["host_name"]), stance="remembered",
        today=int(line["day"]), heard_from=teller.name if teller else None, names=names,
    )  # fmt: skip
    return f"{content}{'。' if language == 'ja' else ' '}{fact_line}"
