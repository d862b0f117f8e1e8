"""What each member remembers of a council: one observation of the decision and of what it said."""

from __future__ import annotations

import logging
from typing import Any

from backend.council.models import CouncilRecord
from backend.council.outcome import OUTCOME_WORDS
from backend.council.prompts import STANCE_WORDS

log = logging.getLogger(__name__)

#: Importance of the memory each member keeps (a council is a notable event, not a life event).
COUNCIL_MEMORY_IMPORTANCE = 6
MAX_QUOTED_CHARS = 160


async def remember_council(
    memory: Any,
    row: CouncilRecord,
    members: list[dict[str, Any]],
    final: list[dict[str, Any]],
    outcome: str,
    language: str,
) -> tuple[dict[str, int | None], list[dict[str, Any]]]:
    """Store one observation per member (tags `council`, `council:<id>`) at the member's last game time.

    Returns:
        The new memory id per member, and an error entry for each memory that could not be stored (a lost
        memory never fails a decided council).
    """
    from backend.memory.service import MemoryCreate

    ids: dict[str, int | None] = {}
    errors: list[dict[str, Any]] = []
    for answer, member in zip(final, members, strict=True):
        item = MemoryCreate(
            type="observation",
            content=memory_text(row, answer, outcome, language),
            importance=COUNCIL_MEMORY_IMPORTANCE,
            tags=["council", f"council:{row.id}"],
            location_name=member.get("location_name"),
            day=member.get("day") or 1,
            time_of_day=member.get("time_of_day") or 0.0,
        )
        try:
            stored = await memory.add(row.world_id, member["id"], item)
            ids[member["id"]] = stored.id
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.warning("council %s: could not store a memory for %s: %s", row.id, member["id"], exc)
            errors.append({"stage": "memory", "agent_id": member["id"], "error": str(exc)[:300]})
    return ids, errors


def memory_text(row: CouncilRecord, answer: dict[str, Any], outcome: str, language: str) -> str:
    """The memory's words, in the first person: what was decided and what this member said."""
    words = STANCE_WORDS[language]
    label = OUTCOME_WORDS[language][outcome]
    said = "" if answer.get("fallback") else (answer.get("opinion") or "").strip()
    if len(said) > MAX_QUOTED_CHARS:
        said = said[: MAX_QUOTED_CHARS - 1] + "…"
    if language == "ja":
        mine = (
            f"私は{words[answer['stance']]}の立場で「{said}」と述べた。"
            if said
            else "私は発言できなかった（棄権）。"
        )
        return f"評議会 No.{row.number:03d}「{row.title}」の結論は「{label}」になった。{mine}"
    mine = f'I was {words[answer["stance"]]} and said: "{said}"' if said else "I could not speak (abstained)."
    return f'Council No.{row.number:03d} on "{row.title}" decided: {label}. {mine}'
