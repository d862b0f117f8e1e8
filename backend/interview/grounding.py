"""An interview answer about news the agent remembers, asked for again until it tells what the memory holds.

Asked "Have you heard about a party? Who is hosting it, and when and where is it?", SmolLM2 had the memory
"Ben told me: ... Mia is hosting a party at Corner Cafe, tomorrow (day 2) at 7pm" in its prompt and answered
"I'm going to the corner Bakery tomorrow", or named the place and not the host. When the question asks about
an event the retrieved memories hold as news (the first, most relevant, memory whose words the slot extractor
reads as an invitation or appointment: intention/slots.py, and which the question names by its event, its
place or its host), the answer must tell who hosts it, what, when and where, as far as the memory says them
(normalised: "7pm" is "19時"; the host as the host, so "Ben told me Mia is hosting it" names Mia). An answer
that leaves any out is asked for again (llm/again.py) within INTERVIEW_DEADLINE_S, up to TELLING_TRIES calls,
with one sentence naming what to add, with the memory's values said from the interview's day ("tomorrow at
7pm" on day 1 is "today at 7pm" on day 2). The answer that lacks the least is kept.

Only what the agent remembers is asked for: a question about something no memory holds, or about news told
in a visitor's words (data, never facts to insist on), is answered once, as before. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from backend.intention import events, who
from backend.intention import slots as news
from backend.intention.appointment import Place, find_place, fold, names_label
from backend.intention.fact import Slots, asked_for
from backend.interview.prompts import InterviewContext, Remembered

#: The order what is asked for is named in.
ORDER = ("who", "what", "when", "where")


@dataclass(frozen=True)
class Asked:
    """The news the question asks about, as the memory holds it."""

    slots: Slots
    #: The host's id and name when the memory names someone other than the agent; None: no host to tell.
    host_id: str | None
    host_name: str | None
    memory_id: int


def news_asked(ctx: InterviewContext, places: Sequence[Place], people: Mapping[str, str]) -> Asked | None:
    """The news the question asks about that a retrieved memory holds, or None (module docstring)."""
    question = fold(ctx.question)
    named_kinds = {(e.kind, e.family) for _at, _words, e in events.mentions(ctx.question)}
    for memory in ctx.memories:
        if memory.visitor:
            continue
        found = _slots(memory, ctx, places, people)
        if found is None or not _is_asked(found, question, named_kinds, places, people):
            continue
        host = found.host if found.host != ctx.agent.id else None
        return Asked(found, host, people.get(host) if host else None, memory.id)
    return None


def lacks(answer: str, asked: Asked, ctx: InterviewContext, places: Sequence[Place],
          people: Mapping[str, str]) -> tuple[str, ...]:  # fmt: skip
    """What of the news `answer` leaves out, in ORDER: "who" when it does not name the host as the host,
    and the slots (what, when, where) it does not carry, read from the interview's day and hour."""
    if not answer.strip():
        return ()
    today = ctx.day if ctx.day is not None else asked.slots.written_day
    said = news.carries(answer, asked.slots, language=ctx.language, places=places, today=today,
                        now=ctx.time_of_day or 0.0)  # fmt: skip
    left = [s for s in news.CHECKED if s in asked.slots.present() and s not in said]
    if asked.host_id is not None and who.host(answer, people) != asked.host_id:
        left.append("who")
    return tuple(s for s in ORDER if s in left)


def ask(asked: Asked, left: tuple[str, ...], ctx: InterviewContext) -> dict[str, str]:
    """The one-sentence request for what the answer left out, with the values from the memory."""
    today = ctx.day if ctx.day is not None else asked.slots.written_day
    if ctx.language == "ja":
        parts = asked_for(asked.slots, left, "ja", today, who=f"誰が開くか（{asked.host_name}）")
        return {"role": "user", "content": f"覚えていることから、{parts}も入れて、もう一度答えること。"}
    parts = asked_for(asked.slots, left, "en", today, who=f"who is hosting it ({asked.host_name})")
    return {"role": "user", "content": f"Answer again from what you remember, so that it also tells {parts}."}


def _slots(
    memory: Remembered, ctx: InterviewContext, places: Sequence[Place], people: Mapping[str, str]
) -> Slots | None:
    day = memory.day if memory.day is not None else ctx.day if ctx.day is not None else 1
    language = "ja" if ctx.language == "ja" else "en"
    return news.extract(memory.content, language=language, today=day, places=places, people=people)


def _is_asked(
    slots: Slots,
    question: str,
    named_kinds: set[tuple[str, str]],
    places: Sequence[Place],
    people: Mapping[str, str],
) -> bool:
    """Whether the question (folded) names the news: its event or one of the event's family, its place, or
    its host."""
    family = events.BY_KIND[slots.what].family if slots.what in events.BY_KIND else slots.what
    if slots.what != "meetup" and any(kind == slots.what or fam == family for kind, fam in named_kinds):
        return True
    place = find_place(question, places)
    if slots.where is not None and place is not None and place.id == slots.where:
        return True
    if slots.host is not None and slots.host in people:
        return names_label(question, fold(people[slots.host]))
    return False
