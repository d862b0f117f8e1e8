"""Scripted visitors for `machi simulate --visitors N`: players who walk up to agents and talk a little.

Each visitor (`player:visitor-1`..., registered as 来場者1...; odd ones speak Japanese, even ones English)
rests a while, then picks an agent free to talk (walking or strolling on an active plan item, not talking
to anyone), walks up to it (WALK_MIN game minutes) and holds a short conversation over
`POST /v1/conversation/player-turn`: one visitor line and the agent's reply a game minute, from the bank in
visitor_lines.py, ending with a farewell. The agent is `talking` meanwhile, so the world's own meetings
leave it alone; when its plan item ends the visitor says goodbye early. Visitors pace their lines below the
server's PLAYER_LINES_PER_MINUTE (wall clock), and a 429 is waited out, as a polite client would.
"""

from __future__ import annotations

import random
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from backend.simulate import load_client_package, visitor_lines

machi_client = load_client_package()
from machi_client.world import HeadlessWorld  # noqa: E402 - importable once the client package is loaded

PLAYER_PREFIX = machi_client.PLAYER_PREFIX

#: Game minutes a visitor takes to walk up to the agent it chose.
WALK_MIN = 3.0
#: Game minutes a visitor rests between visits (uniform), and before its first.
REST_MIN = (30.0, 90.0)
FIRST_MIN = (5.0, 45.0)
#: Lines one visitor says per wall-clock minute at most: under the server's default PLAYER_LINES_PER_MINUTE
#: (12), so a run at --speed max waits instead of being refused.
LINES_PER_MINUTE = 10
#: The share of visits with a rough line in them (moderation holds it back; the agent deflects).
DEFAULT_ROUGH_SHARE = 0.1


@dataclass
class Visit:
    session_id: str
    agent: Any  # the world's Walker
    lines: list[str]
    day: int
    time_of_day: float
    arrive_at: float
    talking: bool = False
    history: list[str] = field(default_factory=list)
    said: int = 0
    deflected: int = 0
    held_back: int = 0


@dataclass
class Visitor:
    id: str
    name: str
    language: str
    next_at: float
    visit: Visit | None = None
    recent: deque[float] = field(default_factory=deque)


@dataclass
class VisitorReport:
    """The visitors' side of the run (the simulate summary reports it under `visitors`)."""

    players: int = 0
    conversations: list[dict[str, Any]] = field(default_factory=list)
    end_reasons: Counter[str] = field(default_factory=Counter)
    lines: int = 0  # the visitors' lines (each answered by one reply of the agent)
    deflected: int = 0
    held_back: int = 0
    fallbacks: int = 0
    paced: int = 0
    rate_limited: int = 0


def visitor(number: int, next_at: float) -> Visitor:
    return Visitor(
        f"{PLAYER_PREFIX}visitor-{number}", f"来場者{number}", "ja" if number % 2 else "en", next_at
    )


class VisitorTraffic:
    """The visitors of one run, stepped once a game minute after the world's own tick."""

    def __init__(self, world: Any, count: int, *, seed: int, rough_share: float = DEFAULT_ROUGH_SHARE,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.world, self.client = world, world.client
        self.rng = random.Random(f"visitors-{seed}")
        self.rough_share, self.clock = rough_share, clock
        self.visitors = [visitor(n, world.minute + self.rng.uniform(*FIRST_MIN)) for n in range(1, count + 1)]
        self.report = VisitorReport(players=count)
        self._visits = 0

    def register(self) -> None:
        """PUT /v1/players/{id} for every visitor (their display name and language)."""
        for v in self.visitors:
            body = {"display_name": v.name, "language": v.language}
            self.client.put_player(v.id, body)

    def step(self) -> None:
        for v in self.visitors:
            if v.visit is None:
                if self.world.minute >= v.next_at:
                    self._approach(v)
            elif not v.visit.talking:
                self._arrive(v, v.visit)
            else:
                self._speak(v, v.visit)

    def close(self) -> None:
        """End the visits still going when the run ends (reason `simulation_end`)."""
        for v in self.visitors:
            if v.visit is not None and v.visit.talking:
                self._end(v, v.visit, "simulation_end")
            v.visit = None

    # --- walking up ---
    def _busy(self) -> set[str]:
        return {v.visit.agent.id for v in self.visitors if v.visit is not None}

    def _approach(self, v: Visitor) -> None:
        busy = self._busy()
        free = [w for w in self.world.walkers if w.id not in busy and self.world._free(w)]
        if not free:
            v.next_at = self.world.minute + WALK_MIN
            return
        agent = self.rng.choice(free)
        rough = self.rng.random() < self.rough_share
        self._visits += 1
        w = self.world
        v.visit = Visit(
            session_id=f"{w.run_id}-v{self._visits:04d}-{v.id.removeprefix(PLAYER_PREFIX)}-{agent.id}",
            agent=agent, lines=visitor_lines.visit_lines(self.rng, v.language, agent.name, rough=rough),
            day=w.day, time_of_day=w.time_of_day, arrive_at=w.minute + WALK_MIN,
        )  # fmt: skip

    def _arrive(self, v: Visitor, visit: Visit) -> None:
        if self.world.minute < visit.arrive_at:
            return
        if not self.world._free(visit.agent):  # it met someone or moved on while the visitor walked up
            v.visit, v.next_at = None, self.world.minute + WALK_MIN
            return
        visit.talking = True
        self.world._enter(visit.agent, "talking")

    # --- talking ---
    def _paced(self, v: Visitor) -> bool:
        """Whether the visitor has said as many lines as it allows itself within the last wall minute."""
        now = self.clock()
        while v.recent and v.recent[0] <= now - 60.0:
            v.recent.popleft()
        return len(v.recent) >= LINES_PER_MINUTE

    def _speak(self, v: Visitor, visit: Visit) -> None:
        if self._paced(v):
            self.report.paced += 1
            return
        last = len(visit.lines) - 1
        if visit.said < last and self.world._item_over(visit.agent):  # the agent must go: say goodbye now
            visit.lines = [*visit.lines[: visit.said], visitor_lines.farewell(self.rng, v.language)]
        reply = self._send(v, visit, visit.lines[visit.said])
        if reply is None:
            return
        self._heard(visit, reply)
        if reply["is_conversation_end"]:
            self._finish(v, visit, reply.get("end_reason") or "model")
        elif visit.said >= len(visit.lines):
            self._end(v, visit, "visitor_left")

    def _send(self, v: Visitor, visit: Visit, text: str) -> dict[str, Any] | None:
        """The visitor's line and the agent's reply; None when the server asked the visitor to wait (429)."""
        w = self.world
        body = {"session_id": visit.session_id, "player_id": v.id, "agent_id": visit.agent.id, "text": text,
                "location_name": visit.agent.location, "history": list(visit.history),
                "time_of_day": w.time_of_day, "day": w.day}  # fmt: skip
        try:
            reply: dict[str, Any] = self.client.player_turn(body)
        except machi_client.MachiRateLimitError:
            self.report.rate_limited += 1
            return None
        v.recent.append(self.clock())
        return reply

    def _heard(self, visit: Visit, reply: dict[str, Any]) -> None:
        for fix in reply.get("history_fixes") or []:  # the server's stored transcript wins
            visit.history[fix["index"]] = fix["line"]
        visit.history += [reply["player_line"], f"{visit.agent.name}: {reply['dialogue']}"]
        visit.said += 1
        visit.deflected += int(bool(reply.get("deflected")))
        visit.held_back += int(bool(reply.get("player_blocked")))
        report = self.report
        report.lines += 1
        report.fallbacks += int(bool(reply.get("fallback")))

    def _end(self, v: Visitor, visit: Visit, reason: str) -> None:
        """The visitor walks off without the server having ended the talk: tell it, as Unity would."""
        w = self.world
        if visit.history:  # a visit that never got a line out held no conversation on the server
            self.client.end(visit.session_id, reason, day=w.day, time_of_day=w.time_of_day)
        self._finish(v, visit, reason)

    def _finish(self, v: Visitor, visit: Visit, reason: str) -> None:
        w, report = self.world, self.report
        if visit.history:
            report.end_reasons[reason] += 1
            report.deflected += visit.deflected
            report.held_back += visit.held_back
            report.conversations.append({
                "session_id": visit.session_id, "player": v.id, "name": v.name, "agent": visit.agent.id,
                "lines": len(visit.history), "end_reason": reason, "deflected": visit.deflected,
                "held_back": visit.held_back, "day": visit.day, "time_of_day": visit.time_of_day,
            })  # fmt: skip
        visit.agent.cooldown_until = w.minute + w.config.cooldown_min
        w._enter(visit.agent, "cooldown")
        v.visit, v.next_at = None, w.minute + self.rng.uniform(*REST_MIN)


class VisitedTown(HeadlessWorld):
    """The headless town with scripted visitors: each game minute the agents move and talk, then the
    visitors walk up or speak. With no visitors it is the plain HeadlessWorld."""

    def __init__(self, client: Any, *, visitors: int = 0, rough_share: float = DEFAULT_ROUGH_SHARE,
                 **world: Any) -> None:  # fmt: skip
        super().__init__(client, **world)
        self.visitors = VisitorTraffic(self, visitors, seed=world.get("seed", 1), rough_share=rough_share)

    def run(self, hours: float, **options: Any) -> Any:
        self.visitors.register()
        report = super().run(hours, **options)
        self.visitors.close()
        return report

    def tick(self) -> None:
        super().tick()
        self.visitors.step()
