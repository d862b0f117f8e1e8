"""A telling that left a slot out, asked for once more within its turn.

A small model told "Mia is hosting a party at Corner Cafe, tomorrow (day 2) at 7pm" often says the party and
the place and drops the time, and a telling without its time forms no appointment. When the turn's line
carries some of its news's slots but not all (intention/telling.check), and the deadline leaves room for a
second call as long as the first, the model is asked once more with one short sentence naming what the line
must also say, with those slots' values as people say them ("when (tomorrow at 7pm)"). The line that
carries more slots is kept, the first when the second call fails or is no better; the turn row's `telling`
trace records `asked_again` (the slots that were missing). The refused line itself is never put back into
the prompt (a small model copies what it is shown). A telling still partial is offered again on the next
line or talk, as before.
"""

from __future__ import annotations

from backend.conversation.prompts import TurnContext
from backend.intention import telling
from backend.intention.fact import slot_words

#: A second call is made only when the turn has this many times the first call's duration left.
TIME_MARGIN = 1.25

_SLOT_JA = {"what": "何を", "when": "いつ", "where": "どこで"}


def missing(ctx: TurnContext, line: str) -> tuple[str, ...]:
    """The slots of the turn's news `line` leaves out (empty: nothing to tell, no slots, or all said)."""
    if ctx.tell is None or ctx.tell.slots is None or not ctx.tell.slots.present() or not line.strip():
        return ()
    return telling.check(line, ctx.tell, day=ctx.day, hour=ctx.time_of_day).missing


def partial(ctx: TurnContext, line: str) -> tuple[str, ...]:
    """The slots `line` left out when it began to tell the turn's news (carried at least one of them);
    empty otherwise: a line that says none of it (a greeting first) leaves the news to the next line."""
    left = missing(ctx, line)
    if not left or ctx.tell is None or ctx.tell.slots is None:
        return ()
    return left if len(left) < len(ctx.tell.slots.present()) else ()


def ask(ctx: TurnContext, left: tuple[str, ...]) -> dict[str, str]:
    """The one-sentence request for the slots the line left out, with their values."""
    assert ctx.tell is not None and ctx.tell.slots is not None
    slots, partner = ctx.tell.slots, ctx.partner.name
    if ctx.language == "ja":
        parts = "と".join(f"{_SLOT_JA[s]}（{slot_words(slots, s, 'ja', ctx.day)}）" for s in left)
        return {"role": "user", "content": f"{partner}へのセリフに{parts}も入れて、もう一度言うこと。"}
    parts = " and ".join(f"{s} ({slot_words(slots, s, 'en', ctx.day)})" for s in left)
    return {"role": "user", "content": f"Say the line to {partner} again so that it also tells {parts}."}


def room_for_another(remaining_s: float, first_call_s: float) -> bool:
    """Whether the turn's deadline leaves room for a second call as long as the first (with TIME_MARGIN)."""
    return remaining_s > first_call_s * TIME_MARGIN
