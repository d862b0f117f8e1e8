"""Tellings on a real small model: how often a turn's line carries the news, by TELLING_TRIES.

Run: `.venv/bin/python bench/telling.py` (options: `--model package:smollm2 --samples 4 --threads 1`).

The party news of the small English town (`town5_en`: Mia hosts a party at the Corner Cafe tomorrow at 7pm)
is told in eight situations: Mia tells it (opening a talk, or after two lines of small talk) and Ben passes it
on having heard it from Mia, each to two partners. Each situation is answered `--samples` times (the same
seeds for every setting) through the server's whole LLM stack (repair, echo check, one re-ask) and the turn's
own completion (conversation/completing.py) with TELLING_TRIES 1 (never ask again), 2 and 4 (the default).
Printed per setting: tellings whose line carries what, when and where (the slot checker the party scenario
uses), lines naming the wrong host, fallbacks (the stack gave up), model calls and seconds per turn. Nothing is
asserted: tests/real_engine asserts behaviour.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend.config import Settings  # noqa: E402
from backend.conversation import completing  # noqa: E402
from backend.conversation.prompts import TurnContext, build_facts, build_messages  # noqa: E402
from backend.conversation.schemas import turn_reply_for  # noqa: E402
from backend.errors import LLMError  # noqa: E402
from backend.intention import telling  # noqa: E402
from backend.intention.appointment import Place  # noqa: E402
from backend.llm.base import PRIORITY_TURN, GenerateOptions  # noqa: E402
from backend.llm.registry import build_provider, wrap  # noqa: E402
from backend.simulate import party_news  # noqa: E402
from backend.simulate.scenario import PARTIES  # noqa: E402
from backend.world.models import Agent  # noqa: E402

TOWN = Path(__file__).resolve().parent.parent / "backend" / "transfer" / "towns" / "town5_en.json"
#: The turn's deadline (TURN_DEADLINE_S's default): tries stop when another would not fit.
DEADLINE_S = 20.0
SMALL_TALK = {
    "sam": ["Morning, Sam. Quiet day at the workshop?", "Morning. I fixed a chair for the library."],
    "tom": ["Hi Tom, did you get your coffee?", "I did, thanks. The park was lovely this morning."],
    "lily": ["Hello Lily, still reading that big book?", "Yes, I am nearly at the end of it."],
}
MEMORIES = {
    "mia": ["Mia opened the Corner Cafe at 7am.", "Tom likes his coffee black."],
    "ben": ["Ben delivered bread to the Corner Cafe.", "Sam fixed Ben's delivery bike."],
}


@dataclass(frozen=True)
class Situation:
    speaker: str
    partner: str
    small_talk: bool  # two lines said before (the speaker's line first), or the talk's opening line


SITUATIONS = [
    Situation("mia", partner, small_talk) for partner in ("sam", "tom") for small_talk in (False, True)
] + [Situation("ben", partner, small_talk) for partner in ("tom", "lily") for small_talk in (False, True)]


def _town() -> tuple[dict[str, Agent], list[Place], dict[str, Any]]:
    data = json.loads(TOWN.read_text(encoding="utf-8"))
    agents = {
        a["id"]: Agent(id=a["id"], name=a["name"], language=a["language"], traits=a.get("traits") or [],
                       backstory=a.get("backstory", ""), speaking_style=a.get("speaking_style", ""))
        for a in data["agents"]
    }  # fmt: skip
    places = [Place(p["id"], p["name"]) for p in data["pois"]]
    return agents, places, data


def _context(situation: Situation, agents: dict[str, Agent], news: party_news.PartyNews,
             text: str) -> TurnContext:  # fmt: skip
    speaker, partner = agents[situation.speaker], agents[situation.partner]
    own = situation.speaker == news.host
    item = telling.Tellable(
        news.key, text, news.host, agents[news.host].name, 1,
        heard_from=None if own else agents[news.host].name, slots=news.slots,
    )  # fmt: skip
    history = []
    if situation.small_talk:
        said, answered = SMALL_TALK[situation.partner]
        history = [f"{speaker.name}: {said}", f"{partner.name}: {answered}"]
    return TurnContext(
        speaker=speaker, partner=partner, language="en", location_name="Riverside Park", day=1,
        time_of_day=10.0, history=history, turn_index=len(history), max_turns=8,
        plan_activity="Take a walk in the park", memories=MEMORIES[situation.speaker],
        memory_ids=[1, 2], ask_feeling=True, tell=item,
        emotion={"label": "joy", "values": {"joy": 40, "trust": 30}},
    )  # fmt: skip


async def _turn(llm: Any, ctx: TurnContext, seed: int, tries: int) -> tuple[str | None, float, int]:
    """The line the turn would say (None: it fell back), its seconds and the model calls it took."""
    messages, schema = build_messages(ctx), turn_reply_for("en")
    options = GenerateOptions(
        purpose="dialogue", priority=PRIORITY_TURN, language="en", facts=build_facts(ctx), seed=seed
    )
    started = time.perf_counter()
    try:
        reply = await llm.generate_json(messages, schema, options=options)
    except LLMError:
        return None, time.perf_counter() - started, 1
    done = await completing.complete(
        llm, ctx, reply, asked=(messages, schema, options), took_s=time.perf_counter() - started,
        remaining_s=lambda: DEADLINE_S - (time.perf_counter() - started), tries=tries, clock=time.perf_counter,
    )  # fmt: skip
    return done.reply.dialogue, time.perf_counter() - started, done.tries


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="package:smollm2")
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--show", action="store_true", help="print every line")
    args = parser.parse_args()
    settings = Settings(
        llm_provider="llamacpp", llamacpp_model_path=args.model, llamacpp_n_gpu_layers=0,
        llamacpp_threads=args.threads, database_url="sqlite://",
    )  # fmt: skip
    llm = wrap(build_provider(settings), settings, None)
    agents, places, data = _town()
    party = PARTIES["town5_en"]
    text = str(party["text"])
    news = party_news.news_of(
        text, str(party["host"]), written_day=1, agents=data["agents"], pois=data["pois"]
    )
    print(f"model {args.model}, {len(SITUATIONS)} situations x {args.samples} samples per setting")
    print(f"news: {text!r} -> slots {sorted(news.slots.present())}")
    for tries in (1, 2, 4):
        told = wrong = fell_back = 0
        seconds: list[float] = []
        calls: list[int] = []
        for situation in SITUATIONS:
            ctx = _context(situation, agents, news, text)
            assert ctx.tell is not None
            for sample in range(args.samples):
                line, took, made = await _turn(llm, ctx, 1000 + sample, tries)
                seconds.append(took)
                calls.append(made)
                if line is None:
                    fell_back += 1
                    continue
                carried = telling.check(line, ctx.tell, day=1, hour=10.0, places=places)
                told += carried.told
                wrong += party_news.wrong_host(line, news)
                if args.show:
                    mark = "told" if carried.told else f"missing {','.join(carried.missing)}"
                    print(f"  [{situation.speaker}->{situation.partner}] {mark}: {line}")
        total = len(SITUATIONS) * args.samples
        print(
            f"TELLING_TRIES={tries}: told (what, when, where) {told}/{total} ({told / total:.0%}), "
            f"wrong host {wrong}, fallbacks {fell_back}/{total}, {statistics.mean(calls):.2f} calls and "
            f"{statistics.mean(seconds):.1f} s per turn",
            flush=True,
        )


if __name__ == "__main__":
    asyncio.run(main())
