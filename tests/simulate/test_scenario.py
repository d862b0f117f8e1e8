"""The party scenario's counting, on a small fixture: what it reports must follow from what the API says."""

from __future__ import annotations

from typing import Any

from backend.simulate import scenario
from backend.simulate.variety import measure

PARTY = scenario.Party(
    host="aoi", poi="park", text="明日の19時に公園で花火", keywords=["花火", "fireworks"],
    question={"ja": "花火のこと知ってる？", "en": "Heard of the fireworks?"}, start=19.0,
)  # fmt: skip
AGENTS = [{"id": "aoi", "language": "ja"}, {"id": "ren", "language": "ja"}, {"id": "emma", "language": "en"},
          {"id": "hikari", "language": "ja"}]  # fmt: skip


class FakeClient:
    """Answers the few routes the scenario reads, from fixed data."""

    def __init__(self) -> None:
        self.memories = {"ren": ["蓮: 葵が花火をするって"], "emma": ["Aoi's fireworks at 7pm"], "hikari": []}
        self.answers = {"ren": "葵の花火のこと？聞いたよ", "emma": "No idea, sorry.", "hikari": "花火？"}
        self.people = {"aoi": ["ren", "emma"], "ren": ["aoi"], "emma": [], "hikari": ["nobody-else"]}
        self.plans = {
            "ren": [{"start": 18.0, "end": 21.0, "poi_id": "park"}],
            "emma": [{"start": 19.25, "end": 21.0, "poi_id": "park"}],  # arrives 15 minutes late: counts
            "hikari": [{"start": 19.0, "end": 21.0, "poi_id": "cafe"}],
        }
        self.states = {"ren": (2, "公園"), "emma": (2, "中央カフェ"), "hikari": (1, "公園")}
        self.asked: list[tuple[str, str]] = []

    def _send(self, method: str, path: str, body: Any = None, *, params: Any = None) -> Any:
        agent = path.split("/")[3] if path.startswith("/v1/agents/") else ""
        if path.endswith("/memories"):
            hits = [m for m in self.memories.get(agent, []) if params["q"].lower() in m.lower()]
            return {"total": len(hits)}
        if path.endswith("/interview"):
            self.asked.append((agent, body["question"]))
            return {"answer": self.answers[agent], "fallback": False}
        if path.endswith("/people"):
            return {"people": [{"other_id": other} for other in self.people[agent]]}
        if path.endswith("/told"):
            return {"told": []}
        if path == "/v1/conversations":
            return {"conversations": [{"session_id": "a"}, {"session_id": "b"}]}
        raise AssertionError(path)

    def plan(self, agent_id: str, day: int) -> dict[str, Any]:
        return {"items": self.plans[agent_id]}

    def agent(self, agent_id: str) -> dict[str, Any]:
        day, place = self.states[agent_id]
        return {"state_day": day, "location_name": place}

    def conversation(self, session_id: str) -> dict[str, Any]:
        lines = {"a": ["おはよう", "元気？", "おはよう"], "b": ["おはよう", "またね"]}[session_id]
        day = {"a": 1, "b": 1}[session_id]
        return {"turns": [{"dialogue": line, "day": day} for line in lines]}


def test_knowledge_by_memory_and_by_interview() -> None:
    client = FakeClient()
    snap = scenario.knowledge(client, AGENTS, PARTY, interview=True)
    assert snap.knew_by_memory == ["ren", "emma"]  # the host is not counted; keywords in either language
    assert snap.knew_by_interview == ["ren", "hikari"]  # emma's answer does not name it
    assert ("emma", "Heard of the fireworks?") in client.asked  # asked in the agent's own language
    assert scenario.knowledge(client, AGENTS, PARTY, interview=False).knew_by_interview is None


def test_density_counts_directed_pairs_within_the_town() -> None:
    # aoi->ren, aoi->emma, ren->aoi: 3 of 4*3 directed pairs ("nobody-else" is not in the town).
    assert scenario.density(FakeClient(), AGENTS) == 3 / 12


def test_plans_and_presence_at_the_party() -> None:
    client = FakeClient()
    assert scenario.plans_hold(client, ["ren", "emma", "hikari"], PARTY) == ["ren", "emma"]
    assert scenario.at_place(client, ["ren", "emma", "hikari"], "公園", PARTY) == ["ren"]  # hikari's is day 1


def test_line_variety() -> None:
    variety = measure(FakeClient(), AGENTS, [])
    assert variety["repeated_in_a_conversation"] == 1
    # Day 1: 5 lines, "おはよう" three times.
    assert variety["days"][1] == {"lines": 5, "repeated_share": 3 / 5}
    assert variety["sentences"]["days"][1]["repeated_share"] == 2 / 5


def test_render_states_the_papers_figures() -> None:
    report = {
        "agents": 4, "host": "aoi", "place": "公園", "interview": True,
        "knew_day1": {"knew_by_memory": ["ren"], "knew_by_interview": ["ren"]},
        "knew_day2": {"knew_by_memory": ["ren", "emma"], "knew_by_interview": ["ren"]},
        "invited": ["ren", "emma"], "heard": ["ren", "emma"], "plans_hold": ["ren"], "at_place": ["ren"],
        "density": {"start": 0.25, "end": 0.5}, "turns": 10, "fallbacks": 0,
        "model": {"calls_per_agent_day": 3.0, "prompt_tokens_per_agent_day": 900.0, "by_purpose": {}},
        "variety": {"conversations": 2, "repeated_in_a_conversation": 0, "days": {1: {"lines": 5, "repeated_share": 0.0}}},
    }  # fmt: skip
    text = scenario.render(report)
    assert "by memory 2/3 = 67%" in text and "(paper: 52%)" in text
    assert "their day-2 plan holds it: 1/2 = 50%" in text and "0.250 -> 0.500" in text
