"""An action's outcome, as Unity reports it, becomes the agent's observation, in the agent's language.

"カフェに行った。", "蓮にりんごを渡そうとしたが、できなかった（手がふさがっていた）。", "I tried to follow Ren, but
couldn't (the gate was closed)." The memory goes through the memory service like any observation (index,
events, importance rated in the background); it carries the conversation's `session_id` when Unity gives it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from backend.action.schemas import PERSON_TYPES, ActionResult, ActionResultAccepted, AgentAction
from backend.errors import InvalidInput
from backend.ids import is_player
from backend.memory.models import MemoryCreate
from backend.player.repo import default_name
from backend.world import repo as world_repo
from backend.world import service as world_service
from backend.world.models import Agent

if TYPE_CHECKING:
    from backend.memory.service import MemoryService
    from backend.storage.db import Session

#: A player's display name from its id (`player:` included), or None when it has none.
PlayerNames = Callable[[str], str | None]

#: type -> (what was done, what was attempted): Japanese, the attempt in the volitional form.
_JA = {
    "go_to": ("{place}に行った", "{place}に行こうとした"),
    "follow": ("{person}について行った", "{person}について行こうとした"),
    "give": ("{person}に{item}を渡した", "{person}に{item}を渡そうとした"),
    "look_at": ("{person}の方を見た", "{person}の方を見ようとした"),
    "end_conversation": ("会話を終えた", "会話を終えようとした"),
}
_JA_GESTURES = {
    "wave": ("手を振った", "手を振ろうとした"),
    "bow": ("お辞儀をした", "お辞儀をしようとした"),
    "nod": ("うなずいた", "うなずこうとした"),
    "shake_head": ("首を横に振った", "首を横に振ろうとした"),
    "laugh": ("笑った", "笑おうとした"),
    "think": ("考え込んだ", "考え込もうとした"),
    "point": ("指さした", "指さそうとした"),
}
#: type -> (past, infinitive): English, said by the agent ("I ...").
_EN = {
    "go_to": ("went to {place}", "go to {place}"),
    "follow": ("followed {person}", "follow {person}"),
    "give": ("gave {item} to {person}", "give {item} to {person}"),
    "look_at": ("looked at {person}", "look at {person}"),
    "end_conversation": ("ended the conversation", "end the conversation"),
}
_EN_GESTURES = {
    "wave": ("waved", "wave"),
    "bow": ("bowed", "bow"),
    "nod": ("nodded", "nod"),
    "shake_head": ("shook my head", "shake my head"),
    "laugh": ("laughed", "laugh"),
    "think": ("stopped to think", "stop to think"),
    "point": ("pointed", "point"),
}


def result_text(language: str, result: ActionResult, *, place: str = "", person: str = "") -> str:
    """The outcome as the agent's first-person observation. `place`: the go_to place's name; `person`: the
    display name of whom a follow, look_at or give was about."""
    action = result.action
    english = language.lower().startswith("en")
    if action.type == "gesture":
        name = action.target or ""
        table = _EN_GESTURES if english else _JA_GESTURES
        fallback = (f"made the {name} gesture", f"make the {name} gesture") if english else (
            f"「{name}」のしぐさをした", f"「{name}」のしぐさをしようとした")  # fmt: skip
        done, attempt = table.get(name, fallback)
    else:
        done, attempt = (_EN if english else _JA)[action.type]
        words = {"place": place, "person": person, "item": action.item or ""}
        done, attempt = done.format(**words), attempt.format(**words)
    detail = result.detail
    if english:
        said = {"done": f"I {done}", "failed": f"I tried to {attempt}, but couldn't",
                "interrupted": f"I started to {attempt}, but was interrupted"}[result.outcome]  # fmt: skip
        return said + (f" ({detail})" if detail else "") + "."
    said = {"done": done, "failed": f"{attempt}が、できなかった",
            "interrupted": f"{attempt}が、途中で中断された"}[result.outcome]  # fmt: skip
    return said + (f"（{detail}）" if detail else "") + "。"


async def remember(
    memory: MemoryService,
    session: Session,
    world_id: str,
    agent_id: str,
    result: ActionResult,
    *,
    player_names: PlayerNames | None = None,
) -> ActionResultAccepted:
    """Store the outcome as the agent's observation and say what it remembers.

    Args:
        player_names: a player's display name by id; without it (or when it knows none) a player is called
            by its id without the `player:` prefix.

    Raises:
        NotFound: the world has no such agent (404).
        InvalidInput: the action names a place, agent or gesture the world lacks, or the agent itself (422).
    """
    agent = world_service.get_agent(session, world_id, agent_id)
    place, person = _names(session, agent, result.action, player_names)
    item = MemoryCreate(
        type="observation",
        content=result_text(agent.language, result, place=place, person=person),
        location_name=place
        if result.action.type == "go_to" and result.outcome == "done"
        else agent.location_name,
        day=result.day,
        time_of_day=result.time_of_day,
    )
    row = await memory.add(world_id, agent_id, item, session_id=result.session_id)
    if row.id is None:  # a stored row always has one
        raise RuntimeError("the memory service returned a memory without an id")
    return ActionResultAccepted(memory_id=row.id, content=row.content)


def _names(
    session: Session, agent: Agent, action: AgentAction, player_names: PlayerNames | None
) -> tuple[str, str]:
    """(place name, person name) the action is about ("" where it names none); InvalidInput when unknown."""
    world_id, target = agent.world_id, action.target or ""
    if action.type == "go_to":
        poi = world_repo.poi(session, world_id, target)
        if poi is None:
            raise _unknown(f"no point of interest {target!r} in world {world_id!r}", target)
        return poi.name, ""
    if action.type == "gesture":
        gestures = world_service.gestures(world_repo.gestures(session, world_id))
        if target not in gestures:
            known = ", ".join(gestures) or "none"
            raise _unknown(f"no gesture {target!r} in world {world_id!r} (it has: {known}; "
                           "PUT /v1/world/gestures declares them)", target)  # fmt: skip
        return "", ""
    if action.type not in PERSON_TYPES:
        return "", ""
    if target == agent.id:
        raise _unknown(f"{action.type} names the reporting agent itself", target)
    if is_player(target):
        return "", (player_names(target) if player_names else None) or default_name(target)
    name = world_repo.names(session, world_id, [target]).get(target)
    if name is None:
        raise _unknown(f"no agent {target!r} in world {world_id!r}", target)
    return "", name


def _unknown(message: str, value: str) -> InvalidInput:
    return InvalidInput(f"action.target: {message}", details={"field": "action.target", "value": value})
