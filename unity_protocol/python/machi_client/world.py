"""A headless stand-in for the Unity scene: agents on a game clock, driven over HTTP as Unity drives them.

Each agent runs the five states of the C# `AgentBrain` sample: WaitingForReplan (ask `plan/now`),
MovingToPoi (walk straight to the target at a fixed speed), WanderingInPoi (stroll around it until the
plan item ends), Talking, and Cooldown. Two agents meet like the C# `ConversationTrigger`: within
`talk_distance`, the other inside the initiator's view cone, and no obstacle cutting the line between
them. They talk turn by turn, alternating speakers, until the server ends the talk (`is_conversation_end`)
or one of them leaves for its next plan item and they drift beyond `end_distance` (reported to
`/v1/conversation/end` with reason "distance"). Every state change is reported. Seeded: the same seed and
server answers give the same run.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from machi_client.client import MachiClient
from machi_client.geometry import Obstacle, Vec, blocked, distance, heading_to, in_view, scatter_obstacles
from machi_client.geometry import step_towards as step

MINUTES_PER_DAY = 1440
CAN_TALK = ("moving_to_poi", "wandering_in_poi")


@dataclass
class WorldConfig:
    walk_m_per_min: float = 60.0
    talk_distance: float = 5.0
    end_distance: float = 9.0
    view_angle_deg: float = 120.0
    wander_radius: float = 4.0
    cooldown_min: float = 15.0
    pair_cooldown_min: float = 120.0
    replan_retry_min: float = 30.0
    turn_min: float = 1.0  # game minutes one line takes
    obstacles: int = 12
    stream_every: int = 3  # every n-th conversation streams its turns over SSE (0: never)


@dataclass
class Walker:
    id: str
    name: str
    pos: Vec
    heading: float
    state: str = "waiting_for_replan"
    plan: dict[str, Any] | None = None
    target: dict[str, Any] | None = None
    location: str | None = None
    wander_goal: Vec | None = None
    replan_at: float = 0.0
    cooldown_until: float = 0.0
    talk: Talk | None = None
    leaving: bool = False
    visited: set[str] = field(default_factory=set)
    plan_targets: set[str] = field(default_factory=set)


@dataclass
class Talk:
    session_id: str
    walkers: tuple[Walker, Walker]
    location: str | None
    stream: bool
    history: list[str] = field(default_factory=list)
    fallbacks: int = 0


@dataclass
class WorldReport:
    """What happened, from the client's side (the simulate summary adds the server's counts)."""

    conversations: list[dict[str, Any]] = field(default_factory=list)
    end_reasons: Counter[str] = field(default_factory=Counter)
    turns: int = 0
    streamed_turns: int = 0
    fallbacks: int = 0
    state_reports: int = 0
    plan_requests: int = 0
    visited: dict[str, set[str]] = field(default_factory=dict)
    plan_targets: dict[str, set[str]] = field(default_factory=dict)
    plan_days: dict[str, set[int]] = field(default_factory=dict)


class HeadlessWorld:
    """The demo town without Unity. `run(hours)` advances the clock one step at a time."""

    def __init__(
        self, client: MachiClient, *, seed: int = 1, config: WorldConfig | None = None,
        start_day: int = 1, start_hour: float = 6.0, run_id: str = "sim",
    ) -> None:  # fmt: skip
        self.client, self.config = client, config or WorldConfig()
        self.rng = random.Random(seed)
        self.minute = (start_day - 1) * MINUTES_PER_DAY + start_hour * 60
        self.run_id, self._talks = run_id, 0
        self._pair_until: dict[frozenset[str], float] = {}
        self.pois = {p["id"]: p for p in client.pois()}
        spots = [(p["position"]["x"], p["position"]["z"]) for p in self.pois.values()]
        self.obstacles: list[Obstacle] = scatter_obstacles(
            self.rng, spots, self.config.obstacles, self.config.talk_distance
        )
        self.walkers = [self._place(agent) for agent in client.agents()]
        self.report = WorldReport()

    def _place(self, agent: dict[str, Any]) -> Walker:
        home = self.pois.get(agent.get("home_poi") or "") or self.rng.choice(list(self.pois.values()))
        pos = (home["position"]["x"], home["position"]["z"])
        return Walker(agent["id"], agent["name"], pos, self.rng.uniform(-math.pi, math.pi))

    @property
    def day(self) -> int:
        return int(self.minute // MINUTES_PER_DAY) + 1

    @property
    def time_of_day(self) -> float:
        return round((self.minute % MINUTES_PER_DAY) / 60.0, 4)

    def run(self, hours: float, *, pace: float | None = None,
            progress: Callable[[float, float], None] | None = None) -> WorldReport:  # fmt: skip
        """Simulate `hours` game hours; `pace` = game minutes per real second (None: as fast as possible)."""
        total, done = hours * 60.0, 0.0
        while done < total:
            started = time.monotonic()
            self.tick()
            self.minute += self.config.turn_min
            done += self.config.turn_min
            if progress:
                progress(done, total)
            if pace:
                time.sleep(max(0.0, self.config.turn_min / pace - (time.monotonic() - started)))
        for walker in self.walkers:
            self.report.visited[walker.id] = walker.visited
            self.report.plan_targets[walker.id] = walker.plan_targets
        return self.report

    def tick(self) -> None:
        """One step: everyone moves or decides, new meetings start, every conversation speaks once."""
        for walker in self.walkers:
            if walker.talk is None:
                self._act(walker)
        self._meet()
        for talk in {id(w.talk): w.talk for w in self.walkers if w.talk is not None}.values():
            self._converse(talk)

    # --- the five states ---
    def _act(self, w: Walker) -> None:
        if w.state == "waiting_for_replan" and self.minute >= w.replan_at:
            self._replan(w)
        elif w.state == "moving_to_poi":
            self._walk(w)
        elif w.state == "wandering_in_poi":
            if self._item_over(w):
                self._enter(w, "waiting_for_replan")
            else:
                self._wander(w)
        elif w.state == "cooldown" and self.minute >= w.cooldown_until:
            self._enter(w, "waiting_for_replan")

    def _replan(self, w: Walker) -> None:
        w.plan = self._plan_now(w)
        w.target = w.plan.get("target_poi")
        if w.target is None:
            w.replan_at = self.minute + self.config.replan_retry_min
            return
        if w.plan.get("status") == "active":
            w.plan_targets.add(w.target["id"])
        w.location = None
        self._enter(w, "moving_to_poi")

    def _plan_now(self, w: Walker) -> dict[str, Any]:
        self.report.plan_requests += 1
        self.report.plan_days.setdefault(w.id, set()).add(self.day)
        return self.client.plan_now(w.id, self.day, self.time_of_day)

    def _walk(self, w: Walker) -> None:
        goal = self._spot(w.target)
        w.heading = heading_to(w.pos, goal, w.heading)
        w.pos = step(w.pos, goal, self.config.walk_m_per_min * self.config.turn_min)
        if distance(w.pos, goal) < 0.5:
            w.location = w.target["name"] if w.target else None
            if w.target and w.plan and w.plan.get("status") == "active":
                w.visited.add(w.target["id"])
            self._enter(w, "wandering_in_poi")

    def _wander(self, w: Walker) -> None:
        centre = self._spot(w.target)
        if w.wander_goal is None or distance(w.pos, w.wander_goal) < 0.2:
            angle, radius = (
                self.rng.uniform(-math.pi, math.pi),
                self.rng.uniform(0, self.config.wander_radius),
            )
            w.wander_goal = (centre[0] + radius * math.cos(angle), centre[1] + radius * math.sin(angle))
        w.heading = heading_to(w.pos, w.wander_goal, w.heading)
        w.pos = step(w.pos, w.wander_goal, 1.5 * self.config.turn_min)

    def _item_over(self, w: Walker) -> bool:
        current = (w.plan or {}).get("current") or {}
        plan_day = (w.plan or {}).get("day", self.day)
        return plan_day != self.day or self.time_of_day >= float(current.get("end", 0))

    def _enter(self, w: Walker, state: str, partner: str | None = None) -> None:
        w.state = state
        body = {"state": state, "location_name": w.location, "day": self.day, "time_of_day": self.time_of_day,
                "position": {"x": round(w.pos[0], 3), "y": 0.0, "z": round(w.pos[1], 3)}}  # fmt: skip
        if partner is not None:
            body["partner_id"] = partner  # lets a model that reads prompts ahead prepare the opening line
        self.client.report_state(w.id, body)
        self.report.state_reports += 1

    def _spot(self, poi: dict[str, Any] | None) -> Vec:
        if poi is None:
            return (0.0, 0.0)
        return (poi["position"]["x"], poi["position"]["z"])

    # --- meeting and talking ---
    def _free(self, w: Walker) -> bool:
        active = (w.plan or {}).get("status") == "active"
        return w.talk is None and w.state in CAN_TALK and active and self.minute >= w.cooldown_until

    def _meet(self) -> None:
        free = [w for w in self.walkers if self._free(w)]
        for i, a in enumerate(free):
            for b in free[i + 1 :]:
                if a.talk is None and b.talk is None and self._sees_either(a, b):
                    self._start(a, b)

    def _sees_either(self, a: Walker, b: Walker) -> bool:
        c = self.config
        if self.minute < self._pair_until.get(frozenset((a.id, b.id)), 0.0):
            return False
        if distance(a.pos, b.pos) > c.talk_distance or blocked(a.pos, b.pos, self.obstacles):
            return False
        return in_view(a.pos, a.heading, b.pos, c.view_angle_deg) or in_view(
            b.pos, b.heading, a.pos, c.view_angle_deg
        )

    def _start(self, a: Walker, b: Walker) -> None:
        # The one who saw the other speaks first (both face each other from now on).
        first, second = (a, b) if in_view(a.pos, a.heading, b.pos, self.config.view_angle_deg) else (b, a)
        self._talks += 1
        stream = bool(self.config.stream_every) and self._talks % self.config.stream_every == 0
        session = f"{self.run_id}-{self._talks:04d}-{first.id}-{second.id}"
        talk = Talk(session, (first, second), first.location or second.location, stream)
        for w, other in ((first, second), (second, first)):
            w.talk, w.leaving = talk, False
            w.heading = heading_to(w.pos, other.pos, w.heading)
            self._enter(w, "talking", other.id)

    def _converse(self, talk: Talk) -> None:
        for w in talk.walkers:
            if not w.leaving and self._item_over(w):
                w.leaving = True  # its next plan item calls: it walks off while still talking
                w.plan = self._plan_now(w)
                w.target = w.plan.get("target_poi") or w.target
            if w.leaving:
                w.pos = step(w.pos, self._spot(w.target), self.config.walk_m_per_min * self.config.turn_min)
        a, b = talk.walkers
        if distance(a.pos, b.pos) > self.config.end_distance:
            if talk.history:  # walked apart before a word was said: the server has no conversation to end
                self.client.end(talk.session_id, "distance", day=self.day, time_of_day=self.time_of_day)
            self._finish(talk, "distance")
            return
        speaker, listener = talk.walkers[len(talk.history) % 2], talk.walkers[1 - len(talk.history) % 2]
        request = {"agent_id": speaker.id, "target_id": listener.id, "session_id": talk.session_id,
                   "location_name": talk.location, "history": list(talk.history),
                   "time_of_day": self.time_of_day, "day": self.day}  # fmt: skip
        reply = self.client.turn_stream(request) if talk.stream else self.client.turn(request)
        self.report.turns += 1
        self.report.streamed_turns += int(talk.stream)
        talk.fallbacks += int(bool(reply.get("fallback")))
        for fix in reply.get("history_fixes") or []:  # the server's stored transcript wins
            talk.history[fix["index"]] = fix["line"]
        talk.history.append(f"{speaker.name}: {reply['dialogue']}")
        if reply["is_conversation_end"]:
            self._finish(talk, reply.get("end_reason") or "model")

    def _finish(self, talk: Talk, reason: str) -> None:
        a, b = talk.walkers
        if talk.history:  # a pair that parted before a word was said held no conversation
            self.report.end_reasons[reason] += 1
            self.report.fallbacks += talk.fallbacks
            self.report.conversations.append({"session_id": talk.session_id, "agents": [a.id, b.id],
                "turns": len(talk.history), "end_reason": reason, "streamed": talk.stream,
                "day": self.day, "time_of_day": self.time_of_day})  # fmt: skip
        for w in talk.walkers:
            w.talk = None
            w.cooldown_until = self.minute + self.config.cooldown_min
            self._enter(w, "cooldown")
        self._pair_rest(a, b)

    def _pair_rest(self, a: Walker, b: Walker) -> None:
        """The same pair does not start again until `pair_cooldown_min` has passed (they just talked)."""
        self._pair_until[frozenset((a.id, b.id))] = self.minute + self.config.pair_cooldown_min
