"""IntentionService: what each agent means to do (its "currently"), whispers, and what it told to whom.

Intentions are a few short lines per agent, newest first. A whisper or an important plan memory (importance
>= INTENTION_FROM_IMPORTANCE, given through the memory API) adds a line at once; the day's first plan revises
them with one model call (purpose `intention`) from yesterday's lines, important memories and heard news.
A turn reads them (the prompt carries them) together with the first thing the speaker has not yet told
this partner; a line that says it is recorded as told (`Told`) in the turn's own transaction.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from backend.config import Settings, settings_subset
from backend.errors import LLMError
from backend.gametime import utcnow
from backend.intention import appointment as appt
from backend.intention import prompts, repo, telling
from backend.intention.models import Intention, Told
from backend.intention.schemas import (
    MAX_LINE_CHARS,
    MAX_LINES,
    IntentionLine,
    IntentionsPublic,
    IntentionsReply,
)
from backend.llm.base import LLM, PRIORITY_PLAN, GenerateOptions
from backend.llm.sizing import switched_off_under
from backend.logs import reason
from backend.memory.models import VISITOR_TAG, MemoryCreate
from backend.memory.service import MemoryService
from backend.memory.tags import memory_tags
from backend.world import repo as world_repo
from backend.world.facts import WorldFacts, read_world_facts
from backend.world.models import Agent, PointOfInterest

if TYPE_CHECKING:
    from backend.storage.db import Engine, Session

log = logging.getLogger(__name__)

#: Memories at least this important go into the morning revision.
REVISION_IMPORTANCE = 7
REVISION_MEMORIES = 8


@dataclass
class TurnIntentions:
    """What a turn's prompt carries of the speaker's mind: its intentions and one thing to tell."""

    lines: list[str]
    tell: telling.Tellable | None


def one_line(text: str) -> str:
    """An intention is one line of at most MAX_LINE_CHARS characters (cut at a sentence end when it can)."""
    text = " ".join(text.split())
    if len(text) <= MAX_LINE_CHARS:
        return text
    cut = text[:MAX_LINE_CHARS]
    end = max(cut.rfind(mark) for mark in "。.!?！？")
    return cut[: end + 1] if end >= MAX_LINE_CHARS // 2 else cut.rstrip()


def public(
    agent_id: str, row: Intention | None, today: int | None = None, language: str = "ja"
) -> IntentionsPublic:
    lines = list(row.lines) if row else []
    shown = [
        appt.rebase(str(line["text"]), int(line["day"]), today, language) if today else str(line["text"])
        for line in lines
    ]
    return IntentionsPublic(
        agent_id=agent_id,
        text="\n".join(shown),
        lines=[IntentionLine.model_validate(line) for line in lines],
        revised_day=row.revised_day if row else None,
    )


def for_turn(
    session: Session,
    world_id: str,
    speaker: Agent,
    partner: Agent,
    *,
    day: int,
    fresh_days: int,
    pass_on_importance: int = 1,
    day_one_weekday: int = 0,
    world: WorldFacts | None = None,
) -> TurnIntentions:
    """The speaker's intentions said from `day`, and the first item the partner has not heard (with its
    slots when it is an invitation or appointment: telling.with_slots). News the speaker heard is passed on
    only when its memory of it was rated at least `pass_on_importance`. `world`: the world's places and names
    as the turn already read them (world/facts.py); read here when not given."""
    row = repo.read(session, world_id, speaker.id)
    lines = list(row.lines) if row else []
    heard = repo.heard_rows(session, world_id, speaker.id)
    if heard and pass_on_importance > 1:
        rated = repo.news_importance(
            session, world_id, speaker.id, {r.session_id for r in heard if r.session_id}
        )
        heard = [r for r in heard if rated.get(r.session_id or "", 0) >= pass_on_importance]
    if world is None:
        world = read_world_facts(session, world_id)
    wanted = {r.origin_id for r in heard} | {r.teller_id for r in heard}
    names = {person_id: name for person_id, name in world.names.items() if person_id in wanted}
    places = [appt.Place(spot.id, spot.name) for spot in world.spots]
    items = telling.candidates(
        speaker.id, speaker.name, lines, heard, names, places=places, today=day, fresh_days=fresh_days
    )
    tell = None
    if items:
        untold = telling.untold(items, partner.id, repo.known_keys(session, world_id, partner.id))
        tell = untold[0] if untold else None
    if tell is not None:
        tell = telling.with_slots(tell, places, world.names, day_one_weekday=day_one_weekday)
    shown = [appt.rebase(str(line["text"]), int(line["day"]), day, speaker.language) for line in lines]
    return TurnIntentions(shown, tell)


def told_row(
    world_id: str,
    teller_id: str,
    listener_id: str,
    item: telling.Tellable,
    *,
    session_id: str,
    day: int,
    time_of_day: float,
) -> Told:
    return Told(
        world_id=world_id,
        teller_id=teller_id,
        listener_id=listener_id,
        item_key=item.key,
        origin_id=item.origin_id,
        text=item.text,
        written_day=item.written_day,
        session_id=session_id,
        day=day,
        time_of_day=time_of_day,
    )


def told_of(
    world_id: str,
    teller_id: str,
    listener_id: str,
    item: telling.Tellable,
    line: str,
    *,
    session_id: str,
    day: int,
    time_of_day: float,
) -> tuple[Told | None, dict[str, Any]]:
    """Whether `line` told `item` (telling.check: all its slots carried): the `Told` row to record (None for a
    partial telling, which is then offered again), and the trace kept on the turn row (`telling`: the item's
    key, whether it was told, the slots the line left out)."""
    said = telling.check(line, item, day=day, hour=time_of_day)
    trace = {"key": item.key, "told": said.told, "missing": list(said.missing)}
    if not said.told:
        if said.missing:
            log.info("%s told %s only part of %s: %s missing", teller_id, listener_id, item.key,
                     ", ".join(said.missing))  # fmt: skip
        return None, trace
    row = told_row(
        world_id, teller_id, listener_id, item, session_id=session_id, day=day, time_of_day=time_of_day
    )
    return row, trace


def appointments(row: Intention | None, pois: Sequence[PointOfInterest], day: int) -> list[appt.Appointment]:
    """The appointments on `day` the agent's intentions hold (a time and a known place), earliest first."""
    places = [appt.Place(p.id, p.name) for p in pois]
    found: dict[tuple[int, float, str], appt.Appointment] = {}
    for line in row.lines if row else []:
        made = _appointment_of(line, places)
        if made is not None and made.day == day:
            found.setdefault(made.key(), made)
    return sorted(found.values(), key=lambda a: a.start)


def _appointment_of(line: dict[str, Any], places: Sequence[appt.Place]) -> appt.Appointment | None:
    return appt.find_appointment(
        str(line.get("text") or ""), places, written_day=int(line.get("day") or 1),
        written_hour=float(line.get("time_of_day") or 0.0),
    )  # fmt: skip


def ahead(
    previous: Sequence[dict[str, Any]], revised: Sequence[str], places: Sequence[appt.Place], day: int
) -> list[dict[str, Any]]:
    """The lines of `previous` holding an appointment on `day` or later that no `revised` line holds (by its
    day, hour and place): a revision may reword an appointment, never lose it."""
    kept_keys = {
        found.key()
        for text in revised
        if (found := appt.find_appointment(text, places, written_day=day, written_hour=0.0)) is not None
    }
    out = []
    for line in previous:
        found = _appointment_of(line, places)
        if found is not None and found.day >= day and found.key() not in kept_keys:
            kept_keys.add(found.key())
            out.append(dict(line))
    return out


def without_past(
    previous: Sequence[dict[str, Any]], places: Sequence[appt.Place], day: int
) -> list[dict[str, Any]]:
    """`previous` less the lines whose appointment is over (before `day`): a revision without the model."""
    return [
        dict(line)
        for line in previous
        if (found := _appointment_of(line, places)) is None or found.day >= day
    ]


def _heard_line(row: Told, names: dict[str, str], day: int, language: str) -> str:
    """News as the revision prompt shows it: when, from whom, what (said from `day`), and whose news it is."""
    teller, origin = names.get(row.teller_id, row.teller_id), names.get(row.origin_id, row.origin_id)
    whose = f" ({origin})" if row.origin_id != row.teller_id else ""
    said = appt.rebase(row.text, row.written_day, day, language)
    return prompts.dated(f"{teller}: {said}{whose}", row.day, row.time_of_day)


def revision_for_model(settings: Settings, parameters: int | None, model: str = "the model") -> Settings:
    """`settings`, with INTENTION_REVISION off when `parameters` is under INTENTION_REVISION_MIN_MODEL_B
    billion (llm/sizing.py); one start-up line says so."""
    return switched_off_under(
        settings, flag="intention_revision", floor_setting="intention_revision_min_model_b",
        what="morning revisions of intentions", parameters=parameters, model=model, log=log,
    )  # fmt: skip


@dataclass(frozen=True)
class IntentionSettings:
    """The settings intentions read (derived from `Settings` in create_app; same names)."""

    whisper_importance: int
    intention_from_importance: int
    tell_fresh_days: int
    intention_revision: bool = True

    @classmethod
    def of(cls, settings: Settings) -> IntentionSettings:
        return settings_subset(cls, settings)


class IntentionService:
    """Built once in create_app's lifespan and kept at `app.state.intentions`."""

    def __init__(
        self, *, engine: Engine, llm: LLM, memory: MemoryService, settings: IntentionSettings
    ) -> None:
        self.engine = engine
        self.llm = llm
        self.memory = memory
        self.settings = settings

    # --- reading ---
    def get(self, world_id: str, agent: Agent, today: int | None = None) -> IntentionsPublic:
        with repo.session(self.engine) as session:
            return public(agent.id, repo.read(session, world_id, agent.id), today, agent.language)

    def appointments(self, agent: Agent, pois: Sequence[PointOfInterest], day: int) -> list[appt.Appointment]:
        """The appointments the agent's intentions hold for `day`, each said from that day."""
        with repo.session(self.engine) as session:
            row = repo.read(session, agent.world_id, agent.id)
        return [
            replace(found, what=appt.rebase(found.what, found.written_day, day, agent.language))
            for found in appointments(row, pois, day)
        ]

    # --- changing at once ---
    def add_line(
        self, world_id: str, agent_id: str, text: str, *, day: int, time_of_day: float, source: str
    ) -> Intention:
        """Put a line first (a line already held moves up), keeping at most MAX_LINES."""
        text = one_line(text)
        with repo.session(self.engine) as session:
            row = repo.read(session, world_id, agent_id) or Intention(world_id=world_id, agent_id=agent_id)
            kept = [line for line in row.lines if line.get("text") != text]
            new = {"text": text, "day": day, "time_of_day": time_of_day, "source": source}
            row.lines = [new, *kept][:MAX_LINES]
            row.updated_at = utcnow()
            repo.save(session, row)
            return row

    async def whisper(
        self, world_id: str, agent: Agent, text: str, *, day: int, time_of_day: float
    ) -> tuple[int | None, Intention]:
        """The agent's own high-importance thought: a memory, and its intentions' first line."""
        thought = MemoryCreate(
            type="reflection",
            content=text,
            importance=self.settings.whisper_importance,
            tags=[*memory_tags(text), "whisper"],
            day=day,
            time_of_day=time_of_day,
        )
        memory_id: int | None = None
        try:
            memory_id = (await self.memory.add(world_id, agent.id, thought)).id
        except LLMError as exc:  # a remote embedder can fail; the intention still stands
            log.warning("whisper memory for %s not stored: %s", agent.id, reason(exc))
        row = await asyncio.to_thread(
            self.add_line, world_id, agent.id, text, day=day, time_of_day=time_of_day, source="whisper"
        )
        return memory_id, row

    async def note_memory(self, world_id: str, agent_id: str, item: MemoryCreate) -> None:
        """A plan memory given through the memory API that matters enough changes the intentions at once."""
        if item.type == "plan" and (item.importance or 0) >= self.settings.intention_from_importance:
            await asyncio.to_thread(
                self.add_line,
                world_id,
                agent_id,
                item.content,
                day=item.day,
                time_of_day=item.time_of_day,
                source="memory",
            )

    # --- the morning revision ---
    async def revise(self, world_id: str, agent: Agent, *, day: int, time_of_day: float) -> Intention | None:
        """Once per game day (the day's first plan): the model rewrites the intentions from yesterday's
        lines, important memories and heard news, keeping every appointment still ahead (`ahead`). A failed
        call, or INTENTION_REVISION off (or sized off for a small model), keeps the lines, less appointments
        that are over."""
        facts = await asyncio.to_thread(self._revision_facts, world_id, agent, day)
        if facts is None:
            return None
        if not self.settings.intention_revision:  # off, or the model is too small (llm/sizing.py)
            return await asyncio.to_thread(self._mark_revised, world_id, agent.id, day, None, time_of_day)
        options = GenerateOptions(
            purpose="intention",
            priority=PRIORITY_PLAN,
            world_id=world_id,
            agent_id=agent.id,
            language=agent.language,
            facts=facts,
        )
        try:
            reply = await self.llm.generate_json(
                prompts.build_messages(facts), IntentionsReply, options=options
            )
        except LLMError as exc:
            log.warning("intentions of %s not revised for day %d: %s", agent.id, day, reason(exc))
            return await asyncio.to_thread(self._mark_revised, world_id, agent.id, day, None, time_of_day)
        return await asyncio.to_thread(
            self._mark_revised, world_id, agent.id, day, reply.intentions, time_of_day
        )

    def _revision_facts(self, world_id: str, agent: Agent, day: int) -> dict[str, Any] | None:
        """What the morning revision reads (None when today's is done): yesterday's lines said from today,
        important memories and the news heard within TELL_FRESH_DAYS, each with its day and hour."""
        with repo.session(self.engine) as session:
            row = repo.read(session, world_id, agent.id)
            if row is not None and row.revised_day is not None and row.revised_day >= day:
                return None
            heard = repo.heard_rows(session, world_id, agent.id)
            names = world_repo.names(
                session, world_id, sorted({r.origin_id for r in heard} | {r.teller_id for r in heard})
            )
        fresh_days = self.settings.tell_fresh_days
        recent = self.memory.recent(
            world_id, agent.id, limit=REVISION_MEMORIES, min_importance=REVISION_IMPORTANCE
        )
        # A visitor's words never become the agent's own intentions or news (they would be told to others).
        important = [
            m for m in recent if day - m.created_day <= fresh_days and VISITOR_TAG not in (m.tags or ())
        ]
        fresh = [r for r in heard if day - r.day <= fresh_days and r.origin_id != agent.id]
        previous = list(row.lines) if row else []
        return {
            "agent_id": agent.id,
            "name": agent.name,
            "language": agent.language,
            "persona": agent.backstory,
            "day": day,
            "max_lines": MAX_LINES,
            "previous": [appt.rebase(str(x["text"]), int(x["day"]), day, agent.language) for x in previous],
            "previous_lines": previous,
            "important": [prompts.dated(m.content, m.created_day, m.created_time_of_day) for m in important],
            "important_memories": [
                {"content": m.content, "day": m.created_day, "time_of_day": m.created_time_of_day}
                for m in important
            ],
            "heard": [_heard_line(r, names, day, agent.language) for r in fresh],
            "heard_items": [
                {
                    "text": r.text,
                    "written_day": r.written_day,
                    "origin_id": r.origin_id,
                    "origin_name": names.get(r.origin_id, r.origin_id),
                    "key": r.item_key,
                }
                for r in fresh
            ],  # fmt: skip
        }

    def _mark_revised(
        self, world_id: str, agent_id: str, day: int, lines: list[str] | None, time_of_day: float
    ) -> Intention:
        with repo.session(self.engine) as session:
            row = repo.read(session, world_id, agent_id) or Intention(world_id=world_id, agent_id=agent_id)
            places = [appt.Place(p.id, p.name) for p in world_repo.pois(session, world_id)]
            previous = list(row.lines)
            if lines is not None:
                texts = list(dict.fromkeys(one_line(text) for text in lines if text.strip()))
                kept = ahead(previous, texts, places, day)  # appointments the model's lines dropped
                row.lines = [
                    *kept,
                    *({"text": text, "day": day, "time_of_day": time_of_day, "source": "morning"}
                      for text in texts[: max(0, MAX_LINES - len(kept))]),
                ]  # fmt: skip
            else:
                row.lines = without_past(previous, places, day)
            row.revised_day = day
            row.updated_at = utcnow()
            repo.save(session, row)
            return row
