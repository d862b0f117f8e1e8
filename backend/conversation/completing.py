"""A telling that left a slot out, asked for again within its turn while the deadline has room.

A small model told "Mia is hosting a party at Corner Cafe, tomorrow (day 2) at 7pm" often says the party and
the place and drops the time, or greets and says nothing of it, and a telling without its time forms no
appointment. When the turn's line leaves out any slot of the news the prompt asked it to tell
(intention/telling.check), the model is asked again (llm/again.py), up to TELLING_TRIES calls in all, each
while the deadline leaves room for one more call as long as the longest so far: the prompt plus one short sentence
naming what the line must also say, with those slots' values as people say them ("when (tomorrow at 7pm)";
a line naming someone else as the host lacks "who": "whose it is (Mia's)"),
sampled with a seed of its own (the same prompt and seed would give the same line). The line that carries
the most slots is kept (the earliest among equals); a call that fails keeps what there was. The turn row's
`telling` trace records `asked_again` (the slots the first line left out) and `tries` (calls made). The
refused line itself is never put back into the prompt (a small model copies what it is shown). A telling
still partial is offered again on the next line or talk, as before.

Measured on SmolLM2-135M (bench/telling.py, eight telling situations): one more call with the ask told 66%
of tellings in full, three more 75%, three more also after a line that said none of it 88%.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from backend.conversation.prompts import TurnContext, news_host, people
from backend.conversation.schemas import TurnReply
from backend.intention import telling, who
from backend.intention.fact import asked_for
from backend.llm.again import Completed, until_complete
from backend.llm.base import LLM, GenerateOptions

__all__ = ["Completed", "ask", "complete", "lacks", "missing"]


def lacks(ctx: TurnContext, line: str) -> tuple[str, ...]:
    """What `line` gets wrong of the turn's news: the slots it leaves out (`missing`), and "who" when it
    names someone else as the host (SmolLM2: "Lily is having a party", told to Lily of Mia's party)."""
    left = missing(ctx, line)
    if ctx.tell is None or ctx.tell.slots is None or not line.strip() or ctx.partner_said_farewell:
        return left
    named = who.host(line, {ctx.tell.origin_id: ctx.tell.origin_name, **people(ctx)})
    return (*left, "who") if named is not None and named != news_host(ctx)[0] else left


def missing(ctx: TurnContext, line: str) -> tuple[str, ...]:
    """The slots of the turn's news `line` leaves out (empty: nothing to tell, no slots, all said, or the
    partner said goodbye, when the prompt does not ask for the news)."""
    if ctx.tell is None or ctx.tell.slots is None or not ctx.tell.slots.present() or not line.strip():
        return ()
    if ctx.partner_said_farewell:
        return ()
    return telling.check(line, ctx.tell, day=ctx.day, hour=ctx.time_of_day).missing


def ask(ctx: TurnContext, left: tuple[str, ...]) -> dict[str, str]:
    """The one-sentence request for what the line left out or got wrong (`lacks`), with the values."""
    assert ctx.tell is not None and ctx.tell.slots is not None
    slots, partner = ctx.tell.slots, ctx.partner.name
    host_id, host = news_host(ctx)
    own = host_id == ctx.speaker.id
    if ctx.language == "ja":
        whose = "自分が開くこと" if own else f"誰が開くか（{host}）"
        parts = asked_for(slots, left, "ja", ctx.day, who=whose)
        return {"role": "user", "content": f"{partner}へのセリフに{parts}も入れて、もう一度言うこと。"}
    whose = "that you are hosting it" if own else f"whose it is ({host}'s)"
    parts = asked_for(slots, left, "en", ctx.day, who=whose)
    return {"role": "user", "content": f"Say the line to {partner} again so that it also tells {parts}."}


async def complete(
    llm: LLM,
    ctx: TurnContext,
    reply: TurnReply,
    *,
    asked: tuple[Sequence[dict[str, str]], type[TurnReply], GenerateOptions],
    took_s: float,
    remaining_s: Callable[[], float],
    tries: int,
    clock: Callable[[], float],
) -> Completed[TurnReply]:
    """`reply`, or a later try that carries more of the news's slots (module docstring; llm/again.py).

    Args:
        asked: the first call's prompt, schema and options (each try adds one message and its own seed).
        took_s: the first call's seconds.
        remaining_s: the seconds the turn may still spend on the model.
        tries: TELLING_TRIES, the most calls in all (1: never ask again).
        clock: monotonic seconds (the event loop's time).
    """
    return await until_complete(
        llm, reply, asked=asked, lacks=lambda r: lacks(ctx, r.dialogue), ask=lambda left: ask(ctx, left),
        took_s=took_s, remaining_s=remaining_s, tries=tries, clock=clock,
    )  # fmt: skip
