"""The tables a world document holds, one section each, and what the checks read of their schema.

Transfer has no table of its own: these are the other concepts' models, in the order a document lists them.
"""

from __future__ import annotations

from sqlalchemy import PrimaryKeyConstraint, UniqueConstraint
from sqlmodel import SQLModel

from backend.conversation.models import Conversation, Turn
from backend.council.models import CouncilRecord
from backend.emotion.models import EmotionRecord
from backend.intention.models import Intention, Told
from backend.memory.models import Memory, PersonMemory
from backend.planning.models import Plan
from backend.player.models import Player
from backend.world.models import Agent, AgentStateEvent, PointOfInterest

#: A row of any section's table.
TableRow = SQLModel

#: Section name -> table. Order matters on export (agents before what refers to them).
SECTIONS: dict[str, type[SQLModel]] = {
    "agents": Agent,
    "pois": PointOfInterest,
    "players": Player,
    "memories": Memory,
    "plans": Plan,
    "conversations": Conversation,
    "turns": Turn,
    "emotions": EmotionRecord,
    "people": PersonMemory,
    "council_records": CouncilRecord,
    "agent_state_events": AgentStateEvent,
    "intentions": Intention,
    "told": Told,
}
#: Tables whose ids are names the document gives (not integers a database counts).
NAMED_IDS: tuple[type[SQLModel], ...] = (Agent, PointOfInterest, Player, CouncilRecord)


def unique_keys(table: type[SQLModel]) -> list[list[str]]:
    """The columns of each key the table holds once per world."""
    return [
        [c.name for c in constraint.columns if c.name != "world_id"]
        for constraint in table.__table__.constraints  # type: ignore[attr-defined]
        if isinstance(constraint, PrimaryKeyConstraint | UniqueConstraint)
    ]
