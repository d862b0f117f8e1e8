"""Person memory: what each agent knows of each other agent or player it has talked with.

After a conversation, the end-of-conversation call (afterthought.py) learns traits, notes and the summary
rewritten within `person_summary_chars` together with the reflection, and `PersonBook.fold` applies them:
no call of its own, no recompression call. `PersonBook.update`, for a transcript on its own, asks the model (purpose `person`, background priority) to fold the
transcript into the running summary and to name newly noticed traits and notes; traits and notes are merged
into the record (duplicates dropped, the newest `MAX_ITEMS` kept). An *exchange* is one line of a conversation
with that person, whichever of the two said it; when more than `person_compress_exchanges` (20) lines have been
folded in since the last compression, a second call (stage `compress`) shortens the summary to about
`person_summary_chars` and the count restarts.

The meeting itself (interaction count, first and last met) is recorded even when the model fails; on a failure
the summary, traits and notes stay as they were and the error is kept in `last_error` (the call is traced).
Folding the same session twice is a no-op, so a retried end-of-conversation does not count a meeting twice.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from backend.errors import LLMError
from backend.gametime import format_clock, utcnow
from backend.llm.base import LLM, PRIORITY_BACKGROUND, GenerateOptions
from backend.memory import prompts
from backend.memory.models import AgentLookup, Key, PersonMemory
from backend.memory.repo import MemoryRepo, Transaction
from backend.memory.settings import MemorySettings

log = logging.getLogger(__name__)

#: Traits and notes kept per person (the newest).
MAX_ITEMS = 12
#: Items shown in a turn's prompt.
CONTEXT_ITEMS = 5


def _merge_items(old: list[str], new: list[str]) -> list[str]:
    """Old then new, case/space-insensitive duplicates dropped (a repeated item moves to the end)."""
    out: dict[str, str] = {}
    for item in [*old, *new]:
        text = item.strip()
        if text:
            out.pop(text.casefold(), None)
            out[text.casefold()] = text
    return list(out.values())[-MAX_ITEMS:]


class PersonBook:
    """Reads and updates person memories; one update at a time per (world, agent, other).

    Nothing is cached: every read asks the database, so another process's update is seen at once. The locks
    order this process's updates only (each reads the record, merges and writes it back); two processes
    updating one record at once are kept apart by the jobs' single-flight, not here.
    """

    def __init__(self, repo: MemoryRepo, llm: LLM, agents: AgentLookup, settings: MemorySettings) -> None:
        self.repo = repo
        self.agents = agents
        self.llm = llm
        self.settings = settings
        self._locks: dict[tuple[str, str, str], asyncio.Lock] = {}

    def get(self, key: Key, other_id: str, *, session: Transaction | None = None) -> PersonMemory | None:
        """The agent's record of `other_id`, read in `session` when given (a turn reads all it needs in one)."""
        return self.repo.person(key, other_id, session=session)

    def everyone(self, key: Key) -> list[PersonMemory]:
        """Everyone the agent remembers, most recently met first."""
        return self.repo.people(key)

    def context(self, key: Key, other_id: str, *, session: Transaction | None = None) -> str | None:
        """A few lines on what the agent knows of `other_id` for a prompt, in the agent's language; None if
        never met. `session`: read in the caller's session."""
        return context(self.get(key, other_id, session=session))

    def forget_agent(self, key: Key) -> int:
        """Drop what a deleted agent knew of people (others keep their memories of it)."""
        return self.repo.forget_people(key)

    async def update(
        self,
        key: Key,
        *,
        other_id: str,
        other_name: str,
        transcript: list[str],
        session_id: str | None,
        day: int,
        time_of_day: float,
        language: str,
    ) -> PersonMemory:
        """Fold one conversation into the record (see the module docstring). Never raises LLMError."""
        lock = self._locks.setdefault((*key, other_id), asyncio.Lock())
        async with lock:
            row = await asyncio.to_thread(self.repo.person, key, other_id)
            if row is not None and session_id is not None and row.last_session_id == session_id:
                return row  # this conversation is already folded in
            row = _met(row or _new_row(key, other_id, day, time_of_day), other_name, language, session_id)
            row.last_met_day, row.last_met_time_of_day = day, time_of_day
            lines = [line for line in transcript if line.strip()]
            agent = await asyncio.to_thread(self.agents, *key)
            base = {
                "agent_name": agent.name if agent else key[1],
                "other_name": other_name,
                "language": language,
            }
            await self._fold(key, row, base, lines, day, time_of_day, session_id)
            if row.exchanges_since_compress > self.settings.person_compress_exchanges:
                await self._compress(key, row, base, session_id)
            return await asyncio.to_thread(self.repo.save_person, row)

    async def fold(
        self,
        key: Key,
        *,
        other_id: str,
        other_name: str,
        transcript: list[str],
        session_id: str,
        day: int,
        time_of_day: float,
        language: str,
        learned: tuple[list[str], list[str], str] | None,
        error: str | None = None,
    ) -> PersonMemory:
        """Fold one conversation in from what the end-of-conversation call learned (traits, notes, the
        summary already rewritten within `person_summary_chars`: no recompression call), or, with `learned`
        None, record only the meeting and `error`. A session already folded in is left as it is."""
        async with self._locks.setdefault((*key, other_id), asyncio.Lock()):
            row = await asyncio.to_thread(self.repo.person, key, other_id)
            if row is not None and row.last_session_id == session_id:
                return row
            row = _met(row or _new_row(key, other_id, day, time_of_day), other_name, language, session_id)
            row.last_met_day, row.last_met_time_of_day = day, time_of_day
            lines = [line for line in transcript if line.strip()]
            if learned is None:
                row.last_error = f"afterthought: {error}"[:500] if error else row.last_error
            elif lines:
                traits, notes, summary = learned
                row.traits_noticed = _merge_items(row.traits_noticed, traits)
                row.notes = _merge_items(row.notes, notes)
                row.summary, row.last_error = summary.strip(), None
                row.exchanges_since_compress += len(lines)
                # Every summary is asked for within the limit: past the count it counts as the recompression.
                if row.exchanges_since_compress > self.settings.person_compress_exchanges:
                    row.exchanges_since_compress, row.compressions = 0, row.compressions + 1
            return await asyncio.to_thread(self.repo.save_person, row)

    async def _fold(
        self,
        key: Key,
        row: PersonMemory,
        base: dict[str, Any],
        lines: list[str],
        day: int,
        time_of_day: float,
        session_id: str | None,
    ) -> None:
        if not lines:
            return
        facts = {**base, **_known(row), "transcript": lines, "day": day, "clock": format_clock(time_of_day)}
        try:
            reply = await self.llm.generate_json(
                prompts.person_update_messages(facts),
                prompts.PersonUpdate,
                options=_options(key, base["language"], facts, session_id, stage="update"),
            )
        except LLMError as exc:
            log.warning("person memory of %s/%s about %s kept as it was: %s", *key, row.other_id, exc)
            row.last_error = f"update: {exc}"[:500]
            return
        row.traits_noticed = _merge_items(row.traits_noticed, reply.traits_noticed)
        row.notes = _merge_items(row.notes, reply.notes)
        row.summary = reply.summary.strip()
        row.exchanges_since_compress += len(lines)
        row.last_error = None

    async def _compress(
        self, key: Key, row: PersonMemory, base: dict[str, Any], session_id: str | None
    ) -> None:
        facts = {**base, **_known(row), "max_chars": self.settings.person_summary_chars}
        try:
            reply = await self.llm.generate_json(
                prompts.person_compress_messages(facts),
                prompts.PersonSummary,
                options=_options(key, base["language"], facts, session_id, stage="compress"),
            )
        except LLMError as exc:
            # The longer summary stays; the next conversation tries again (the count is not reset).
            log.warning("person summary of %s/%s about %s not recompressed: %s", *key, row.other_id, exc)
            row.last_error = f"compress: {exc}"[:500]
            return
        row.summary = reply.summary.strip()
        row.exchanges_since_compress = 0
        row.compressions += 1


def _new_row(key: Key, other_id: str, day: int, time_of_day: float) -> PersonMemory:
    return PersonMemory(
        world_id=key[0],
        agent_id=key[1],
        other_id=other_id,
        other_name=other_id,
        first_met_day=day,
        first_met_time_of_day=time_of_day,
    )


def _met(row: PersonMemory, other_name: str, language: str, session_id: str | None) -> PersonMemory:
    """The meeting itself, recorded whatever the model answers."""
    row.other_name, row.language, row.last_session_id = other_name, language, session_id
    row.interaction_count += 1
    row.last_met_at = utcnow()
    return row


def known(row: PersonMemory) -> dict[str, Any]:
    """What the record knows, as a prompt's facts."""
    return _known(row)


def _known(row: PersonMemory) -> dict[str, Any]:
    return {
        "summary": row.summary,
        "traits_noticed": list(row.traits_noticed),
        "notes": list(row.notes),
        "interaction_count": row.interaction_count,
    }


def _options(
    key: Key, language: str, facts: dict[str, Any], session_id: str | None, *, stage: str
) -> GenerateOptions:
    return GenerateOptions(
        purpose="person",
        labels={"stage": stage},
        world_id=key[0],
        agent_id=key[1],
        session_id=session_id,
        language=language,
        priority=PRIORITY_BACKGROUND,
        facts=facts,
    )


def context(row: PersonMemory | None) -> str | None:
    """A few lines on what the record knows, in the agent's language; None for no record (never met)."""
    if row is None:
        return None
    traits = row.traits_noticed[-CONTEXT_ITEMS:]
    notes = row.notes[-CONTEXT_ITEMS:]
    if row.language.lower().startswith("ja"):
        lines = [_heading(row, ja=True)]
        lines += [row.summary] if row.summary else []
        lines += [f"性格: {'、'.join(traits)}"] if traits else []
        lines += [f"覚えていること: {' / '.join(notes)}"] if notes else []
    else:
        lines = [_heading(row, ja=False)]
        lines += [row.summary] if row.summary else []
        lines += [f"Traits: {', '.join(traits)}"] if traits else []
        lines += [f"Notes: {'; '.join(notes)}"] if notes else []
    return "\n".join(lines)


def _heading(row: PersonMemory, *, ja: bool) -> str:
    """Who, how often met and when last; a person known before the world began (a town's relationships)
    has met the agent no time yet."""
    if not row.interaction_count:
        return (
            f"{row.other_name}について(前からの知り合い):"
            if ja
            else f"About {row.other_name} (known from before):"
        )
    clock = format_clock(row.last_met_time_of_day)
    if ja:
        return f"{row.other_name}について(これまで{row.interaction_count}回話した。最後は{row.last_met_day}日目の{clock}):"
    times = "once" if row.interaction_count == 1 else f"{row.interaction_count} times"
    return f"About {row.other_name} (talked {times}, last on day {row.last_met_day} at {clock}):"
