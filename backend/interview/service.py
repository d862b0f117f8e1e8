"""The interview (the Generative Agents paper's evaluation): an agent answers a question from its memory.

One interview is: load the agent -> retrieve the memories the question calls up (the memory service's
scoring, relevance counting double) without marking them accessed -> what the agent knows of anyone the
question names (person memory) ->
one model call (purpose `interview`, traced like every call) within INTERVIEW_DEADLINE_S -> when the
question asks about news a memory holds, the answer asked for again until it tells who hosts it, what, when
and where (interview/grounding.py, up to TELLING_TRIES calls while the deadline has room) -> the answer, or
an in-character "I don't remember" on any failure. Nothing the agent remembers changes: no memory is
written, no access time moves, no emotion, person memory or plan is touched, no event is published (the
trace row and its `llm.call` event are the only records an interview leaves).
"""

from __future__ import annotations

import asyncio
import logging
import unicodedata
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from backend.config import Settings
from backend.conversation.rules import lang_key
from backend.errors import LLMError
from backend.interview import grounding
from backend.interview.prompts import (
    InterviewContext,
    Known,
    Remembered,
    build_facts,
    build_messages,
    fallback_answer,
)
from backend.interview.schemas import InterviewMemory, InterviewReply, InterviewRequest, InterviewResult
from backend.llm.again import Completed, until_complete
from backend.llm.base import LLM, PRIORITY_COUNCIL, GenerateOptions, find_layer
from backend.llm.budget import PromptBudgetLLM, count_messages
from backend.logs import reason
from backend.memory import person, triggers
from backend.memory.models import VISITOR_TAG, Search
from backend.world import repo as world_repo
from backend.world.facts import WorldFactsCache
from backend.world.models import Agent
from backend.world.places import Place

if TYPE_CHECKING:
    from backend.memory.service import MemoryService

log = logging.getLogger(__name__)

#: Part of the deadline retrieval may use; past it the interview falls back (an answer from no memories
#: would read as "I have not heard of it", which is not what the agent knows).
RETRIEVAL_SHARE = 0.25
#: People the question names whose person memory goes into the prompt.
MAX_PEOPLE = 3
#: Someone waits for the answer, but the game does not: after live turns, with councils; on a one-slot engine
#: it stops a running plan or background call rather than wait for it (llm/scheduler.py).
PRIORITY = PRIORITY_COUNCIL


class InterviewService:
    """Answers interview questions. Stateless; one instance per app is enough."""

    def __init__(
        self,
        *,
        engine: Any,
        llm: LLM,
        memory: MemoryService,
        settings: Settings,
        world_facts: WorldFactsCache | None = None,
    ) -> None:
        self.engine = engine
        self.world_facts = world_facts if world_facts is not None else WorldFactsCache()
        self.llm = llm
        self.memory = memory
        self.settings = settings

    async def interview(self, world_id: str, agent_id: str, req: InterviewRequest) -> InterviewResult:
        """Answer `req.question` as `agent_id`, from its memory, changing nothing it remembers.

        Raises:
            NotFound: the world has no such agent.
        """
        deadline = asyncio.get_running_loop().time() + self.settings.interview_deadline_s
        agent, people, world = await asyncio.to_thread(self._read, world_id, agent_id, req.question)
        day, time_of_day = _when(agent, req)
        ctx = InterviewContext(
            agent=agent,
            language=lang_key(agent.language),
            question=req.question,
            day=day,
            time_of_day=time_of_day,
            people=people,
        )
        found = await self._memories(world_id, ctx)
        reply, done = None, None
        if found is not None:  # a mind that could not be read answers "I don't remember" (fallback), not "no"
            ctx.memories = found
            messages, ctx = self._fit(ctx)
            reply, took = await self._ask(world_id, ctx, messages, deadline)
            if reply is not None and reply.answer.strip():
                done = await self._grounded(world_id, ctx, (messages, reply, took), world, deadline)
                reply = done.reply
        answer = reply.answer.strip() if reply is not None else ""
        return InterviewResult(
            agent_id=agent.id,
            question=req.question,
            answer=answer or fallback_answer(ctx.language),
            memories_used=[InterviewMemory.model_validate(vars(m)) for m in ctx.memories],
            fallback=not answer,
            asked_again=done.asked_again if done is not None else None,
            tries=done.tries if done is not None else 1 if found is not None else 0,
        )

    async def _grounded(
        self,
        world_id: str,
        ctx: InterviewContext,
        first: tuple[list[dict[str, str]], InterviewReply, float],
        world: tuple[list[Place], Mapping[str, str]],
        deadline: float,
    ) -> Completed[InterviewReply]:
        """The first answer, or a later one that tells more of the news the question asks about and a memory
        holds (interview/grounding.py)."""
        messages, reply, took = first
        places, names = world
        asked = grounding.news_asked(ctx, places, names)
        if asked is None:
            return Completed(reply, None, 1)
        loop = asyncio.get_running_loop()
        done = await until_complete(
            self.llm, reply, asked=(messages, InterviewReply, self.options(world_id, ctx)),
            lacks=lambda r: grounding.lacks(r.answer, asked, ctx, places, names),
            ask=lambda left: grounding.ask(asked, left, ctx), took_s=took,
            remaining_s=lambda: deadline - loop.time(), tries=self.settings.telling_tries, clock=loop.time,
        )  # fmt: skip
        if done.asked_again is not None:
            log.info("interview of %s asked again (%d calls; the first answer left out %s of memory %d)",
                     ctx.agent.id, done.tries, ", ".join(done.asked_again), asked.memory_id)  # fmt: skip
        return done

    def _read(
        self, world_id: str, agent_id: str, question: str
    ) -> tuple[Agent, list[Known], tuple[list[Place], Mapping[str, str]]]:
        """The agent (NotFound if none), its person memory of the people the question names, and the world's
        places and people's names (what news in a memory is read against)."""
        agent = self.memory.require_agent(world_id, agent_id)
        asked = _folded(question)
        named = [
            row
            for row in self.memory.people.everyone((world_id, agent.id))
            if any(key and _folded(key) in asked for key in (row.other_name, row.other_id))
        ][:MAX_PEOPLE]
        known = []
        for row in named:
            text = person.context(row)
            if text:
                known.append(Known(row.other_id, row.other_name, text))
        with world_repo.session(self.engine) as session:
            world = self.world_facts.read(session, world_id)
        places = [Place(spot.id, spot.name) for spot in world.spots]
        return agent, known, (places, world.names)

    async def _memories(self, world_id: str, ctx: InterviewContext) -> list[Remembered] | None:
        """What the question calls up, not marked accessed; None if retrieval fails or is slow.

        "What did you do today?" gets the latest observations in time order, as a turn does. Any other
        question searches every memory type with relevance counting double (a turn's "past" weighting): an
        interview asks what the agent knows, and a turn's "knowledge" retrieval would show only reflections
        once an agent has k of them, hiding the observation that holds the news."""
        k, settings = self.settings.retrieval_k, self.settings
        if triggers.classify(ctx.question) == "recent":
            search = self.memory.latest(
                world_id,
                ctx.agent.id,
                k=k,
                day=ctx.day,
                time_of_day=ctx.time_of_day,
                touch=False,
            )
        else:
            weights: dict[str, float | None] = {
                "relevance": self.memory.settings.weights.relevance * triggers.RELEVANCE_BOOST
            }
            query = Search(k, weights, ctx.day, ctx.time_of_day, touch=False)
            search = self.memory.retrieve(world_id, ctx.agent.id, ctx.question, query)
        try:
            found = await asyncio.wait_for(search, timeout=settings.interview_deadline_s * RETRIEVAL_SHARE)
        except (LLMError, TimeoutError) as exc:
            log.warning("interview of %s falls back: retrieval failed: %s", ctx.agent.id, reason(exc))
            return None
        return [
            Remembered(
                s.memory.id,
                s.memory.type,
                s.memory.content,
                VISITOR_TAG in (s.memory.tags or ()),
                s.memory.created_day,
            )
            for s in found
            if s.memory.id
        ]

    def options(self, world_id: str, ctx: InterviewContext) -> GenerateOptions:
        return GenerateOptions(
            purpose="interview",
            priority=PRIORITY,
            world_id=world_id,
            agent_id=ctx.agent.id,
            language=ctx.language,
            facts=build_facts(ctx),
        )

    def _fit(self, ctx: InterviewContext) -> tuple[list[dict[str, str]], InterviewContext]:
        """The prompt within the model's budget: the least relevant memories go first, then people; the
        rules and the question are never cut. Returns the context the prompt was built from."""
        messages = build_messages(ctx)
        budgeting = find_layer(self.llm, PromptBudgetLLM)
        if budgeting is None:
            return messages, ctx
        budget = budgeting.budget(GenerateOptions(purpose="interview"))
        while count_messages(messages, self.llm.count_tokens) > budget:
            if ctx.memories:
                ctx = replace(ctx, memories=ctx.memories[:-1])
            elif ctx.people:
                ctx = replace(ctx, people=ctx.people[:-1])
            else:
                break  # the rules and the question alone: the budget wrapper cuts the rest
            messages = build_messages(ctx)
        return messages, ctx

    async def _ask(
        self, world_id: str, ctx: InterviewContext, messages: list[dict[str, str]], deadline: float
    ) -> tuple[InterviewReply | None, float]:
        """The first model call and its seconds; None (-> the fallback answer) on error, invalid reply or
        deadline."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        budget = deadline - started
        if budget <= 0:
            log.warning("interview of %s falls back: INTERVIEW_DEADLINE_S passed", ctx.agent.id)
            return None, 0.0
        call = self.llm.generate_json(messages, InterviewReply, options=self.options(world_id, ctx))
        try:
            return await asyncio.wait_for(call, timeout=budget), loop.time() - started
        except (LLMError, TimeoutError) as exc:
            log.warning("interview of %s falls back: %s", ctx.agent.id, reason(exc))
        except Exception:  # noqa: BLE001 - a provider bug must still give an answer, never a 500
            log.exception("interview of %s: unexpected model failure", ctx.agent.id)
        return None, loop.time() - started


def _when(agent: Agent, req: InterviewRequest) -> tuple[int | None, float | None]:
    """The interview's game time: as asked, else the agent's last state report, else unknown (retrieval then
    counts recency from the agent's newest memory)."""
    day, time_of_day = req.day, req.time_of_day
    if day is None and time_of_day is None:
        return agent.state_day, agent.state_time_of_day
    if day is None:
        day = agent.state_day or 1
    return day, time_of_day


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()
