"""A telling that leaves a slot out is asked for again within its turn (conversation/completing.py): up to
TELLING_TRIES calls, each while the deadline has room, each with its own seed; the line carrying the most
slots is kept, and a failing call keeps what there was."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import replace

from backend.conversation import completing
from backend.conversation.prompts import TurnContext, build_facts, build_messages
from backend.conversation.schemas import TurnReply, turn_reply_for
from backend.errors import LLMUnavailable
from backend.intention import slots as news_slots
from backend.intention.appointment import Place
from backend.intention.telling import Tellable
from backend.llm.base import PRIORITY_TURN, GenerateOptions
from backend.scripted import ScriptedLLM
from backend.world.models import Agent

PARTY = "Tomorrow at 7pm I am throwing a party at the Corner Cafe. Everyone is welcome!"
PLACES = [Place("cafe", "Corner Cafe")]
MIA, BEN = Agent(id="mia", name="Mia", language="en"), Agent(id="ben", name="Ben", language="en")
LILY = Agent(id="lily", name="Lily", language="en")


def _ctx(**changes: object) -> TurnContext:
    found = news_slots.extract(
        PARTY, language="en", today=1, places=PLACES, people={"mia": "Mia", "ben": "Ben"}
    )
    item = Tellable("k", PARTY, "mia", "Mia", 1, slots=found)
    base = {"speaker": MIA, "partner": BEN, "language": "en", "location_name": "Corner Cafe", "day": 1,
            "time_of_day": 10.0, "history": ["Ben: Morning, Mia!"], "turn_index": 1, "max_turns": 8,
            "tell": item}  # fmt: skip
    return TurnContext(**{**base, **changes})  # type: ignore[arg-type]


def _line(text: str) -> dict[str, object]:
    return {"dialogue": text, "emotion": "happy", "is_conversation_end": False}


GREETING = "Morning, Ben! Lovely weather today."
PARTIAL = "Ben, I'm throwing a party at the Corner Cafe!"
FULL = "Ben, come to my party at the Corner Cafe tomorrow at 7pm!"


def _complete(llm: ScriptedLLM, ctx: TurnContext, first: str, *, tries: int = 4, remaining: float = 60.0,
              took: float = 1.0) -> completing.Completed:  # fmt: skip
    schema = turn_reply_for(None)
    options = GenerateOptions(purpose="dialogue", priority=PRIORITY_TURN, facts=build_facts(ctx), seed=7)
    reply = TurnReply.model_validate(_line(first))
    ticks = itertools.count()
    return asyncio.run(
        completing.complete(
            llm, ctx, reply, asked=(build_messages(ctx), schema, options), took_s=took,
            remaining_s=lambda: remaining, tries=tries, clock=lambda: float(next(ticks)),
        )
    )  # fmt: skip


def test_a_greeting_is_asked_again_until_a_line_carries_the_news() -> None:
    llm = ScriptedLLM()
    llm.enqueue(_line(GREETING), _line(PARTIAL), _line(FULL), purpose="dialogue")
    done = _complete(llm, _ctx(), GREETING)
    assert done.reply.dialogue == FULL and done.asked_again == ["what", "when", "where"] and done.tries == 4
    asks = [c.messages[-1]["content"] for c in llm.calls("dialogue")]
    # Each ask names what the best line so far still lacks, with values; the refused line is never shown.
    assert "what (party), when (tomorrow at 7pm) and where (Corner Cafe)" in asks[0]
    assert asks[-1] == "Say the line to Ben again so that it also tells when (tomorrow at 7pm)."
    assert all(GREETING not in ask and PARTIAL not in ask for ask in asks)
    seeds = [c.options.seed for c in llm.calls("dialogue")]
    assert len(set(seeds)) == 3 and 7 not in seeds  # each try its own seed, none the first call's


def test_a_line_naming_someone_else_as_the_host_is_asked_again() -> None:
    """SmolLM2 passed on Mia's party to Lily as "Lily is having a party ...": whose it is, asked again."""
    wrong = "Ben is hosting a party at the Corner Cafe tomorrow at 7pm!"
    llm = ScriptedLLM()
    llm.enqueue(_line(FULL), purpose="dialogue")
    done = _complete(llm, _ctx(), wrong)
    assert done.reply.dialogue == FULL and done.asked_again == ["who"] and done.tries == 2
    assert llm.calls("dialogue")[0].messages[-1]["content"] == (
        "Say the line to Ben again so that it also tells that you are hosting it."
    )
    heard = _ctx(speaker=BEN, partner=LILY, tell=replace(_ctx().tell, heard_from="Mia"))  # type: ignore[arg-type]
    llm.enqueue(_line("Lily, Mia's party is at the Corner Cafe tomorrow at 7pm."), purpose="dialogue")
    again = _complete(llm, heard, "Lily is having a party at the Corner Cafe tomorrow at 7pm.")
    assert again.asked_again == ["who"] and "Mia's party" in again.reply.dialogue
    assert llm.calls("dialogue")[-1].messages[-1]["content"].endswith("whose it is (Mia's).")


def test_the_best_line_is_kept_and_a_failing_call_keeps_it() -> None:
    llm = ScriptedLLM()
    llm.enqueue(_line(GREETING), LLMUnavailable("model down"), purpose="dialogue")
    done = _complete(llm, _ctx(), PARTIAL)
    assert done.reply.dialogue == PARTIAL and done.asked_again == ["when"] and done.tries == 3


def test_no_try_past_the_deadline_or_the_setting_or_without_an_ask() -> None:
    llm = ScriptedLLM()
    assert _complete(llm, _ctx(), PARTIAL, remaining=1.2, took=1.0).tries == 1  # no room for another call
    assert _complete(llm, _ctx(), PARTIAL, tries=1).tries == 1  # TELLING_TRIES=1: never asked again
    assert _complete(llm, _ctx(), FULL).asked_again is None  # told in full
    farewell = _ctx(history=["Ben: Bye, Mia!"], partner_said_farewell=True)  # the prompt asked no news
    assert _complete(llm, farewell, GREETING).asked_again is None
    assert llm.calls("dialogue") == []
