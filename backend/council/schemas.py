"""Shapes the council works with: the request, the model's reply schemas, and the judge's verdict.

Reply schemas (`MemberOpinion`, `Aggregation`, `Consensus`, `JudgeReply`) are what the model must answer
(sent as JSON Schema); the scripted engine has a writer for each in `backend/scripted/writers/council.py`.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from backend.body import RequestBody
from backend.ids import Id
from backend.text import clean_text

Stance = Literal["for", "conditional", "against"]
RecommendedAction = Literal["accept", "revise", "reject"]
AgentId = Id
#: Model-written text shown to people (dashboard, records): control characters are removed.
ModelText = Annotated[str, AfterValidator(clean_text)]
#: A concern, a condition, an agreement: one sentence.
ShortText = Annotated[
    str, StringConstraints(strip_whitespace=True, max_length=200), AfterValidator(clean_text)
]
#: An opinion, a summary: a paragraph.
MAX_PARAGRAPH_CHARS = 1000

MIN_ROUNDS, MAX_ROUNDS, DEFAULT_ROUNDS = 1, 5, 2


# --- the request -------------------------------------------------------------------------------------
class CouncilCreate(RequestBody):
    """A proposal for the council. `members` defaults to the world's council (agents with a council_role)."""

    model_config = ConfigDict(extra="forbid")

    title: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]
    background: str = Field(default="", max_length=5000)
    expected_effects: str = Field(default="", max_length=5000)
    category: str | None = Field(default=None, max_length=64)
    proposer: str | None = Field(default=None, max_length=100)
    members: list[AgentId] | None = Field(default=None, min_length=2, max_length=12)
    moderator: AgentId | None = None
    rounds: int = Field(default=DEFAULT_ROUNDS, ge=MIN_ROUNDS, le=MAX_ROUNDS)
    language: Literal["ja", "en"] | None = None

    @field_validator("members")
    @classmethod
    def _distinct(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("members must be distinct agent ids")
        return value


class CouncilAccepted(BaseModel):
    """The answer to POST /v1/council: the job runs in the background."""

    id: str
    number: int
    label: str
    status: str


class CouncilSummary(BaseModel):
    id: str
    number: int
    label: str
    title: str
    category: str | None
    status: str
    outcome: str | None
    members: list[str]
    created_at: datetime
    updated_at: datetime


class CouncilPublic(CouncilSummary):
    background: str
    expected_effects: str
    proposer: str | None
    moderator: str | None
    rounds: int
    language: str
    record: dict[str, Any]
    error: str | None


class CouncilList(BaseModel):
    councils: list[CouncilSummary]


# --- what the model answers --------------------------------------------------------------------------
class MemberOpinion(BaseModel):
    """One member's answer in one round."""

    stance: Stance
    opinion: ModelText = Field(
        min_length=1, max_length=MAX_PARAGRAPH_CHARS, json_schema_extra={"echo_check": "spoken"}
    )
    concerns: list[ShortText] = Field(default_factory=list, max_length=8)
    conditions: list[ShortText] = Field(default_factory=list, max_length=8)


class Aggregation(BaseModel):
    """What the members share, where they differ, and every concern raised, after one round."""

    agreements: list[ShortText] = Field(default_factory=list, max_length=10)
    differences: list[ShortText] = Field(default_factory=list, max_length=10)
    concerns: list[ShortText] = Field(default_factory=list, max_length=12)


class Consensus(BaseModel):
    """The moderator's fair summary of the whole council."""

    summary: ModelText = Field(min_length=1, max_length=2 * MAX_PARAGRAPH_CHARS)
    agreements: list[ShortText] = Field(default_factory=list, max_length=10)
    disagreements: list[ShortText] = Field(default_factory=list, max_length=10)
    actions: list[ShortText] = Field(default_factory=list, max_length=10)


class CriterionScore(BaseModel):
    criterion: str = Field(min_length=1, max_length=64)
    score: int = Field(ge=1, le=10)
    reason: str = Field(default="", max_length=300)


class JudgeReply(BaseModel):
    """A judge's verdict on one piece of content; every score is an integer from 1 to 10."""

    scores: list[CriterionScore] = Field(min_length=1, max_length=12)
    overall: float = Field(ge=1, le=10)
    rationale: ModelText = Field(min_length=1, max_length=MAX_PARAGRAPH_CHARS)
    recommended_action: RecommendedAction


def judge_reply_for(criteria: list[str]) -> type[JudgeReply]:
    """A JudgeReply that also refuses a verdict leaving out a requested criterion (so the model is re-asked).

    Its schema asks for exactly one score per criterion, in the order given (`prefixItems`, each naming its
    criterion; `items` names any of them, for providers without tuple schemas). Cached per list of criteria
    (the judge's defaults, in practice).
    """
    return _judge_reply_for(tuple(criteria))


@functools.lru_cache(maxsize=32)
def _judge_reply_for(criteria: tuple[str, ...]) -> type[JudgeReply]:
    wanted = list(dict.fromkeys(criteria))
    count = len(wanted)

    class CriterionScoreFor(CriterionScore):
        __doc__ = CriterionScore.__doc__
        model_config = ConfigDict(title="CriterionScore")

        criterion: str = Field(min_length=1, max_length=64, json_schema_extra={"enum": list(wanted)})

    item = CriterionScoreFor.model_json_schema()
    prefix = [{**item, "properties": {**item["properties"], "criterion": {"const": name}}} for name in wanted]

    class JudgeReplyFor(JudgeReply):
        __doc__ = JudgeReply.__doc__  # the schema's description
        model_config = ConfigDict(title="JudgeReply")

        # An extra criterion still validates (it is ignored); the schema asks for exactly the wanted ones.
        scores: list[CriterionScoreFor] = Field(  # type: ignore[assignment]
            min_length=1,
            max_length=12,
            json_schema_extra={"minItems": count, "maxItems": count, "prefixItems": list(prefix)},
        )

        @model_validator(mode="after")
        def _covers_criteria(self) -> JudgeReplyFor:
            given = {item.criterion for item in self.scores}
            missing = [name for name in wanted if name not in given]
            if missing:
                raise ValueError(f"scores must include every criterion; missing {', '.join(missing)}")
            return self

    return JudgeReplyFor


# --- the judge API -----------------------------------------------------------------------------------
Criterion = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]


class JudgeRequest(RequestBody):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, max_length=20_000)
    criteria: list[Criterion] | None = Field(default=None, min_length=1, max_length=10)
    context: str | None = Field(default=None, max_length=20_000)
    language: Literal["ja", "en"] | None = None

    @field_validator("criteria")
    @classmethod
    def _distinct(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("criteria must be distinct")
        return value


class JudgeResult(BaseModel):
    """Scores per criterion (1-10), an overall score, why, and what to do with the content."""

    scores: dict[str, int]
    overall: float
    rationale: str
    recommended_action: RecommendedAction
    reasons: dict[str, str] = Field(default_factory=dict)
    session_id: str | None = None
