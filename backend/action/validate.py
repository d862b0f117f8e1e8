"""A reply's actions checked against the world: what names an unknown place, person or gesture is dropped.

The model's choices are kept when they name what exists (a place given by its name instead of its id counts
as that place); each dropped one is reported `{action, reason}` for the turn's trace and logged at WARNING.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from backend.action.schemas import ACTION_TYPES, MAX_ACTIONS, MAX_ITEM_CHARS, ActionChoice, AgentAction
from backend.text import one_line
from backend.world.facts import WorldFacts

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)


def validate_actions(
    raw: Sequence[Mapping[str, Any] | ActionChoice], *, known: WorldFacts, speaker_id: str
) -> tuple[list[AgentAction], list[dict[str, Any]]]:
    """Keep the actions that fit the world, in order, at most MAX_ACTIONS.

    Args:
        raw: the model's choices (ActionChoice objects or plain dicts).
        known: what exists (read_world_facts, with the conversation's participants).
        speaker_id: the agent whose line it is (it cannot follow, look at or give to itself).

    Returns:
        (the actions to send Unity, the dropped ones as `{"action": <as given>, "reason": <words>}`).
    """
    kept: list[AgentAction] = []
    dropped: list[dict[str, Any]] = []
    for choice in raw:
        given = choice.model_dump() if isinstance(choice, ActionChoice) else _plain(choice)
        try:
            checked = _check(ActionChoice.model_validate(given), known, speaker_id)
        except ValidationError as exc:
            checked = f"not an action: {exc.errors()[0]['msg']}"
        if isinstance(checked, AgentAction) and checked in kept:
            checked = "the same action twice"
        elif isinstance(checked, AgentAction) and len(kept) >= MAX_ACTIONS:
            checked = f"more than {MAX_ACTIONS} actions with one line"
        if isinstance(checked, AgentAction):
            kept.append(checked)
        else:
            log.warning("action dropped (%s): %r", checked, given)
            dropped.append({"action": given, "reason": checked})
    return kept, dropped


def _check(choice: ActionChoice, known: WorldFacts, speaker_id: str) -> AgentAction | str:
    """The action, or why it is dropped."""
    kind, target = choice.type, _text(choice.target)
    if kind not in ACTION_TYPES:
        return f"unknown type {kind!r}: one of {', '.join(ACTION_TYPES)}"
    if kind == "end_conversation":
        return AgentAction(type="end_conversation")
    if target is None:
        return f"{kind} without a target"
    if kind == "go_to":
        poi_id = known.poi_id(target)
        return AgentAction(type=kind, target=poi_id) if poi_id else f"no place {target!r} in this world"
    if kind == "gesture":
        return AgentAction(type=kind, target=target) if target in known.gestures else f"no gesture {target!r}"
    if target == speaker_id:
        return f"{kind} names the speaker itself"
    if not known.knows_person(target):
        return f"no agent or player {target!r} here"
    if kind != "give":
        return AgentAction(type=kind, target=target)
    item = _text(choice.item)
    if item is None:
        return "give without an item"
    if len(item) > MAX_ITEM_CHARS:
        return f"the item has {len(item)} characters (at most {MAX_ITEM_CHARS})"
    return AgentAction(type="give", target=target, item=item)


def _text(value: str | None) -> str | None:
    return (one_line(value).strip() or None) if value is not None else None


def _plain(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else value
