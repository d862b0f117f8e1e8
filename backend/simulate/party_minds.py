"""What the party scenario reads of the characters' minds besides the news, through the API: where each day
plan came from (the model, repaired, or the fallback), the conversations a farewell ended on a line that
invited someone, and, on request, one short council's opinions (each a real sentence of the model's, or not).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Any

from backend.conversation import farewell
from backend.intention import who

#: A council opinion counts as a real sentence with at least this many words (Japanese: characters / 2).
MIN_OPINION_WORDS = 3
_WORDS = re.compile(r"[A-Za-z]+(?:'[a-z]+)?|[\u3040-\u30ff\u4e00-\u9fff]{2}")


def plan_sources(client: Any, agent_ids: list[str], days: list[int]) -> dict[str, Any]:
    """Each agent's stored plan per day by source (`model`, `repaired`, `fallback`, ...; `none`: no plan)."""
    found: dict[str, dict[int, str]] = {}
    for agent_id in agent_ids:
        for day in days:
            try:
                plan = client._send("GET", f"/v1/agents/{agent_id}/plan", params={"day": day})
            except Exception:  # noqa: BLE001 - a 404 (no plan that day) is an answer here
                plan = {}
            found.setdefault(agent_id, {})[day] = str(plan.get("source") or "none")
    counts = Counter(source for per_day in found.values() for source in per_day.values())
    return {"by_agent": found, "counts": dict(sorted(counts.items()))}


def farewell_endings(talks: list[tuple[dict[str, Any], list[dict[str, Any]]]]) -> dict[str, Any]:
    """Of `talks` (variety.read_talks: each conversation's summary and turns), those ended by a farewell
    phrase (`end_reason` farewell), and those among them whose ending line invited someone ("I'm really
    excited to see you soon. Come to my party!"): the end rule must not let an invitation end a talk."""
    ended, inviting = 0, []
    for summary, turns in talks:
        last = turns[-1] if turns else {}
        if last.get("end_reason") != "farewell":
            continue
        ended += 1
        line = str(last.get("dialogue") or "")
        if farewell.invites(line) or who.is_invitation(line):
            inviting.append({"session_id": summary["session_id"], "line": line})
    return {"ended_by_farewell": ended, "inside_an_invitation": inviting}


def real_sentence(text: str) -> bool:
    """Whether a council opinion is a sentence someone could say: MIN_OPINION_WORDS words or more."""
    return len(_WORDS.findall(text)) >= MIN_OPINION_WORDS


def council_opinions(
    client: Any, members: list[str], proposal: dict[str, Any], *, timeout_s: float
) -> dict[str, Any]:
    """Hold one council of `members` on `proposal` (one round) and read its opinions: each member's stance
    and opinion, whether it is a real sentence, and whether it was the model's (not a fallback)."""
    started = client.start_council({**proposal, "members": members, "rounds": 1})
    deadline = time.monotonic() + timeout_s
    council = client.council(started["id"])
    while council.get("status") not in ("done", "failed") and time.monotonic() < deadline:
        time.sleep(2.0)
        council = client.council(started["id"])
    rounds = (council.get("record") or {}).get("rounds") or []
    opinions = [
        {
            "agent_id": o.get("agent_id"),
            "stance": o.get("stance"),
            "opinion": str(o.get("opinion") or ""),
            "model": not o.get("fallback") and not o.get("error"),
            "sentence": real_sentence(str(o.get("opinion") or "")),
        }
        for o in (rounds[0].get("opinions") if rounds else None) or []
    ]
    return {"status": council.get("status"), "outcome": council.get("outcome"), "opinions": opinions}
