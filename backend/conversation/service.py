"""Conversation turns: one model call on the request path, server-side end rules, retry-safe storage.

A turn is: validate and load (agents, stored reply for a retry, plan item) -> retrieve memories -> one model
call within the turn deadline (fallback line on any failure) -> end rules -> commit the turn -> reply.
Observation memories and end-of-conversation reflections run afterwards as persisted jobs, committed in the
turn's own transaction (conversation/jobs.py, conversation/repo.py), so a reply Unity got is never lost
from memory by a crash.
"""

from __future__ import annotations

import asyncio
import logging
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from backend.action.prompts import describe_actions
from backend.action.schemas import AgentAction
from backend.action.strikes import ActionStrikes
from backend.action.targets import ActionTargets, offered_targets
from backend.action.validate import validate_actions
from backend.config import Settings
from backend.conversation import completing, group, heard, repo, rules
from backend.conversation import jobs as turn_jobs
from backend.conversation.aftermath import Aftermath
from backend.conversation.people import read_people, with_members
from backend.conversation.prompts import TurnContext, build_facts, build_messages, read_ahead_part
from backend.conversation.schemas import (
    MAX_REPLY_CHARS,
    EndRequest,
    EndResult,
    TurnReply,
    TurnRequest,
    TurnResult,
    turn_reply_for,
)
from backend.conversation.transcript import check_history
from backend.errors import LLMError, MachiError
from backend.ids import is_player
from backend.intention import service as intentions
from backend.jobs.runner import JobRunner
from backend.llm.base import LLM, PRIORITY_TURN, GenerateOptions, find_layer
from backend.llm.budget import PromptBudgetLLM, count_messages
from backend.llm.scheduler import find_scheduler
from backend.logs import reason
from backend.memory.models import Recalled, Search
from backend.memory.timewords import WEEKDAYS_EN
from backend.memory.triggers import TurnAsk
from backend.player import repo as players
from backend.tasks import TaskRunner
from backend.world import nearby
from backend.world.facts import WorldFacts, WorldFactsCache
from backend.world.models import Agent
from backend.world.schemas import StateReport
from backend.world.service import agent_not_found

if TYPE_CHECKING:
    from backend.emotion.schemas import EmotionState
    from backend.emotion.service import EmotionService
    from backend.memory.service import MemoryService

log = logging.getLogger(__name__)

#: A model line longer than this is cut (a runaway model must not flood Unity's speech bubble).
MAX_DIALOGUE_CHARS = MAX_REPLY_CHARS
#: Part of the turn deadline kept back for storing the turn after the model answers.
STORE_MARGIN_S = 0.5
#: Part of the turn deadline memory retrieval may use before the turn goes on without memories.
RETRIEVAL_SHARE = 0.25
#: History lines a turn prompt keeps however tight its budget (the partner's last line and the one before).
KEPT_LINES = 2
#: History lines used (with the partner's name) as the query for the memories the last lines bring up.
QUERY_LINES = 3
#: How many memories the last lines may bring up besides the conversation's standing ones (RETRIEVAL_K).
LINE_MEMORIES = 3

#: Checks a model line of a conversation with a visitor before Unity gets it (conversation/visitor.py):
#: (prepared turn, dialogue) -> the deflection to say instead, or None when the line may be said.
ReplyGuard = Callable[["PreparedTurn", str], Awaitable["str | None"]]

#: The speaker's stored plan item at a time, read in the turn's session (planning's, passed in by the app):
#: (session, world_id, agent_id, day, time_of_day) -> the item, or None.
PlanItemAt = Callable[[Any, str, str, int, float], "dict[str, Any] | None"]


@dataclass
class TurnState:
    """What storage knows about a requested turn before the model is asked."""

    speaker: Agent
    partner: Agent
    stored: repo.StoredTurn
    plan_activity: str | None = None
    #: The place of the speaker's planned activity now (a place the prompt offers first).
    plan_place: str | None = None
    #: Every participant by id (agents, and players as visitor records: conversation/people.py).
    people: dict[str, Agent] = field(default_factory=dict)
    #: What an action of the reply may name (ACTIONS_IN_TURNS), None when replies carry no actions.
    facts: WorldFacts | None = None


@dataclass
class PreparedTurn:
    """A validated turn request with everything needed to ask the model, or the stored reply of a retry."""

    world_id: str
    request: TurnRequest
    deadline: float
    stored: dict[str, Any] | None = None
    ctx: TurnContext | None = None
    last_emotion: str | None = None
    #: Where the request's history differed from the stored transcript (the reply's `history_fixes`).
    fixes: list[dict[str, Any]] = field(default_factory=list)
    #: The conversation's memory watermark (a first turn takes it now and stores it with the conversation).
    watermark: int | None = None
    #: The speaker's standing memory ids when this turn chose them (its first in the conversation): stored.
    standing: list[int] | None = None
    #: A look ahead (`prefill_next`): nothing is marked accessed, and what the last lines bring up is skipped.
    dry: bool = False
    #: The conversation's participants (joiners included) and who has left it, before this line.
    members: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    #: Display names of the participants, by id (who said which transcript line; who a line names).
    names: dict[str, str] = field(default_factory=dict)
    #: A reply decided without the model (a visitor's line moderation held back: the deflection).
    forced: TurnReply | None = None
    #: The reply is an in-character deflection (moderation): told to Unity as `deflected`.
    deflected: bool = False
    #: The tags of what the speaker says in this turn (heard.Split.marks): a visitor's words in view.
    marks: list[str] = field(default_factory=list)
    #: What moderation held back in this turn (kept on its turn row), None when nothing.
    moderation: dict[str, Any] | None = None
    #: What an action of the reply may name; the actions dropped for naming something else (kept on the row).
    facts: WorldFacts | None = None
    #: The places the prompt offers as `go_to` targets (world/nearby.py: at most PROMPT_PLACES_MAX).
    places: tuple[str, ...] = ()
    dropped: list[dict[str, Any]] = field(default_factory=list)
    #: The slots of its news the model's first line left out, when it was asked again (completing.py), and
    #: the model calls the line took then.
    asked_again: list[str] | None = None
    tries: int = 1

    @property
    def turn_index(self) -> int:
        return len(self.request.history)


class ConversationService:
    """Runs turns and ends conversations. One instance per app (it tracks pending background work)."""

    def __init__(
        self,
        *,
        engine: Any,
        llm: LLM,
        memory: MemoryService,
        tasks: TaskRunner,
        settings: Settings,
        after: Aftermath,
        jobs: JobRunner,
        plan_item: PlanItemAt,
        emotion: EmotionService | None = None,
        world_facts: WorldFactsCache | None = None,
    ) -> None:
        self.engine = engine
        # The world's places, names and gestures, checked against its revision on each read (world/facts.py).
        self.world_facts = world_facts if world_facts is not None else WorldFactsCache()
        # Observations and reflections are persisted jobs committed with the turn (conversation/jobs.py).
        self.jobs = jobs
        self.llm = llm
        self.memory = memory
        self.tasks = tasks
        self.settings = settings
        self.emotion = emotion
        self.after = after
        self.plan_item = plan_item
        # Conversations whose replies keep giving invalid actions are asked without them (action/strikes.py).
        self.strikes = ActionStrikes(settings.actions_off_after_invalid)
        # Checks model lines of conversations with a visitor (set by the app: conversation/visitor.py).
        self.guard: ReplyGuard | None = None
        # Whether a partial streamed line of a visitor conversation may be shown yet (the word list).
        self.stream_check: Callable[[str], bool] | None = None
        # (world, agent, partner) opening read-aheads running in this process: in-flight work, not state
        # another process can change (a read-ahead only warms this process's model server cache)
        self._opening: set[tuple[str, str, str]] = set()

    # --- the turn ---
    async def take_turn(self, world_id: str, req: TurnRequest) -> dict[str, Any]:
        """Answer one turn (or return the stored reply when the turn is a retry).

        Raises:
            NotFound: unknown agent or target.  Conflict: the conversation has ended.
        """
        return await self.answer(await self.prepare(world_id, req))

    async def answer(self, prepared: PreparedTurn) -> dict[str, Any]:
        """A prepared turn's reply: the stored one of a retry, else the model's (or the reply decided without
        it: `forced`), composed and committed by `finish`."""
        if prepared.stored is not None:
            return prepared.stored
        reply = prepared.forced if prepared.forced is not None else await self._ask(prepared)
        return await self.finish(prepared, reply)

    async def prepare(self, world_id: str, req: TurnRequest, *, dry: bool = False) -> PreparedTurn:
        """Validate against storage and build the turn's context (no model call, nothing stored; with `dry`,
        no memory is marked accessed either)."""
        loop = asyncio.get_running_loop()
        prepared = PreparedTurn(world_id, req, loop.time() + self.settings.turn_deadline_s, dry=dry)
        state, person_summary, feeling, mind = await asyncio.to_thread(self._read_state, world_id, req)
        if state.stored.reply is not None:
            prepared.stored = state.stored.reply
            return prepared
        prepared.members, prepared.left = state.stored.members, state.stored.left
        prepared.facts = state.facts
        prepared.names = {member: person.name for member, person in state.people.items()}
        req = self._check_history(prepared, state)
        language = rules.lang_key(req.language or state.speaker.language)
        partner_last = rules.line_text(req.history[-1]) if req.history else None
        prepared.watermark = await self.watermark(state.stored)
        standing, brought_up = await self._memories(prepared, state, partner_last)
        recalled = await self._heard(prepared, standing, brought_up, language)
        prepared.marks = recalled.marks(prepared.members or req.members())
        if state.facts is not None:
            prepared.places = self._offered_places(state, req, recalled, mind)
        prepared.ctx = TurnContext(
            speaker=state.speaker,
            partner=state.partner,
            language=language,
            location_name=req.location_name,
            day=req.day,
            time_of_day=req.time_of_day,
            history=list(req.history),
            turn_index=prepared.turn_index,
            max_turns=self.max_lines(prepared.members),
            plan_activity=state.plan_activity,
            memories=[item.content for item in recalled.standing],
            memory_ids=[item.id for item in recalled.standing],
            brought_up=[item.content for item in recalled.brought_up],
            heard=recalled.heard,
            partner_said_farewell=self._said_goodbye(prepared, partner_last),
            person_summary=person_summary,
            ask_feeling=self.emotion is not None and self.settings.emotion_from_turn,
            intentions=mind.lines if mind else [],
            tell=mind.tell if mind else None,
            others=self._others(prepared, state),
            visitor=any(is_player(member) for member in prepared.members),
            actions=self._actions_text(prepared, state),
        )
        if feeling is not None:
            prepared.ctx.emotion = feeling.model_dump(mode="json")
        return prepared

    async def watermark(self, stored: repo.StoredTurn) -> int | None:
        """The conversation's memory watermark: taken at its first line (one past the newest memory id),
        then the stored one."""
        if stored.transcript:
            return stored.watermark
        return await asyncio.to_thread(self.memory.watermark)

    def _said_goodbye(self, prepared: PreparedTurn, partner_last: str | None) -> bool:
        """Whether the partner's last line is a goodbye the speaker should return (in a group, only one that
        took the partner away)."""
        phrases, opening = self.settings.farewell_phrases, prepared.turn_index == 1  # it opened the talk
        if not partner_last or not rules.has_farewell(partner_last, phrases, opening=opening):
            return False
        return len(prepared.members) < 3 or prepared.request.target_id in prepared.left

    @staticmethod
    def _others(prepared: PreparedTurn, state: TurnState) -> list[Agent]:
        """The group's other participants still in it, besides the speaker and the one addressed."""
        req = prepared.request
        return [
            state.people[member]
            for member in group.active(prepared.members, prepared.left)
            if member in state.people and member not in (req.agent_id, req.target_id)
        ]

    def _offered_places(
        self,
        state: TurnState,
        req: TurnRequest,
        recalled: heard.Split,
        mind: intentions.TurnIntentions | None,
    ) -> tuple[str, ...]:
        """The places the turn's actions offer (world/nearby.py): where the speaker is, its home, its plan's
        place and the place of the news it is to tell, the places its memories and intentions name, then
        the nearest; at most PROMPT_PLACES_MAX however big the town."""
        assert state.facts is not None
        speaker = state.speaker
        told = mind.tell.slots.where if mind and mind.tell and mind.tell.slots else None
        text = "\n".join([*(m.content for m in recalled.standing), *(m.content for m in recalled.brought_up),
                          *(mind.lines if mind else [])])  # fmt: skip
        chosen = nearby.offered(
            state.facts.spots, cap=self.settings.prompt_places_max,
            here=req.location_name or speaker.location_name, home=speaker.home_poi,
            named=[state.plan_place, told], text=text, position=nearby.position_of(speaker.position),
        )  # fmt: skip
        return tuple(spot.id for spot in chosen)

    @staticmethod
    def _actions_text(prepared: PreparedTurn, state: TurnState) -> str | None:
        """The actions the speaker may take, in words, when the reply may carry them (ACTIONS_IN_TURNS)."""
        targets, facts = _targets(prepared), state.facts
        if targets is None or facts is None:
            return None
        # In English, as the rest of the prompt's instructions are (the speaker still speaks its language).
        return describe_actions(
            "en",
            pois=[(poi, facts.pois[poi]) for poi in targets.places],
            gestures=list(targets.gestures),
            people=[(person, prepared.names[person]) for person in targets.people],
        )

    @staticmethod
    def _check_history(prepared: PreparedTurn, state: TurnState) -> TurnRequest:
        """The request with its history checked against the stored transcript (conversation/transcript.py):
        the stored lines are used where Unity's differ, which is logged and told in the reply."""
        req = prepared.request
        # Unity may name a speaker by id or display name; the transcript and the prompt use display names.
        checked = check_history(
            rules.named_lines(req.history, list(state.people.values())), state.stored.transcript
        )
        if checked.fixes:
            log.warning(
                "turn %s/%d: history lines %s differ from the stored transcript; the stored ones are used",
                req.session_id, prepared.turn_index, [fix["index"] for fix in checked.fixes],
            )  # fmt: skip
        prepared.fixes = checked.fixes
        if checked.history != req.history:
            prepared.request = req.model_copy(update={"history": checked.history})
        return prepared.request

    def _read_state(
        self, world_id: str, req: TurnRequest
    ) -> tuple[TurnState, str | None, EmotionState | None, intentions.TurnIntentions | None]:
        """Everything the turn reads from storage, in one session (one worker-thread hop): the agents, a
        stored reply (retry), the plan item, what the speaker knows of the partner, the speaker's
        newest emotional state decayed to now (fire-and-forget evaluations land between turns), and its
        intentions with the first thing it has not yet told the partner."""
        with repo.read_session(self.engine) as session:
            world = self.world_facts.read(session, world_id)
            state = self._turn_state(session, world_id, req, world)
            if state.stored.reply is not None:
                return state, None, None, None
            speaker, partner = state.speaker, state.partner
            summary = self.memory.person_context(world_id, speaker.id, partner.id, session=session)
            feeling = (
                self.emotion.current(speaker, day=req.day, time_of_day=req.time_of_day, session=session)
                if self.emotion is not None
                else None
            )
            mind = intentions.for_turn(
                session,
                world_id,
                speaker,
                partner,
                day=req.day,
                fresh_days=self.settings.tell_fresh_days,
                pass_on_importance=self.settings.pass_on_importance,
                day_one_weekday=WEEKDAYS_EN.index(self.settings.retrieval_day_one_weekday),
                world=world,
            )
        return state, summary, feeling, mind

    def _turn_state(self, session: Any, world_id: str, req: TurnRequest, world: WorldFacts) -> TurnState:
        """The agents (kept rows, checked against `updated_at`), the stored turn or conversation, and the
        speaker's planned activity at this time of day.

        Raises:
            NotFound: the agent or the target does not exist.
            Conflict: the conversation has ended, or this turn index belongs to another pair.
        """
        found = read_people(session, self.memory.agents, world_id, [req.agent_id, req.target_id])
        speaker = _agent(session, found, world_id, req.agent_id, "agent_id")
        partner = _agent(session, found, world_id, req.target_id, "target_id")
        stored = repo.read_turn(session, world_id, req)
        if stored.reply is not None:
            return TurnState(speaker, partner, stored)
        people = with_members(session, self.memory.agents, world_id, found, stored.members)
        for joiner in req.participants or ():  # one who is neither an agent nor a player: 404
            _agent(session, people, world_id, joiner, "participants")
        item = self.plan_item(session, world_id, req.agent_id, req.day, req.time_of_day)
        activity = str(item["activity"]) if item and item.get("activity") else None
        plan_place = str(item["poi_id"]) if item and item.get("poi_id") else None
        facts = (
            world.with_participants(stored.members)
            if self.settings.actions_in_turns and not self.strikes.off(req.session_id)
            else None
        )
        return TurnState(speaker, partner, stored, activity, plan_place, people, facts)

    async def _memories(
        self, prepared: PreparedTurn, state: TurnState, partner_last: str | None
    ) -> tuple[list[Recalled], list[Recalled]]:
        """The speaker's standing memories for this conversation, and what the last lines bring up besides.

        Standing: chosen at the speaker's first turn (the top-k for the partner and the place among the
        memories formed before the conversation began, its watermark) and shown on every turn of it, so a
        prompt cache keeps them; the conversation's own lines are in the history. Brought up: up to
        LINE_MEMORIES more for the last lines (the partner's words pick the retrieval mode: asking about the
        past, about today, or for knowledge). None if retrieval fails or is slow."""
        req, world_id, speaker = prepared.request, prepared.world_id, state.speaker
        budget = self.settings.turn_deadline_s * RETRIEVAL_SHARE
        lines = " ".join(rules.line_text(line) for line in req.history[-QUERY_LINES:])
        try:
            async with asyncio.timeout(budget):
                standing = await self._standing(prepared, state)
                if not lines or prepared.dry:
                    return standing, []
                ask = TurnAsk(
                    f"{state.partner.name} {lines}", partner_last, req.day, req.time_of_day,
                    self.settings.retrieval_k + LINE_MEMORIES, prepared.watermark,
                )  # fmt: skip
                found = await self.memory.recall_for_turn(world_id, speaker.id, ask)
        except (LLMError, TimeoutError) as exc:
            log.warning("turn for %s goes on without memories: %s", speaker.id, reason(exc))
            return [], []
        shown = {item.id for item in standing}
        return standing, [item for item in found if item.id not in shown][:LINE_MEMORIES]

    async def _heard(
        self, prepared: PreparedTurn, standing: list[Recalled], brought_up: list[Recalled], language: str
    ) -> heard.Split:
        """The recalled memories split into the speaker's own and those of visitors' words (heard.py); the
        latter's tags and the visitors' names are read only when there are any."""
        marked = [item.id for item in [*standing, *brought_up] if item.visitor]
        tags: dict[int, list[str]] = {}
        names: dict[str, str] = {}
        if marked:
            key = (prepared.world_id, prepared.request.agent_id)
            tags = await asyncio.to_thread(self.memory.repo.tags_of, key, marked)
            who = sorted({v for found in tags.values() for v in heard.visitors_in(found)})
            names = await asyncio.to_thread(self._visitor_names, prepared.world_id, who)
        members = prepared.members or prepared.request.members()
        return heard.split(
            standing, brought_up, tags, names,
            members=members, mode=self.settings.visitor_mentions, language=language,
        )  # fmt: skip

    def _visitor_names(self, world_id: str, ids: list[str]) -> dict[str, str]:
        if not ids:
            return {}
        with repo.read_session(self.engine) as session:
            return {row.id: row.display_name for row in players.get_many(session, world_id, ids).values()}

    async def _standing(self, prepared: PreparedTurn, state: TurnState) -> list[Recalled]:
        """The speaker's standing memories: those its first turn chose, or chosen now (and kept with the turn)."""
        req, world_id, speaker = prepared.request, prepared.world_id, state.speaker
        if state.stored.standing is not None:
            return await self.memory.recall_ids(world_id, speaker.id, state.stored.standing)
        about = " ".join(filter(None, [state.partner.name, req.location_name]))
        search = Search(
            self.settings.retrieval_k, day=req.day, time_of_day=req.time_of_day,
            touch=not prepared.dry, before_id=prepared.watermark,
        )  # fmt: skip
        standing = await self.memory.recall(world_id, speaker.id, about, search)
        prepared.standing = [item.id for item in standing]
        return standing

    def options(self, prepared: PreparedTurn) -> GenerateOptions:
        ctx = prepared.ctx
        assert ctx is not None
        return GenerateOptions(
            purpose="dialogue",
            priority=PRIORITY_TURN,
            world_id=prepared.world_id,
            agent_id=ctx.speaker.id,
            session_id=prepared.request.session_id,
            language=ctx.language,
            facts=build_facts(ctx),
        )

    def reply_schema(self, prepared: PreparedTurn) -> type[TurnReply]:
        """The reply asked for: with the speaker's feeling when it rides on the turn (EMOTION_FROM_TURN)."""
        ctx = prepared.ctx
        assert ctx is not None
        targets = _targets(prepared) if ctx.actions is not None else None
        return turn_reply_for(ctx.language if ctx.ask_feeling else None, actions=targets or False)

    def messages(self, prepared: PreparedTurn) -> list[dict[str, str]]:
        """The turn prompt, fitted to the model's prompt budget: the oldest history lines go first (the
        last two stay), then the memories the lines brought up, then the least relevant standing ones; the
        rules and the persona are never cut."""
        ctx = prepared.ctx
        assert ctx is not None
        messages = build_messages(ctx)
        budgeting = find_layer(self.llm, PromptBudgetLLM)
        if budgeting is None:
            return messages
        budget, count = budgeting.budget(self.options(prepared)), self.llm.count_tokens
        while count_messages(messages, count) > budget:
            if len(ctx.history) > KEPT_LINES:
                ctx = replace(ctx, history=ctx.history[max(1, (len(ctx.history) - KEPT_LINES) // 4) :])
            elif ctx.heard:  # visitors' words go before the speaker's own memories
                ctx = replace(ctx, heard=ctx.heard[:-1])
            elif ctx.brought_up:
                ctx = replace(ctx, brought_up=ctx.brought_up[:-1])
            elif ctx.memories:
                ctx = replace(ctx, memories=ctx.memories[:-1], memory_ids=ctx.memory_ids[:-1])
            else:
                break  # what is left is the rules and the moment: the budget wrapper cuts the rest
            messages = build_messages(ctx)
        return messages

    def remaining(self, prepared: PreparedTurn) -> float:
        """Seconds the model may still use, keeping a margin to store the turn."""
        return prepared.deadline - asyncio.get_running_loop().time() - STORE_MARGIN_S

    async def _ask(self, prepared: PreparedTurn) -> TurnReply | None:
        """The one model call of the turn; None (-> fallback) on error, invalid reply or deadline."""
        budget = self.remaining(prepared)
        if budget <= 0:
            log.warning(
                "turn %s/%d falls back: no time left for the model within TURN_DEADLINE_S=%g s",
                prepared.request.session_id, prepared.turn_index, self.settings.turn_deadline_s,
            )  # fmt: skip
            return None
        asked = (self.messages(prepared), self.reply_schema(prepared), self.options(prepared))
        call = self.llm.generate_json(asked[0], asked[1], options=asked[2])
        started = asyncio.get_running_loop().time()
        try:
            reply = await asyncio.wait_for(call, timeout=budget)
            took = asyncio.get_running_loop().time() - started
            return await self._complete_telling(prepared, reply, took, asked)
        except (LLMError, TimeoutError) as exc:
            log.warning(
                "turn %s/%d falls back: %s", prepared.request.session_id, prepared.turn_index, reason(exc)
            )
        except Exception:  # noqa: BLE001 - a provider bug must still give Unity a line, never a 500
            log.exception(
                "turn %s/%d: unexpected model failure", prepared.request.session_id, prepared.turn_index
            )
        return None

    async def _complete_telling(
        self,
        prepared: PreparedTurn,
        reply: TurnReply,
        took: float,
        asked: tuple[list[dict[str, str]], type[TurnReply], GenerateOptions],
    ) -> TurnReply:
        """`reply`, or a later try of the model's when the line left a slot of its news out and the deadline
        has room: the one that carries the most slots (conversation/completing.py). `asked`: the first
        call's prompt, schema and options."""
        ctx = prepared.ctx
        assert ctx is not None
        loop = asyncio.get_running_loop()
        done = await completing.complete(
            self.llm, ctx, reply, asked=asked, took_s=took, remaining_s=lambda: self.remaining(prepared),
            tries=self.settings.telling_tries, clock=loop.time,
        )  # fmt: skip
        if done.asked_again is not None:
            prepared.asked_again, prepared.tries = done.asked_again, done.tries
            log.info("turn %s/%d: telling asked again (%d calls; first line left out %s)",
                     prepared.request.session_id, prepared.turn_index, done.tries,
                     ", ".join(done.asked_again))  # fmt: skip
        return done.reply

    def compose(self, prepared: PreparedTurn, reply: TurnReply | None) -> dict[str, Any]:
        """Apply the server's rules to the model's reply (or its absence): the reply JSON for Unity."""
        ctx, req, settings = prepared.ctx, prepared.request, self.settings
        assert ctx is not None
        dialogue = reply.dialogue.strip()[:MAX_DIALOGUE_CHARS].rstrip() if reply is not None else ""
        dialogue = _without_own_prefix(dialogue, ctx.speaker)
        fallback = not dialogue
        felt = ctx.emotion.get("vrm_emotion") if ctx.emotion else None
        if fallback:
            dialogue = rules.fallback_line(ctx.speaker.id, ctx.language, farewell=ctx.partner_said_farewell)
            emotion = rules.preset_emotion(prepared.last_emotion or felt, default=felt)
        else:
            # The model's expression when it is (or maps onto) a preset; otherwise the one its state shows.
            emotion = rules.preset_emotion(reply.emotion if reply else None, default=felt)
        if ctx.partner_said_farewell:
            dialogue = rules.ensure_farewell(
                dialogue, ctx.speaker.id, ctx.language, settings.farewell_phrases
            )
        actions = self._kept_actions(prepared, reply) if not fallback else []
        ends = any(action.type == "end_conversation" for action in actions)
        leaving = self._leaving(prepared, dialogue, bool(reply and reply.is_conversation_end) or ends)
        end_reason = leaving.end_reason
        left = [*prepared.left, *leaving.left]
        still = [] if end_reason else group.active(prepared.members, left)
        spoken = [*group.speakers(req.history, prepared.names), req.agent_id]
        following = group.next_speaker(
            speaker=req.agent_id, target=req.target_id, line=dialogue, still=still, names=prepared.names,
            spoken=spoken, leaving=bool(leaving.left),
        )  # fmt: skip
        return TurnResult(
            dialogue=dialogue,
            emotion=emotion,
            is_conversation_end=end_reason is not None,
            end_reason=end_reason,
            session_id=req.session_id,
            turn_index=prepared.turn_index,
            fallback=fallback,
            speaker_id=req.agent_id,
            target_id=req.target_id,
            # One reply, one expression: the state's own preset (the resting face) is left out here.
            emotion_state={k: v for k, v in ctx.emotion.items() if k != "vrm_emotion"}
            if ctx.emotion
            else None,
            history_fixes=prepared.fixes,
            participants=still,
            left=leaving.left,
            next_speaker=following,
            actions=actions,
            deflected=prepared.deflected,
        ).model_dump(mode="json")

    def _kept_actions(self, prepared: PreparedTurn, reply: TurnReply | None) -> list[AgentAction]:
        """The reply's actions that name only what the world has (the rest dropped and kept on the turn row;
        a deflection does nothing); an invalid list counts towards ACTIONS_OFF_AFTER_INVALID."""
        raw = getattr(reply, "actions", None)
        if prepared.facts is None or prepared.deflected:
            return []
        kept, prepared.dropped = validate_actions(
            raw or [], known=prepared.facts, speaker_id=prepared.request.agent_id
        )
        self.strikes.record(prepared.request.session_id, invalid=bool(prepared.dropped))
        return kept

    def _leaving(self, prepared: PreparedTurn, dialogue: str, model_flag: bool) -> group.Leaving:
        """The end rules: those of two (rules.decide_end) for a conversation of two, a group's (group.leaving)
        for one that has had three or more."""
        req, settings = prepared.request, self.settings
        turn_count, limit = prepared.turn_index + 1, self.max_lines(prepared.members)
        if len(prepared.members) < 3:  # a conversation of two (a group that shrank keeps the group's rules)
            end_reason = rules.decide_end(
                model_flag=model_flag,
                new_line=dialogue,
                partner_last=rules.line_text(req.history[-1]) if req.history else None,
                turn_count=turn_count,
                max_turns=limit,
                phrases=settings.farewell_phrases,
            )
            return group.Leaving([], end_reason)
        return group.leaving(
            speaker=req.agent_id, target=req.target_id, members=prepared.members, left=prepared.left,
            line=dialogue, model_flag=model_flag, turn_count=turn_count, limit=limit,
            phrases=settings.farewell_phrases,
        )  # fmt: skip

    def max_lines(self, members: list[str]) -> int:
        """The conversation's line limit (group.max_lines: MAX_TURNS, groups, PLAYER_MAX_TURNS)."""
        settings = self.settings
        return group.max_lines(members, settings.max_turns, settings.player_max_turns)

    async def finish(self, prepared: PreparedTurn, reply: TurnReply | None) -> dict[str, Any]:
        """Compose, commit (before replying) and schedule the after-turn work. Returns the stored reply."""
        ctx, req = prepared.ctx, prepared.request
        assert ctx is not None
        reply = await self._guarded(prepared, reply)
        if reply is None or not reply.dialogue.strip():
            # Only a fallback needs the speaker's last expression: skip the query on the usual path.
            prepared.last_emotion = await asyncio.to_thread(
                repo.last_emotion, self.engine, prepared.world_id, req.session_id, req.agent_id
            )
        result = self.compose(prepared, reply)
        line = f"{ctx.speaker.name}: {result['dialogue']}"
        told, telling = self._told(prepared, result)
        listeners = group.listeners(prepared.members, prepared.left, req.agent_id)
        slots = ctx.tell.slots if told is not None and ctx.tell is not None else None
        observe = turn_jobs.observe_job(
            prepared.world_id, req, result, news=told is not None, listeners=listeners, marks=prepared.marks,
            invitation=slots is not None and slots.invites(req.target_id),
            facts=self._told_facts(prepared) if slots is not None else None,
        )  # fmt: skip
        said = repo.Said(
            line,
            ctx.language,
            prepared.watermark,
            prepared.standing,
            prepared.moderation,
            prepared.dropped or None,
            telling,
        )
        committed = await asyncio.to_thread(
            repo.commit_turn, self.engine, prepared.world_id, req, result, said, [observe], told
        )
        if committed.created:
            self._after_commit(prepared, reply, result, committed, line)
        return committed.reply

    async def _guarded(self, prepared: PreparedTurn, reply: TurnReply | None) -> TurnReply | None:
        """The model's reply, or a deflection in its place when the reply guard holds it back (every line is
        checked when it is said: conversation/visitor.py `guard_reply`)."""
        ctx = prepared.ctx
        if self.guard is None or ctx is None or prepared.deflected or reply is None:
            return reply
        if not reply.dialogue.strip():
            return reply
        instead = await self.guard(prepared, reply.dialogue)
        if instead is None:
            return reply
        prepared.deflected = True
        return TurnReply(dialogue=instead, emotion="neutral")

    def _after_commit(
        self,
        prepared: PreparedTurn,
        reply: TurnReply | None,
        result: dict[str, Any],
        committed: repo.Committed,
        line: str,
    ) -> None:
        """A stored turn's jobs started, its events and emotion, the partner's prompt read ahead."""
        ctx, req = prepared.ctx, prepared.request
        assert ctx is not None
        if result["fallback"]:
            self._count_fallback()
        # A last turn also commits the reflections: they start once its line is remembered.
        lines = [job for job in committed.jobs if job.kind == turn_jobs.OBSERVE]
        self.jobs.submit_after(lines, [job for job in committed.jobs if job.kind != turn_jobs.OBSERVE])
        felt = getattr(reply, "feeling", None) if reply is not None and not result["fallback"] else None
        self.after.after_turn(prepared.world_id, ctx, result, req.location_name, feeling=felt)
        if not result["is_conversation_end"]:
            self._look_ahead(prepared, line, result["next_speaker"])
        else:
            turns = prepared.turn_index + 1
            members = prepared.members or [req.agent_id, req.target_id]
            self.after.ended(prepared.world_id, req.session_id, members, result["end_reason"], turns)

    def _look_ahead(self, prepared: PreparedTurn, line: str, following: str | None) -> None:
        """On a model that can read a prompt ahead (llama.cpp in process), read the next speaker's turn
        prompt up to the end of its history while Unity shows this line: that turn then reads only its tail.
        Nothing when a visitor speaks next (their line is not the model's)."""
        if not self.llm.can_prefill or following is None or is_player(following):
            return
        req = prepared.request
        ahead = req.model_copy(
            update={"agent_id": following, "target_id": req.agent_id, "history": [*req.history, line]}
        )
        self.tasks.spawn(self._prefill(prepared.world_id, ahead), name=f"prefill:{req.session_id}")

    def read_ahead_opening(self, world_id: str, agent_id: str, report: StateReport) -> bool:
        """Unity reported `talking` with a partner: on a model that can read a prompt ahead, read this agent's
        opening line's prompt (up to the part that changes turn by turn) while Unity turns the two to face
        each other. Whichever of the two speaks first, its turn then reads only its tail; the other's
        read-ahead is the start of its reply's prompt. Returns whether a read-ahead was started."""
        key = (world_id, agent_id, report.partner_id or "")
        if not self.llm.can_prefill or report.partner_id is None or key in self._opening:
            return False
        self._opening.add(key)
        opening = TurnRequest(
            agent_id=agent_id,
            target_id=report.partner_id,
            session_id=f"opening-{agent_id}-{report.partner_id}"[:120],
            location_name=report.location_name,
            day=report.day,
            time_of_day=report.time_of_day,
        )

        async def run() -> None:
            try:
                await self._prefill(world_id, opening)
            finally:
                self._opening.discard(key)

        self.tasks.spawn(run(), name=f"prefill:opening:{agent_id}")
        return True

    async def _prefill(self, world_id: str, req: TurnRequest) -> None:
        try:
            ahead = await self.prepare(world_id, req, dry=True)
        except MachiError as exc:  # the conversation moved on meanwhile: nothing to read ahead
            log.debug("no prefill for %s: %s", req.session_id, exc)
            return
        if ahead.ctx is None:
            return
        messages = self.messages(ahead)
        upto = read_ahead_part(messages[-1]["content"])
        if upto is not None:
            await self.llm.prefill(messages, options=self.options(ahead), upto=upto)

    @staticmethod
    def _told_facts(prepared: PreparedTurn) -> dict[str, Any] | None:
        """The told item's slots and its host's name, for the listener's memory of the line."""
        ctx = prepared.ctx
        if ctx is None or ctx.tell is None or ctx.tell.slots is None:
            return None
        tell, slots = ctx.tell, ctx.tell.slots
        host_id = slots.host or tell.origin_id
        host = prepared.names.get(host_id) or (tell.origin_name if host_id == tell.origin_id else host_id)
        return {"slots": slots.to_dict(), "host_name": host}

    def _told(
        self, prepared: PreparedTurn, result: dict[str, Any]
    ) -> tuple[intentions.Told | None, dict[str, Any] | None]:
        """The record that this line told the partner the turn's item (a model line that carries its slots,
        or says enough of an item without them: intention/telling.py), and the telling's trace for the turn
        row (None when the turn had nothing to tell)."""
        ctx, req = prepared.ctx, prepared.request
        assert ctx is not None
        if ctx.tell is None or result["fallback"]:
            return None, None
        told, trace = intentions.told_of(
            prepared.world_id, req.agent_id, req.target_id, ctx.tell, result["dialogue"],
            session_id=req.session_id, day=req.day, time_of_day=req.time_of_day,
        )  # fmt: skip
        if prepared.asked_again is not None:
            trace["asked_again"], trace["tries"] = prepared.asked_again, prepared.tries
        return told, trace

    def _count_fallback(self) -> None:
        scheduler = find_scheduler(self.llm)
        if scheduler is not None:
            scheduler.fallbacks += 1

    # --- the end ---
    async def end(self, world_id: str, body: EndRequest) -> EndResult:
        """Unity reports the end. Idempotent: the reflection is scheduled only the first time.

        Raises:
            NotFound: no conversation with that session_id.
        """
        conv, already = await asyncio.to_thread(
            repo.end_conversation,
            self.engine,
            world_id,
            body.session_id,
            body.reason,
            body.day,
            body.time_of_day,
        )
        if not already:
            self.after.ended(
                world_id,
                conv.session_id,
                repo.participants(conv),
                conv.end_reason or body.reason,
                conv.turn_count,
            )
        await self._reflect_once(world_id, body.session_id)
        return EndResult(
            session_id=conv.session_id, ended=True, end_reason=conv.end_reason, already_ended=already
        )

    async def _reflect_once(self, world_id: str, session_id: str) -> None:
        jobs = await asyncio.to_thread(repo.claim_reflection, self.engine, world_id, session_id)
        self.jobs.submit(jobs)


def _agent(session: Any, found: dict[str, Agent], world_id: str, agent_id: str, field: str) -> Agent:
    agent = found.get(agent_id)
    if agent is None:
        raise agent_not_found(session, world_id, agent_id, {"field": field})
    return agent


def _without_own_prefix(line: str, speaker: Agent) -> str:
    """A line the model began with its own name or id and a colon ("葵: こんにちは") loses that prefix."""
    rest = rules.line_text(line)
    prefix = line[: len(line) - len(rest)].strip().rstrip(":：")
    own = {unicodedata.normalize("NFKC", key).casefold().strip() for key in (speaker.id, speaker.name)}
    if rest != line and unicodedata.normalize("NFKC", prefix).casefold().strip() in own:
        return rest.strip()
    return line


def _targets(prepared: PreparedTurn) -> ActionTargets | None:
    """What the turn's actions may name (the ids its prompt offers), None when the reply carries none."""
    if prepared.facts is None:
        return None
    speaker = prepared.request.agent_id
    people = [
        member
        for member in group.active(prepared.members, prepared.left)
        if member != speaker and member in prepared.names
    ]
    return offered_targets(prepared.facts, people, prepared.places)
