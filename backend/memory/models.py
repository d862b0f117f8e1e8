"""The memory stream table and the shapes it takes on the wire."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, StrictBool, StringConstraints, field_validator
from pydantic import Field as PydanticField
from sqlalchemy import JSON, Index, LargeBinary, UniqueConstraint
from sqlmodel import Field, SQLModel

from backend.body import RequestBody
from backend.gametime import HOURS_DOC, GameHourTo24, utcnow
from backend.ids import is_player
from backend.memory.tags import MAX_TAG_CHARS
from backend.world.models import DEFAULT_WORLD, Agent

#: An agent's memories are kept per (world id, agent id).
Key = tuple[str, str]
#: The agent row of (world id, agent id), or None (world/cache.py's AgentCache, bound to the engine).
AgentLookup = Callable[[str, str], Agent | None]
MemoryType = Literal["observation", "reflection", "plan"]
#: Stable small integers for the in-memory index (the table stores the names).
TYPE_CODES: dict[str, int] = {"observation": 0, "reflection": 1, "plan": 2}
MAX_BATCH = 1000
#: Tag of a listener's memory of a line that told it news: rated on its own (not with the conversation's
#: small talk) and passed on when rated important (backend/intention).
NEWS_TAG = "news"
#: Tag of a listener's memory of news that invites it (an event or appointment it was told of): rated by rule
#: at INVITATION_IMPORTANCE when stored, so it is passed on without waiting for, or losing to, a model rating.
INVITATION_TAG = "invitation"
INVITATION_IMPORTANCE = 8
#: Tag of a memory that holds a visitor's words or came from them (a line of a conversation a visitor took
#: part in, a reflection on one, a line said with such memories in mind). Its other tags name the visitors
#: (`player:...`). A prompt shows such a memory only as quoted data, and what a character says with it in mind
#: is checked against repeating it to another visitor (backend/conversation/visitor.py).
VISITOR_TAG = "visitor"
#: Game days accepted on the wire (the world and plan APIs use the same bound).
MAX_DAY = 1_000_000


class Memory(SQLModel, table=True):
    # Every query is per agent: without these SQLite picks the world_id index and scans the whole world.
    # The session index serves the per-conversation lookups (a retried observation job, the dedup pool, a
    # conversation's evidence), which would otherwise scan every memory of the agent's type.
    __table_args__ = (
        Index("ix_memory_world_agent_type", "world_id", "agent_id", "type", "id"),
        Index("ix_memory_world_agent_session", "world_id", "agent_id", "session_id", "type"),
        # What another process's index asks after a change: the agent's rows written since its revision.
        Index("ix_memory_world_agent_rev", "world_id", "agent_id", "rev"),
        # What the embed job and /health ask: the memories the current embedder has not embedded.
        Index("ix_memory_world_embedder", "world_id", "embedder"),
    )

    id: int | None = Field(default=None, primary_key=True)
    world_id: str = Field(default=DEFAULT_WORLD, index=True, max_length=64)
    agent_id: str = Field(index=True, max_length=64)
    type: str = Field(max_length=16)  # observation | reflection | plan
    content: str
    importance: int = 5
    importance_source: str = Field(default="caller", max_length=16)  # caller | provisional | model
    location_name: str | None = Field(default=None, max_length=200)
    tags: list[str] = Field(default_factory=list, sa_type=JSON)
    evidence_ids: list[int] = Field(default_factory=list, sa_type=JSON)
    session_id: str | None = Field(default=None, index=True, max_length=128)
    created_day: int = 1
    created_time_of_day: float = 0.0
    created_at: datetime = Field(default_factory=utcnow)
    last_accessed_day: int = 1
    last_accessed_time_of_day: float = 0.0
    last_accessed_at: datetime = Field(default_factory=utcnow)
    embedding: bytes | None = Field(default=None, sa_type=LargeBinary)
    #: The identity of the embedder that made `embedding` (`Embedder.identity`); None: not embedded yet. A
    #: vector of another embedder is not used and is made again by the `memory.embed` job.
    embedder: str | None = Field(default=None, max_length=200)
    # Where the memory came from: caller (the API / another concept) | conversation (end-of-talk summary)
    # | insight (threshold reflection). "Importance since the last reflection" counts from the last insight.
    origin: str = Field(default="caller", max_length=16)
    #: The agent's `MemoryStamp.rev` of the transaction that last inserted or changed this row (0: before
    #: stamps existed, or imported). Not exported: a revision means nothing in another database.
    rev: int = 0


class MemoryStamp(SQLModel, table=True):
    """Per (world, agent): a revision bumped in the same transaction as every write of its memories, so a
    process holding an index learns with one narrow query whether another process changed them
    (memory/cache.py). The row with agent_id `WORLD_STAMP` counts replacements of the whole world (import)."""

    world_id: str = Field(primary_key=True, max_length=64)
    agent_id: str = Field(primary_key=True, max_length=64)
    rev: int = 0
    #: The latest revision that deleted rows (an index behind it compares its ids with the table's).
    deleted_rev: int = 0


#: `MemoryStamp.agent_id` of a world's own row (no agent id is empty).
WORLD_STAMP = ""


@dataclass
class ScoredMemory:
    """A retrieved memory with its weighted score and the components it is the weighted sum of."""

    memory: Memory
    score: float
    recency: float
    importance: float
    relevance: float
    time: float = 0.0


def visitor_tags(tag_lists: Iterable[Sequence[str] | None]) -> list[str]:
    """What marks a memory made from memories with these tags: `VISITOR_TAG` and the visitors' ids (sorted)
    when any of them came from a visitor's words, else []."""
    marked = [tags for tags in tag_lists if tags and VISITOR_TAG in tags]
    if not marked:
        return []
    return [VISITOR_TAG, *sorted({tag for tags in marked for tag in tags if is_player(tag)})]


class Recalled(NamedTuple):
    """A retrieved memory's id and text, read from the index (what a prompt needs; no row is fetched).
    Ids grow with creation, so sorting by id puts memories in the order they were formed."""

    id: int
    content: str
    #: Whether the memory came from a visitor's words (`VISITOR_TAG`).
    visitor: bool = False


@dataclass(frozen=True)
class Search:
    """How `retrieve` and `recall` rank: each None means the setting's value (weights: per name)."""

    k: int | None = None
    weights: dict[str, float | None] | None = None
    day: int | None = None
    time_of_day: float | None = None
    types: list[str] | None = None
    decay: float | None = None
    relevance: str | None = None
    #: False: a look that is not a use (an interview): the found memories keep their last access time.
    touch: bool = True
    #: Only memories with a smaller id, i.e. formed before a moment (`MemoryService.watermark`).
    before_id: int | None = None


class MemoryCreate(RequestBody):
    """One memory to store. `importance=None` stores a provisional value that the model rates later."""

    model_config = ConfigDict(extra="forbid")

    type: MemoryType
    content: str = PydanticField(min_length=1, max_length=10_000)
    importance: int | None = PydanticField(None, ge=1, le=10)
    location_name: str | None = PydanticField(None, max_length=200)
    tags: list[Annotated[str, StringConstraints(max_length=MAX_TAG_CHARS)]] | None = PydanticField(
        None, max_length=32
    )
    day: int = PydanticField(1, ge=1, le=MAX_DAY)
    time_of_day: GameHourTo24 = PydanticField(0.0, description=HOURS_DOC)
    #: The conversation (or other episode) the memory belongs to: consecutive memories of one are read in
    #: context (each embedded after the one before it). Conversation lines Machi stores carry their session.
    session_id: str | None = PydanticField(None, min_length=1, max_length=128)
    # Row ids: beyond 64 bits the database cannot hold them (a 500 rather than a 422).
    evidence_ids: list[Annotated[int, PydanticField(ge=1, le=2**63 - 1)]] = PydanticField(
        default_factory=list, max_length=200
    )

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("content must not be empty")
        return value


class MemoryBatchCreate(RequestBody):
    model_config = ConfigDict(extra="forbid")

    memories: list[MemoryCreate] = PydanticField(min_length=1, max_length=MAX_BATCH)


class MemoryPublic(BaseModel):
    """A stored memory as the API shows it (no embedding)."""

    id: int
    world_id: str
    agent_id: str
    type: str
    content: str
    importance: int
    importance_source: str
    origin: str
    location_name: str | None
    tags: list[str]
    evidence_ids: list[int]
    session_id: str | None
    created_day: int
    created_time_of_day: float
    created_at: datetime
    last_accessed_day: int
    last_accessed_time_of_day: float
    last_accessed_at: datetime


class MemoryList(BaseModel):
    memories: list[MemoryPublic]
    total: int
    limit: int
    offset: int


class RetrievalWeights(RequestBody):
    model_config = ConfigDict(extra="forbid")

    # Infinity or NaN would make every score the same non-number: the ranking returned nothing (422 instead).
    recency: float | None = PydanticField(None, ge=0, allow_inf_nan=False)
    importance: float | None = PydanticField(None, ge=0, allow_inf_nan=False)
    relevance: float | None = PydanticField(None, ge=0, allow_inf_nan=False)
    #: Fused scoring: how much being formed on the days the query names counts (0: not at all).
    time: float | None = PydanticField(None, ge=0, allow_inf_nan=False)


class RetrieveRequest(RequestBody):
    model_config = ConfigDict(extra="forbid")

    query: str = PydanticField(min_length=1, max_length=4000)
    k: int | None = PydanticField(None, ge=1, le=100)
    weights: RetrievalWeights | None = None
    decay: float | None = PydanticField(None, gt=0, le=1)
    relevance: Literal["embedding", "keyword", "hybrid"] | None = None
    types: list[MemoryType] | None = PydanticField(None, max_length=3)
    day: int | None = PydanticField(None, ge=1, le=MAX_DAY)
    time_of_day: GameHourTo24 | None = PydanticField(None, description=HOURS_DOC)
    #: False: a look, not a use (a dashboard probe, a bench): the found memories keep their access times, so
    #: one question's winners do not crowd out the next one's.
    touch: StrictBool = True


class ScoredMemoryPublic(BaseModel):
    memory: MemoryPublic
    score: float
    recency: float
    importance: float
    relevance: float
    #: 1 when the memory was formed in the game days the query names ("昨日", "last week"), else 0.
    time: float = 0.0


class RetrieveResponse(BaseModel):
    results: list[ScoredMemoryPublic]
    #: "fused" or "seed" (RETRIEVAL_SCORING).
    scoring: str = "fused"
    #: The weight of each component: every result's score is the sum of its components times these.
    weights: dict[str, float] = PydanticField(default_factory=dict)


class ReflectRequest(RequestBody):
    model_config = ConfigDict(extra="forbid")

    day: int | None = PydanticField(None, ge=1, le=MAX_DAY)
    time_of_day: GameHourTo24 | None = PydanticField(None, description=HOURS_DOC)


class ReflectResponse(BaseModel):
    reflections: list[MemoryPublic]


class PersonMemory(SQLModel, table=True):
    """What one agent knows of one other agent or player: a running summary, traits, notes, meetings.

    One row per (world, agent, other). `exchanges_since_compress` counts the conversation lines (both
    sides' turns) folded into the summary since it was last recompressed.
    """

    __table_args__ = (UniqueConstraint("world_id", "agent_id", "other_id", name="uq_person_pair"),)

    id: int | None = Field(default=None, primary_key=True)
    world_id: str = Field(default=DEFAULT_WORLD, index=True, max_length=64)
    agent_id: str = Field(index=True, max_length=64)
    other_id: str = Field(max_length=64)  # an agent id or a player id
    other_name: str = Field(max_length=200)
    language: str = Field(default="ja", max_length=16)  # the agent's language when last updated
    traits_noticed: list[str] = Field(default_factory=list, sa_type=JSON)
    notes: list[str] = Field(default_factory=list, sa_type=JSON)
    summary: str = ""
    interaction_count: int = 0
    exchanges_since_compress: int = 0
    compressions: int = 0
    last_session_id: str | None = Field(default=None, max_length=128)
    last_error: str | None = Field(default=None, max_length=500)  # the last failed model update, if any
    first_met_day: int = 1
    first_met_time_of_day: float = 0.0
    first_met_at: datetime = Field(default_factory=utcnow)
    last_met_day: int = 1
    last_met_time_of_day: float = 0.0
    last_met_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class PersonPublic(BaseModel):
    """One agent's memory of a person, as the API shows it."""

    agent_id: str
    other_id: str
    other_name: str
    traits_noticed: list[str]
    notes: list[str]
    summary: str
    interaction_count: int
    exchanges_since_compress: int
    compressions: int
    first_met_day: int
    first_met_time_of_day: float
    first_met_at: datetime
    last_met_day: int
    last_met_time_of_day: float
    last_met_at: datetime
    updated_at: datetime


class PersonList(BaseModel):
    agent_id: str
    people: list[PersonPublic]
