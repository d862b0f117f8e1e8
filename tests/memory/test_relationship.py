"""Relationship density from person memory: ordered pairs of a world's agents, nothing else."""

from __future__ import annotations

import pytest
from sqlmodel import Session

from backend.config import Settings
from backend.memory.models import PersonMemory
from backend.memory.relationship import Density, relationship_density
from backend.storage.db import create_db_engine, init_db
from backend.world.models import Agent


def test_density_counts_ordered_pairs_of_the_worlds_agents(settings: Settings) -> None:
    engine = create_db_engine(settings.database_url)
    init_db(engine)
    with Session(engine) as session:
        for agent_id in ("a", "b", "c"):
            session.add(Agent(id=agent_id, name=agent_id))
        session.add(Agent(world_id="other", id="a", name="a"))
        knows = [("a", "b"), ("b", "a"), ("a", "c"), ("a", "player-1"), ("c", "gone"), ("c", "c")]
        for agent_id, other_id in knows:
            session.add(PersonMemory(agent_id=agent_id, other_id=other_id, other_name=other_id))
        session.add(PersonMemory(world_id="other", agent_id="a", other_id="b", other_name="b"))
        session.commit()
        found = relationship_density(session, "default")
        assert found == Density(agents=3, pairs=3)  # a->b, b->a, a->c: not a player, a deleted agent, oneself
        assert found.value == pytest.approx(3 / 6)
        assert relationship_density(session, "other") == Density(agents=1, pairs=0)
        assert relationship_density(session, "other").value == 0.0
        assert relationship_density(session, "empty").value == 0.0
