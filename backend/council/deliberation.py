"""One council, start to finish: rounds of opinions, aggregation, consensus, outcome, memories.

The record (`CouncilRecord.record`) grows as the council runs and is saved after every step, so a reader of
`GET /v1/council/{id}` sees each answer as it arrives. Its shape:

    {"stage": "...", "members": [{id, name, council_role}], "moderator": {...},
     "rounds": [{"round": 1, "stage": "opinion", "opinions": [{agent_id, name, stance, opinion, concerns,
                 conditions, error?}], "tally": {...}, "aggregation": {...}, "outcome": "..."}],
     "early_stop": bool, "tally": {...}, "conditions": [...], "consensus": {...}, "outcome": "...",
     "memory_ids": {agent_id: id}, "errors": [...]}
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from backend.council import outcome as rules
from backend.council import prompts, repo
from backend.council.memories import remember_council
from backend.council.models import CouncilRecord
from backend.council.schemas import Aggregation, Consensus, MemberOpinion
from backend.errors import LLMError, LLMReplyError
from backend.gametime import utcnow
from backend.llm.again import reseeded
from backend.llm.base import LLM, PRIORITY_COUNCIL, GenerateOptions
from backend.memory.models import VISITOR_TAG
from backend.text import is_japanese

if TYPE_CHECKING:
    from backend.storage.db import Engine

log = logging.getLogger(__name__)

#: Memories recalled per member for round 1.
DEFAULT_MEMORY_K = 5
#: An opinion in a spaced language has at least this many words: SmolLM2 answered "good" and "Agreed".
MIN_OPINION_WORDS = 3
#: Calls (each with the stack's one re-ask) for a member's opinion whose replies are refused, before the
#: member abstains. SmolLM2 wrote one-word opinions twice in a row in two of six council seats.
OPINION_ATTEMPTS = 2


def check_opinion(reply: MemberOpinion) -> None:
    """Refuse an opinion that is not a sentence someone could say (re-asked once with the reason): in text
    with spaces, fewer than MIN_OPINION_WORDS words ("good"); Japanese has no spaces, and 「やろう」 is a
    whole opinion (one character is refused by the echo check already)."""
    text = reply.opinion.strip()
    if not is_japanese(text):
        words = [w for w in text.split() if any(c.isalnum() for c in w)]
        if len(words) < MIN_OPINION_WORDS:
            raise LLMReplyError(
                f"opinion is {len(words)} word(s), not what you think: say it in a full sentence or two",
                raw=reply.model_dump_json(),
            )


OnUpdate = Callable[[dict[str, Any]], Any]


@dataclass
class CouncilRun:
    """Everything one running council needs. Built by `service.run_council`."""

    engine: Engine
    llm: LLM
    row: CouncilRecord
    members: list[dict[str, Any]]
    moderator: dict[str, Any]
    memory: Any = None
    on_update: OnUpdate | None = None
    record: dict[str, Any] = field(default_factory=dict)
    recalled: dict[str, list[str]] = field(default_factory=dict)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def language(self) -> str:
        return prompts.lang_key(self.row.language)

    @property
    def proposal(self) -> dict[str, Any]:
        row = self.row
        return {
            "title": row.title,
            "background": row.background,
            "expected_effects": row.expected_effects,
            "category": row.category,
            "proposer": row.proposer,
        }

    # --- the whole council -------------------------------------------------------------------------
    async def run(self) -> CouncilRecord:
        """Hold the rounds, then the consensus; mark the council done. LLM failures degrade, never abort."""
        self.record.update(
            stage="starting",
            rounds=[],
            early_stop=False,
            errors=[],
            members=[_public(m) for m in self.members],
            moderator=_public(self.moderator),
        )
        await self.save(status="running")
        previous: list[dict[str, Any]] = []
        for round_no in range(1, self.row.rounds + 1):
            previous = await self.hold_round(round_no, previous)
            entry = self.record["rounds"][-1]
            stances = [o["stance"] for o in previous]
            if not rules.should_continue(stances, entry["outcome"], self.row.rounds - round_no):
                self.record["early_stop"] = round_no < self.row.rounds
                break
        stances = [o["stance"] for o in previous]
        conditions = rules.supporting_conditions(previous)
        final = rules.decide_outcome(stances, conditions, rounds_left=0)
        self.record.update(tally=rules.tally(stances), conditions=conditions, outcome=final)
        await self.consensus(previous, final)
        await self.remember(previous, final)
        self.record["stage"] = "done"
        await self.save(status="done", outcome=final)
        return self.row

    async def hold_round(self, round_no: int, previous: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Every member answers concurrently; then the round is tallied and aggregated."""
        stage = "opinion" if round_no == 1 else "response"
        entry: dict[str, Any] = {"round": round_no, "stage": stage, "opinions": []}
        self.record["rounds"].append(entry)
        self.record["stage"] = f"{stage} round {round_no}"
        await self.save()
        by_id = {o["agent_id"]: o for o in previous}
        answers = await asyncio.gather(*(self.member_answer(m, round_no, by_id, entry) for m in self.members))
        entry["opinions"] = list(answers)  # member order, whatever order they finished in
        stances = [a["stance"] for a in answers]
        entry["tally"] = rules.tally(stances)
        entry["outcome"] = rules.decide_outcome(
            stances, rules.supporting_conditions(answers), self.row.rounds - round_no
        )
        entry["aggregation"] = await self.aggregate(round_no, answers, entry["tally"])
        await self.save()
        return list(answers)

    # --- one member --------------------------------------------------------------------------------
    async def member_answer(
        self,
        member: dict[str, Any],
        round_no: int,
        previous: dict[str, dict[str, Any]],
        entry: dict[str, Any],
    ) -> dict[str, Any]:
        """One member's answer; a failed model call is recorded as an abstention with the error, its opinion an
        in-character sentence saying so (`fallback`: not the model's)."""
        stage = "opinion" if round_no == 1 else "response"
        memories = await self.recall(member)
        own = previous.get(member["id"])
        others = [previous[m["id"]] for m in self.members if m["id"] != member["id"] and m["id"] in previous]
        messages = prompts.opinion_messages(
            member,
            self.proposal,
            memories,
            self.language,
            round_no=round_no,
            own_previous=own,
            others_previous=others,
        )
        facts = {
            "member": member,
            "proposal": self.proposal,
            "memories": memories,
            "round": round_no,
            "previous": _brief(own),
            "others": [_brief(o) for o in others],
            "language": self.language,
        }
        answer: dict[str, Any] = {"agent_id": member["id"], "name": member["name"]}
        options = self.options(stage, round_no, member["id"], facts)
        try:
            reply = await self.opinion(messages, options)
            answer.update(reply.model_dump())
        except LLMError as exc:
            log.warning("council %s: %s abstains in round %d (%s)", self.row.id, member["id"], round_no, exc)
            answer.update(
                stance=rules.ABSTAIN,
                opinion=prompts.abstention(self.language),  # a sentence in the record, never a blank
                fallback=True,
                concerns=[],
                conditions=[],
                error=f"{exc.code}: {exc.message}"[:500],
            )
        entry["opinions"].append(answer)
        await self.save()
        return answer

    async def opinion(self, messages: list[dict[str, str]], options: GenerateOptions) -> MemberOpinion:
        """The member's opinion: a call (re-asked once by the stack when the reply is refused), and when that
        still gives no usable opinion, OPINION_ATTEMPTS calls in all, each with a seed of its own (a small
        model that wrote "good" twice often writes a sentence on a fresh sample). A model that is down or
        late is not called again: the member abstains."""
        for attempt in range(1, OPINION_ATTEMPTS + 1):
            try:
                return await self.llm.generate_json(
                    messages,
                    MemberOpinion,
                    options=options if attempt == 1 else reseeded(options, attempt),
                    check=check_opinion,
                )
            except LLMReplyError:
                if attempt == OPINION_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def recall(self, member: dict[str, Any]) -> list[str]:
        """The member's own memories relevant to the proposal (only its own: isolation starts here)."""
        if member["id"] in self.recalled:
            return self.recalled[member["id"]]
        texts: list[str] = []
        if self.memory is not None:
            query = f"{self.row.title} {self.row.background}".strip()
            try:
                found = await self.memory.retrieve(
                    self.row.world_id,
                    member["id"],
                    query,
                    k=DEFAULT_MEMORY_K,
                    day=member.get("day"),
                    time_of_day=member.get("time_of_day"),
                )
                # A visitor's words never steer a council (a stored instruction would): the members' own only.
                texts = [item.memory.content for item in found if VISITOR_TAG not in (item.memory.tags or ())]
            except Exception as exc:  # noqa: BLE001 - memories are optional context; the council goes on
                log.warning("council %s: could not recall memories of %s: %s", self.row.id, member["id"], exc)
        self.recalled[member["id"]] = texts
        return texts

    # --- the clerk and the moderator ---------------------------------------------------------------
    async def aggregate(
        self, round_no: int, answers: list[dict[str, Any]], counts: dict[str, int]
    ) -> dict[str, Any]:
        """Agreements, differences and concerns (model); on failure, the concerns as stated, with the error."""
        voting = [a for a in answers if a["stance"] != rules.ABSTAIN]
        messages = prompts.aggregate_messages(self.proposal, voting, counts, self.language, round_no)
        facts = {
            "proposal": self.proposal,
            "opinions": [_brief(a) for a in voting],
            "tally": counts,
            "round": round_no,
            "language": self.language,
        }
        try:
            reply = await self.llm.generate_json(
                messages, Aggregation, options=self.options("aggregate", round_no, None, facts)
            )
            return reply.model_dump()
        except LLMError as exc:
            self.record["errors"].append(
                {"stage": "aggregate", "round": round_no, "error": exc.message[:300]}
            )
            concerns = list(dict.fromkeys(c for a in voting for c in a.get("concerns", [])))
            return {"agreements": [], "differences": [], "concerns": concerns, "error": exc.message[:300]}

    async def consensus(self, final: list[dict[str, Any]], outcome: str) -> None:
        """The moderator's fair summary; on failure, one assembled from the last aggregation, marked as such."""
        self.record["stage"] = "consensus"
        await self.save()
        last = self.record["rounds"][-1]
        round_no = last["round"]
        counts = self.record["tally"]
        messages = prompts.consensus_messages(
            self.moderator, self.proposal, final, last.get("aggregation"), counts, outcome, self.language
        )
        facts = {
            "moderator": self.moderator,
            "proposal": self.proposal,
            "opinions": [_brief(o) for o in final],
            "aggregation": last.get("aggregation"),
            "tally": counts,
            "outcome": outcome,
            "conditions": self.record["conditions"],
            "round": round_no,
            "language": self.language,
        }
        try:
            reply = await self.llm.generate_json(
                messages, Consensus, options=self.options("consensus", round_no, self.moderator["id"], facts)
            )
            self.record["consensus"] = reply.model_dump()
        except LLMError as exc:
            aggregation = last.get("aggregation") or {}
            self.record["errors"].append(
                {"stage": "consensus", "round": round_no, "error": exc.message[:300]}
            )
            self.record["consensus"] = {
                "summary": "",
                "agreements": aggregation.get("agreements", []),
                "disagreements": aggregation.get("differences", []),
                "actions": self.record["conditions"],
                "error": exc.message[:300],
            }
        await self.save()

    # --- afterwards --------------------------------------------------------------------------------
    async def remember(self, final: list[dict[str, Any]], outcome: str) -> None:
        """Each member keeps an observation of what was decided and what it said."""
        if self.memory is None:
            return
        ids, errors = await remember_council(
            self.memory, self.row, self.members, final, outcome, self.language
        )
        self.record["memory_ids"] = ids
        self.record["errors"].extend(errors)

    # --- plumbing ----------------------------------------------------------------------------------
    def options(
        self, stage: str, round_no: int, agent_id: str | None, facts: dict[str, Any]
    ) -> GenerateOptions:
        return GenerateOptions(
            purpose=stage,
            labels={"stage": stage, "round": round_no, "council_id": self.row.id},
            agent_id=agent_id,
            world_id=self.row.world_id,
            language=self.language,
            priority=PRIORITY_COUNCIL,
            facts=facts,
        )

    async def save(
        self, *, status: str | None = None, outcome: str | None = None, error: str | None = None
    ) -> None:
        """Store the record as it is now (serialised: concurrent members never overwrite a newer copy)."""
        async with self._lock:
            row = self.row
            row.status = status or row.status
            row.outcome = outcome or row.outcome
            row.error = error or row.error
            row.record = copy.deepcopy(self.record)
            row.updated_at = utcnow()
            values = {
                "status": row.status,
                "outcome": row.outcome,
                "error": row.error,
                "record": row.record,
                "updated_at": row.updated_at,
            }
            await asyncio.to_thread(repo.store_values, self.engine, row.id, values)
        await _publish_progress(self.on_update, row)


async def _publish_progress(on_update: OnUpdate | None, row: CouncilRecord) -> None:
    """The one place council progress leaves the council (the `council.updated` event goes out from here).

    `on_update` gets {id, world_id, number, status, outcome, stage, round, record} after every saved step; it may
    be sync or async. Its failures are logged and never stop the council.
    """
    if on_update is None:
        return
    payload = {
        "id": row.id,
        "world_id": row.world_id,
        "number": row.number,
        "status": row.status,
        "outcome": row.outcome,
        "stage": row.record.get("stage"),
        "round": len(row.record.get("rounds") or []) or None,
        "record": copy.deepcopy(row.record),
    }
    try:
        result = on_update(payload)
        if inspect.isawaitable(result):
            await result
    except Exception:  # noqa: BLE001 - a listener must not break the council
        log.exception("council progress listener failed")


def _public(member: dict[str, Any]) -> dict[str, Any]:
    return {"id": member["id"], "name": member["name"], "council_role": member.get("council_role")}


def _brief(answer: dict[str, Any] | None) -> dict[str, Any] | None:
    if answer is None:
        return None
    keys = ("agent_id", "name", "stance", "opinion", "concerns", "conditions")
    return {k: answer.get(k) for k in keys}
