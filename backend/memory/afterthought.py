"""The end-of-conversation call: one model call per participant (purpose `reflection`, stage `afterthought`).

It answers, at once, what used to take up to three calls: the conversation reflection (a first-person
paragraph and an importance, stored as the `reflection` memory citing the conversation's observations), what
the conversation taught about the partner (traits, notes, and the running summary rewritten within
`person_summary_chars`, so the summary never needs a recompression call of its own) and, when asked, the
participant's feeling once it is over (one word of Plutchik's wheel; the caller applies it).

Asking and applying are separate so that a job run again after a crash does each half exactly once: `done`
reads which halves are stored (a reflection for the session; the session folded into person memory), `ask`
is called only when one is missing, and `apply` writes only the missing ones.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue, create_model

from backend.emotion.schemas import LABEL_MAX_CHARS, label_vocabulary
from backend.errors import LLMError
from backend.gametime import format_clock
from backend.llm.base import LLM, PRIORITY_BACKGROUND, GenerateOptions, Message
from backend.memory import person
from backend.memory.models import AgentLookup, Key, Memory, PersonMemory
from backend.memory.person import PersonBook
from backend.memory.prompts import KEPT_SUMMARY, PersonItem, PersonTrait
from backend.memory.reflection import Reflector
from backend.memory.settings import MemorySettings
from backend.text import clean_text
from backend.world.models import Agent

log = logging.getLogger(__name__)


#: One paragraph: the grammar ends the reflection here (a small model otherwise writes to the limit).
REFLECTION_CHARS = 400


class Afterthought(BaseModel):
    """A participant's thoughts once a conversation is over: the reflection, the partner, the feeling."""

    model_config = ConfigDict(extra="ignore")
    reflection: Annotated[str, AfterValidator(clean_text)] = Field(min_length=1, max_length=REFLECTION_CHARS)
    importance: int = Field(ge=1, le=10)
    traits_noticed: list[PersonTrait] = Field(default_factory=list, max_length=3)
    notes: list[PersonItem] = Field(default_factory=list, max_length=3)
    person_summary: str = Field(min_length=1, max_length=2000, json_schema_extra=KEPT_SUMMARY)
    feeling: str | None = Field(None, max_length=LABEL_MAX_CHARS)


@functools.lru_cache(maxsize=16)
def afterthought_for(language: str | None, max_chars: int) -> type[Afterthought]:
    """The Afterthought asked for: its schema holds the partner summary to `max_chars` and, with `language`,
    lists the wheel's words in it for the `feeling`; with None it asks for no feeling (the field stays
    optional either way, so a reply without one still validates)."""
    fields: dict[str, Any] = {
        "person_summary": (
            str,
            # Validation takes what the schema asks for (PERSON_SUMMARY_CHARS goes up to 4000) and, below
            # 2000, a little more: a model without a grammar may overshoot its limit.
            Field(
                min_length=1,
                max_length=max(2000, max_chars),
                json_schema_extra={"maxLength": max_chars, **KEPT_SUMMARY},
            ),
        )
    }
    if language is not None:
        words: list[JsonValue] = list(label_vocabulary(language))
        fields["feeling"] = (
            str | None,
            Field(None, max_length=LABEL_MAX_CHARS, json_schema_extra={"enum": words}),
        )
    return create_model("Afterthought", __base__=Afterthought, __doc__=Afterthought.__doc__, **fields)


def _known(facts: dict[str, Any], ja: bool) -> str:
    traits = (", " if not ja else "、").join(facts.get("traits_noticed") or []) or "-"
    notes = "\n".join(f"- {n}" for n in facts.get("notes") or []) or "-"
    if ja:
        return f"要約: {facts.get('summary') or '-'}\n性格: {traits}\nメモ:\n{notes}"
    return f"Summary: {facts.get('summary') or '-'}\nTraits: {traits}\nNotes:\n{notes}"


def messages(facts: dict[str, Any]) -> list[Message]:
    """The prompt, in the participant's language; its fields are described in words, one line each."""
    me, other, limit = facts["agent_name"], facts["partner_name"], facts["max_chars"]
    ja = str(facts.get("language", "ja")).startswith("ja")
    feel = facts.get("ask_feeling", False)
    if ja:
        system = (
            f"あなたは{me}です。{other}との会話が今終わりました。以下は、あなたが{other}について知っていたことと、"
            "その会話です。会話をふり返ってください。\n次の項目をもつJSONオブジェクトで答えてください。\n"
            "- reflection: 会話の一人称の要約を一段落で(話した内容と、それをどう感じたか)、自分の言葉で\n"
            "- importance: この会話があなたにとってどれほど大切だったか(1〜10の整数)\n"
            f"- traits_noticed: 今回新たに気づいた{other}の性格(短い言葉)\n"
            f"- notes: 新しく知った、覚えておくべき{other}についての具体的な事実\n"
            f"- person_summary: この会話を含めて書き直した{other}についての要約({limit}文字以内)"
            + (
                "\n- feeling: 会話を終えた今の気持ち。プルチックの感情の輪の感情を、その強さで表す日本語の一語"
                if feel
                else ""
            )
        )
    else:
        system = (
            f"You are {me}. Your conversation with {other} just ended. Below is what you knew about {other}, "
            "then the conversation. Think it over.\nReply with a JSON object with these fields:\n"
            "- reflection: one first-person paragraph summarising the conversation (what was said, how you "
            "feel about it), in your own words\n"
            "- importance: how much the conversation mattered to you, an integer from 1 to 10\n"
            f"- traits_noticed: personality traits of {other} you newly noticed, in short words\n"
            f"- notes: new concrete facts worth remembering about {other}\n"
            f"- person_summary: your running summary of {other}, rewritten to include this conversation, "
            f"at most {limit} characters"
            + (
                "\n- feeling: how you feel now that it is over, one word in English naming an emotion of "
                "Plutchik's wheel at its strength"
                if feel
                else ""
            )
        )
    where = f" ({facts['location_name']})" if facts.get("location_name") else ""
    user = f"{_known(facts, ja)}\n\nDay {facts['day']} {facts['clock']}{where}\n" + "\n".join(
        facts["transcript"]
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@dataclass
class Done:
    """Which halves of a participant's afterthought are already stored (a job run again after a crash)."""

    reflection: Memory | None
    person: PersonMemory | None
    folded: bool

    @property
    def complete(self) -> bool:
        return self.reflection is not None and self.folded


@dataclass
class Conversation:
    """What one participant's afterthought is about."""

    session_id: str
    partner_id: str
    partner_name: str
    transcript: list[str]
    evidence_ids: list[int]
    day: int
    time_of_day: float
    language: str
    #: Where it took place (the conversation's `location_name`); None: the agent's last reported place.
    location_name: str | None = None


class Afterthoughts:
    """A participant's one end-of-conversation call: what is stored already, the call, storing its halves."""

    def __init__(
        self,
        llm: LLM,
        people: PersonBook,
        reflector: Reflector,
        agents: AgentLookup,
        settings: MemorySettings,
    ) -> None:
        self.llm = llm
        self.people = people
        self.reflector = reflector
        self.agents = agents
        self.settings = settings

    async def done(self, key: Key, conv: Conversation, made: Memory | None) -> Done:
        """`made`: the stored reflection on the session, if any (the caller has looked it up)."""
        row = await asyncio.to_thread(self.people.get, key, conv.partner_id)
        return Done(made, row, row is not None and row.last_session_id == conv.session_id)

    async def ask(
        self, key: Key, conv: Conversation, known: PersonMemory | None, feeling: str | None
    ) -> Afterthought | LLMError:
        """The one model call; `feeling`: the language to ask a feeling in, or None for none. Returns the
        model's error instead of raising it (the caller records it on the person memory)."""
        agent = await asyncio.to_thread(self.agents, *key)
        limit = self.settings.person_summary_chars
        facts = _facts(agent.name if agent else key[1], agent, conv, known, feeling, limit)
        try:
            return await self.llm.generate_json(
                messages(facts),
                afterthought_for(feeling, limit),
                options=_options(key, conv, facts),
            )
        except LLMError as exc:
            log.warning("end-of-conversation call for %s/%s failed: %s", *key, exc)
            return exc

    async def apply(
        self, key: Key, conv: Conversation, state: Done, reply: Afterthought | LLMError
    ) -> Memory | None:
        """Store the halves `state` lacks from `reply`; returns the session's reflection (None if still none).

        A failed call still records the meeting in person memory (its error in `last_error`), as a failed
        person update always did; the reflection is then left for the job's retry to ask again."""
        made = state.reflection
        failed = isinstance(reply, LLMError)
        if made is None and not isinstance(reply, LLMError):
            made = await self.reflector.store_conversation(
                key, reply.reflection, reply.importance, conv.evidence_ids,
                conv.day, conv.time_of_day, session_id=conv.session_id,
                location_name=conv.location_name,
            )  # fmt: skip
        if not state.folded:
            await self.people.fold(
                key,
                other_id=conv.partner_id,
                other_name=conv.partner_name,
                transcript=conv.transcript,
                session_id=conv.session_id,
                day=conv.day,
                time_of_day=conv.time_of_day,
                language=conv.language,
                learned=None
                if isinstance(reply, LLMError)
                else (reply.traits_noticed, reply.notes, reply.person_summary),
                error=str(reply) if failed else None,
            )
        return made


def _facts(
    name: str,
    agent: Agent | None,
    conv: Conversation,
    known: PersonMemory | None,
    feeling: str | None,
    limit: int,
) -> dict[str, Any]:
    return {
        "agent_name": name,
        "partner_name": conv.partner_name,
        "other_name": conv.partner_name,
        "language": conv.language,
        "transcript": [line for line in conv.transcript if line.strip()],
        "day": conv.day,
        "clock": format_clock(conv.time_of_day),
        "location_name": _place(agent, conv),
        "max_chars": limit,
        "ask_feeling": feeling is not None,
        **(person.known(known) if known is not None else {}),
    }


def _place(agent: Agent | None, conv: Conversation) -> str | None:
    """Where the conversation took place: its own `location_name`, else the agent's last reported place."""
    return conv.location_name or (agent.location_name if agent else None)


def _options(key: Key, conv: Conversation, facts: dict[str, Any]) -> GenerateOptions:
    return GenerateOptions(
        purpose="reflection",
        labels={"stage": "afterthought"},
        world_id=key[0],
        agent_id=key[1],
        session_id=conv.session_id,
        language=conv.language,
        priority=PRIORITY_BACKGROUND,
        facts=facts,
    )
