"""Request and reply of `POST /v1/agents/{agent_id}/interview`, and the reply schema the model is asked for."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from backend.body import RequestBody
from backend.conversation.schemas import cut_line
from backend.gametime import HOURS_DOC, GameHour
from backend.memory.models import MAX_DAY, MemoryType
from backend.text import clean_text

#: A question is one or a few sentences; a longer body is refused (422) before any work is done.
MAX_QUESTION_CHARS = 500
#: An answer is a few spoken sentences: the grammar stops the model's string here, and a provider that does
#: not enforce `maxLength` has its answer cut to it.
MAX_ANSWER_CHARS = 400


class InterviewRequest(RequestBody):
    """A question put to one agent (the Generative Agents paper's interview)."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        min_length=1, max_length=MAX_QUESTION_CHARS, description="What the agent is asked, in any language."
    )
    day: int | None = Field(
        None, ge=1, le=MAX_DAY, description="Game day of the interview (default: the agent's last report)."
    )
    time_of_day: GameHour | None = Field(None, description=HOURS_DOC)

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()


class InterviewMemory(BaseModel):
    """A memory the answer was given from (it was in the prompt)."""

    id: int
    type: MemoryType
    content: str


class InterviewResult(BaseModel):
    agent_id: str
    question: str
    answer: str = Field(description="The agent's answer, in character and in its language.")
    memories_used: list[InterviewMemory] = Field(
        description="The memories put before the model, most relevant first (none were marked accessed)."
    )
    fallback: bool = Field(
        description="True when the model failed or was late and the answer is the stock 'I don't remember'."
    )
    asked_again: list[str] | None = Field(
        None,
        description=(
            "When the question asked about news a memory holds and the model's first answer left some of it "
            "out: what it left out ('who', 'what', 'when', 'where'), after which the model was asked again "
            "(TELLING_TRIES); null when it was not."
        ),
    )
    tries: int = Field(
        1, ge=0, description="Model calls made for the answer (0: memory could not be read; the fallback)."
    )


# As with TurnReply, the schema asks for a bounded answer (`maxLength`) and validation is kinder: a longer
# answer from a provider that does not enforce it is cut at its last sentence end within the limit.
# (The docstring is the schema's description, which providers show the model: it stays about the reply.)
class InterviewReply(BaseModel):
    """What the model is asked to return for one interview question."""

    answer: str = Field(
        description="The character's spoken answer to the question, from what it remembers.",
        json_schema_extra={"maxLength": MAX_ANSWER_CHARS, "echo_check": "spoken"},
    )

    @field_validator("answer")
    @classmethod
    def _clean(cls, value: str) -> str:
        return cut_line(clean_text(value), MAX_ANSWER_CHARS)
