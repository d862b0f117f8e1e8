"""A concluded council moves each member's emotion (issue 6: re-evaluated after a council concludes)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlmodel import Session

from backend.scripted import ScriptedLLM
from backend.world.models import Agent
from tests.conftest import drain


def test_members_feel_the_outcome(client: TestClient, scripted: ScriptedLLM) -> None:
    with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
        for agent_id, role in (("yukino", "moderator"), ("natsumi", "member"), ("haruka", "member")):
            session.add(Agent(id=agent_id, name=agent_id, council_role=role, traits=["慎重"]))
        session.commit()
    accepted = client.post("/v1/council", json={"title": "広場に屋台を出す", "rounds": 1})
    assert accepted.status_code == 202
    drain(client)
    assert client.get(f"/v1/council/{accepted.json()['id']}").json()["status"] == "done"
    causes = [call.options.facts["cause"] for call in scripted.calls("emotion")]
    assert sorted(call.options.agent_id for call in scripted.calls("emotion")) == [
        "haruka",
        "natsumi",
        "yukino",
    ]
    assert all("広場に屋台を出す" in cause for cause in causes)
    for agent_id in ("yukino", "natsumi", "haruka"):
        assert client.get(f"/v1/agents/{agent_id}/emotion").json()["evaluated"] is True
