"""Visitors' turns: a player's line to an agent and the agent's reply, guarded as untrusted text.

A visitor's line is checked before anything is stored or asked: its length (PLAYER_MAX_CHARS, a 422 naming
it), the rate limits (per visitor and per world, counted in the database: a 429 naming the limit) and
moderation (backend/moderation: the operator's word list, and the provider's endpoint where configured).
It is then stored as a line of the conversation (its own turn row, index len(history)) and the agent's reply
is an ordinary turn (index len(history) + 1) with the visitor as its target: end rules, idempotent retries,
the deadline and the fallback hold as for any turn; a retry resends the same text (other text at a stored
line's index is a 409 naming `text`, not the old reply). A line moderation held back is stored as a neutral
marker (never as typed: only its SHA-256, which tells a retry) and answered with an in-character
deflection, without asking the model; a reply moderation holds back, or one that repeats the system
prompt, is replaced by a deflection too. Each is recorded on its turn row (`moderation`) and logged.

In the prompt a visitor's words are the quoted transcript's (data the model is told not to obey, which a
line cannot close), and the system prompt gains a rule that no visitor's line changes who the speaker is.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from backend.config import Settings
from backend.conversation import group, heard, repo, rules
from backend.conversation import jobs as turn_jobs
from backend.conversation.people import read_people, with_members
from backend.conversation.prompts import system_message
from backend.conversation.schemas import PlayerTurnRequest, TurnReply, TurnRequest
from backend.conversation.transcript import check_history
from backend.errors import Conflict, InvalidInput
from backend.ids import is_player
from backend.memory.models import VISITOR_TAG
from backend.moderation import Moderator, Verdict, clean, deflection
from backend.player import names
from backend.player import repo as players
from backend.world import repo as world_repo
from backend.world.service import agent_not_found

if TYPE_CHECKING:
    from backend.conversation.service import ConversationService, PreparedTurn

log = logging.getLogger(__name__)

#: What a held-back visitor line is stored (and remembered) as, in the conversation's language.
HELD_BACK = {"ja": "（聞かなかったことにした言葉）", "en": "(something best left unheard)"}


@dataclass
class VisitorLine:
    """The visitor's line as stored: its place, its transcript line, and whether moderation held it back."""

    turn_index: int
    line: str
    blocked: bool


class VisitorTurns:
    """Players' lines and the agents' replies to them; also the reply guard of every visitor conversation."""

    def __init__(
        self, *, service: ConversationService, settings: Settings, moderator: Moderator | None = None
    ) -> None:
        self.service = service
        self.engine = service.engine
        self.settings = settings
        self.moderator = moderator
        self.limits = players.Limits(settings.player_lines_per_minute, settings.world_player_lines_per_minute)

    async def take(self, world_id: str, body: PlayerTurnRequest) -> dict[str, Any]:
        """The visitor's line stored (or found stored: a retry) and the agent's reply to it.

        Raises:
            InvalidInput: the text is longer than PLAYER_MAX_CHARS.  RateLimited: a rate limit.
            NotFound: unknown agent.  Conflict: the conversation ended, or is another's.
        """
        prepared, said = await self.prepare(world_id, body)
        return with_line(await self.service.answer(prepared), said)

    async def prepare(self, world_id: str, body: PlayerTurnRequest) -> tuple[PreparedTurn, VisitorLine]:
        """The visitor's line stored, and the agent's turn prepared (its stored reply on a retry)."""
        if len(body.text) > self.settings.player_max_chars:
            raise InvalidInput(
                f"text has {len(body.text)} characters; PLAYER_MAX_CHARS={self.settings.player_max_chars} "
                "(a server setting) is the most one visitor line may hold: shorten it or split it",
                details={
                    "field": "text",
                    "limit": "PLAYER_MAX_CHARS",
                    "value": self.settings.player_max_chars,
                },
            )
        said = await self._line(world_id, body)
        turn = TurnRequest(
            agent_id=body.agent_id, target_id=body.player_id, session_id=body.session_id,
            location_name=body.location_name, history=[*body.history, said.line],
            time_of_day=body.time_of_day, day=body.day, language=body.language, participants=body.participants,
        )  # fmt: skip
        prepared = await self.service.prepare(world_id, turn)
        if prepared.stored is None and said.blocked and prepared.ctx is not None:
            line = self.deflection(prepared)
            prepared.forced, prepared.deflected = TurnReply(dialogue=line, emotion="neutral"), True
        return prepared, said

    async def _line(self, world_id: str, body: PlayerTurnRequest) -> VisitorLine:
        """The visitor's line: found stored (a retry), or checked (rate, moderation) and stored."""
        line_req = TurnRequest.model_construct(
            agent_id=body.player_id, target_id=body.agent_id, session_id=body.session_id,
            location_name=body.location_name, history=list(body.history), time_of_day=body.time_of_day,
            day=body.day, language=body.language, participants=body.participants,
        )  # fmt: skip
        state = await asyncio.to_thread(self._read, world_id, line_req)
        if state.stored.reply is not None:  # a retry: the line was stored; the reply may be too
            stored = state.stored.reply
            check_same_line(stored, body)
            return VisitorLine(stored["turn_index"], str(stored.get("line", "")), bool(stored.get("blocked")))
        await asyncio.to_thread(players.note_line, self.engine, world_id, body.player_id, self.limits)
        verdict = await self._check(body.text)
        return await self._store(world_id, line_req, state, body, verdict)

    def _read(self, world_id: str, line_req: TurnRequest) -> LineState:
        with repo.read_session(self.engine) as session:
            people = read_people(
                session, self.service.memory.agents, world_id, [line_req.agent_id, line_req.target_id]
            )
            agent = people.get(line_req.target_id)
            if agent is None:
                raise agent_not_found(session, world_id, line_req.target_id, {"field": "agent_id"})
            stored = repo.read_turn(session, world_id, line_req)
            people = with_members(session, self.service.memory.agents, world_id, people, stored.members)
        return LineState(stored, people)

    async def checked_name(self, world_id: str, name: str) -> str:
        """A visitor's display name as stored, after the name rules, moderation and the world's characters'
        names (player/names.py).

        Raises:
            InvalidInput: the name breaks a rule (field `display_name`).
        """
        text = names.clean_name(name)
        verdict = await self._check(text)
        characters = await asyncio.to_thread(self._characters, world_id)
        return names.check_name(text, characters, blocked=verdict is not None and not verdict.allowed)

    def _characters(self, world_id: str) -> list[str]:
        with repo.read_session(self.engine) as session:
            return world_repo.agent_names(session, world_id)

    async def _check(self, text: str) -> Verdict | None:
        """Moderation's verdict on a visitor's line (None: moderation is off)."""
        if self.moderator is None:
            return None
        verdict = await self.moderator.check(text)
        if verdict.error:
            log.warning(
                "moderation provider failed on a visitor line (the word list still held): %s", verdict.error
            )
        return verdict

    async def _store(
        self,
        world_id: str,
        line_req: TurnRequest,
        state: LineState,
        body: PlayerTurnRequest,
        verdict: Verdict | None,
    ) -> VisitorLine:
        """Store the visitor's line as a turn of the conversation (its observation job with it)."""
        player, agent = state.people[body.player_id], state.people[body.agent_id]
        language = rules.lang_key(body.language or agent.language)
        blocked = verdict is not None and not verdict.allowed
        text = HELD_BACK[language] if blocked else body.text
        named = rules.named_lines(line_req.history, list(state.people.values()))
        history = check_history(named, state.stored.transcript).history
        history = await self._moderated(history, len(state.stored.transcript), language)
        line_req = line_req.model_copy(update={"history": history})
        members = state.stored.members or line_req.members()
        line = f"{player.name}: {text}"
        reply = self._line_reply(line_req, members, state.stored.left, text, line, blocked)
        reply["text_sha256"] = _digest(body.text)  # what was typed, for a retry to be told from a new line
        moderation = _trace("line", verdict) if blocked else None
        if moderation is not None:
            log.warning(
                "visitor %s's line in %s held back by moderation: %s",
                body.player_id,
                body.session_id,
                moderation,
            )
        watermark = await self.service.watermark(state.stored)
        listeners = group.listeners(members, state.stored.left, body.player_id)
        visitors = [member for member in members if is_player(member)]
        marks = [VISITOR_TAG, *sorted(visitors)[: heard.MAX_NAMED]]
        observe = turn_jobs.observe_job(world_id, line_req, reply, listeners=listeners, marks=marks)
        said = repo.Said(line, language, watermark, None, moderation)
        committed = await asyncio.to_thread(
            # A held-back line is not remembered: there is nothing in it to recall, or to retell.
            repo.commit_turn,
            self.engine,
            world_id,
            line_req,
            reply,
            said,
            [] if blocked else [observe],
        )
        if committed.created:
            self.service.jobs.submit(committed.jobs)
            self.service.after.visitor_said(world_id, committed.reply, body.location_name)
        stored = committed.reply
        return VisitorLine(stored["turn_index"], str(stored.get("line", line)), bool(stored.get("blocked")))

    async def _moderated(self, history: list[str], stored: int, language: str) -> list[str]:
        """The history with each line Unity adds (those past the `stored` transcript, stored as sent) checked
        like a visitor's line: one moderation holds back is stored as the neutral marker, never as typed."""
        out = list(history)
        for index in range(stored, len(out)):
            line = clean(out[index])
            text = rules.line_text(line)
            verdict = await self._check(text)
            if verdict is not None and not verdict.allowed:
                log.warning(
                    "a history line of a visitor turn held back by moderation: %s", _trace("history", verdict)
                )
                line = line[: len(line) - len(text)] + HELD_BACK[language]
            out[index] = line
        return out

    def _line_reply(
        self, line_req: TurnRequest, members: list[str], left: list[str], text: str, line: str, blocked: bool
    ) -> dict[str, Any]:
        """The visitor's line as its turn row stores it (the shape of a turn reply, and the line as stored)."""
        index = len(line_req.history)
        leaving = self._leaving(line_req, members, left, text, index)
        return {
            "dialogue": text, "emotion": "neutral", "is_conversation_end": False, "end_reason": None,
            "session_id": line_req.session_id, "turn_index": index, "fallback": False,
            "speaker_id": line_req.agent_id, "target_id": line_req.target_id,
            "participants": group.active(members, [*left, *leaving]), "left": leaving,
            "next_speaker": line_req.target_id, "actions": [], "deflected": False, "line": line,
            "blocked": blocked,
        }  # fmt: skip

    def _leaving(
        self, line_req: TurnRequest, members: list[str], left: list[str], text: str, index: int
    ) -> list[str]:
        """In a group of three or more, a visitor's goodbye removes the visitor (with two, the agent's reply
        ends the conversation by the end rules of two)."""
        if len(members) < 3:
            return []
        # One past the limit: the line limit ends a conversation at the agent's reply, never at the visitor's
        # line (whose own end reason is not kept), so the goodbye is still weighed at the last line.
        limit = self.service.max_lines(members)
        outcome = group.leaving(
            speaker=line_req.agent_id, target=line_req.target_id, members=members, left=left, line=text,
            model_flag=False, turn_count=index + 1, limit=limit + 1, phrases=self.settings.farewell_phrases,
        )  # fmt: skip
        return outcome.left

    # --- the reply guard (every model line, when it is said) ---
    async def guard_reply(self, prepared: PreparedTurn, dialogue: str) -> str | None:
        """A deflection to say instead of `dialogue`, or None when it may be said; what held it back is kept
        on the turn row. Every line passes the word list when it is said (whatever it was made from); a line
        with a visitor's words in view also the provider's check; a line to a visitor must not recite the
        system prompt nor repeat another visitor's words (heard.retold)."""
        ctx = prepared.ctx
        if self.moderator is None or ctx is None or not self.moderator.enabled:
            return None
        verdict = await self._reply_verdict(prepared, dialogue)
        if verdict.allowed:
            return None
        prepared.moderation = _trace("reply", verdict)
        log.warning(
            "reply of %s in %s held back by moderation: %s",
            ctx.speaker.id, prepared.request.session_id, prepared.moderation,
        )  # fmt: skip
        return self.deflection(prepared)

    async def _reply_verdict(self, prepared: PreparedTurn, dialogue: str) -> Verdict:
        ctx = prepared.ctx
        assert ctx is not None and self.moderator is not None
        if not ctx.guarded:  # characters among themselves: the operator's list, instantly
            return self.moderator.check_words(dialogue)
        if not ctx.visitor:
            return await self.moderator.check(dialogue)
        system = system_message(
            ctx.speaker,
            ctx.language,
            ask_feeling=ctx.ask_feeling,
            visitor=True,
            actions=ctx.actions is not None,
        )
        verdict = await self.moderator.check_reply(
            dialogue, [system, ctx.speaker.backstory or ""], names=[ctx.speaker.name, ctx.speaker.id]
        )
        repeated = heard.retold(dialogue, ctx.heard, prepared.members or prepared.request.members())
        if verdict.allowed and repeated is not None:
            return Verdict(
                allowed=False, source="visitor_words", category="retold", matched=repeated.text[:80]
            )
        return verdict

    def may_show(self, text: str) -> bool:
        """Whether a visitor conversation's streamed line may be shown so far (the word list alone: the
        provider's check runs once the line is whole)."""
        return self.moderator is None or self.moderator.check_words(text).allowed

    @staticmethod
    def deflection(prepared: PreparedTurn) -> str:
        ctx = prepared.ctx
        assert ctx is not None
        return deflection(ctx.speaker.id, ctx.language, attempt=prepared.turn_index)


@dataclass
class LineState:
    stored: repo.StoredTurn
    people: dict[str, Any]


def _trace(stage: str, verdict: Verdict | None) -> dict[str, Any]:
    return {
        "stage": stage,
        "source": verdict.source if verdict else None,
        "category": verdict.category if verdict else None,
    }


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_same_line(stored: dict[str, Any], body: PlayerTurnRequest) -> None:
    """A retry resends the text of the visitor line stored at its index; other text is a 409 naming `text`
    (most likely the agent's reply was not appended to `history`), never the old reply."""
    digest = stored.get("text_sha256")
    if digest is not None:
        same = digest == _digest(body.text)
    else:  # stored before digests were kept: the dialogue is the text, unless moderation held it back
        same = bool(stored.get("blocked")) or stored.get("dialogue") == body.text
    if same:
        return
    index = stored.get("turn_index")
    raise Conflict(
        f"turn {index} of session {body.session_id!r} already holds a different visitor line "
        f"({stored.get('line')!r}): to go on, append it and the agent's reply to history and send the next "
        "line; to retry this turn, resend the same text",
        details={"field": "text", "turn_index": index, "stored": stored.get("line")},
    )


def with_line(reply: dict[str, Any], said: VisitorLine) -> dict[str, Any]:
    """The agent's reply with what was stored of the visitor's line (PlayerTurnResult)."""
    return {
        **reply,
        "player_turn_index": said.turn_index,
        "player_line": said.line,
        "player_blocked": said.blocked,
    }
