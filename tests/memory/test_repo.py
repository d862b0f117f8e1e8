"""MemoryRepo's reads of one conversation's memories (what a conversation's aftermath asks after a crash)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.memory.agents import add_agent
from tests.memory.helpers import add, call, service


def test_a_conversations_observations_and_reflection(client: TestClient) -> None:
    add_agent(client, "aoi")
    add_agent(client, "hikari", name="ひかり")
    first = add(client, "ひかり: おはよう", session_id="s1")
    add(client, "ひかり: 雨だね", agent="hikari", session_id="s1")  # the partner's, not aoi's
    add(client, "星を見た", session_id=None)
    second = add(client, "ひかり: またね", session_id="s1", day=2)
    repo, aoi = service(client).repo, ("default", "aoi")
    assert repo.has_observation(aoi, "s1", "ひかり: おはよう")
    assert not repo.has_observation(aoi, "s1", "ひかり: 雨だね") and not repo.has_observation(
        aoi, "s2", "星を見た"
    )
    assert repo.observation_ids(aoi, "s1") == [first.id, second.id]
    assert repo.conversation_reflection(aoi, "s1") is None
    made = call(
        client, service(client).reflector.store_conversation, aoi, "ひかりと話した", 6, [first.id or 0], 1, 9.0,
        session_id="s1",
    )  # fmt: skip
    found = repo.conversation_reflection(aoi, "s1")
    assert found is not None and found.id == made.id and found.evidence_ids == [first.id]
    assert repo.observation_ids(aoi, "s1") == [first.id, second.id]  # the reflection is not an observation
