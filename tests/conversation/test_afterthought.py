"""One end-of-conversation call per participant: the reflection, person memory and the final feeling, each
stored exactly once across a crash and a rerun."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session, delete, select

from backend.emotion.models import EmotionRecord
from backend.llm.base import json_schema_for
from backend.memory.afterthought import afterthought_for
from backend.memory.models import Memory, PersonMemory
from backend.scripted import ScriptedLLM
from tests.conftest import drain
from tests.conversation.helpers import add_agents, rows, turn


def _converse(client: TestClient, session_id: str = "s-a", *, added: bool = False) -> None:
    if not added:
        add_agents(client)
    first = client.post("/v1/conversation/turn", json=turn("aoi", "hikari", session_id, [])).json()
    history = [f"葵: {first['dialogue']}"]
    client.post("/v1/conversation/turn", json=turn("hikari", "aoi", session_id, history))
    client.post("/v1/conversation/end", json={"session_id": session_id, "reason": "distance"})
    drain(client)


def _rerun(client: TestClient, agent_id: str, session_id: str = "s-a") -> bool:
    app: Any = client.app
    after = app.state.conversation.after
    made: bool = client.portal.call(after.reflect_participant, "default", session_id, agent_id)  # type: ignore[union-attr]
    drain(client)
    return made


def _afterthoughts(scripted: ScriptedLLM) -> list[Any]:
    return [c for c in scripted.calls("reflection") if c.options.labels.get("stage") == "afterthought"]


def test_the_schema_bounds_the_summary_and_lists_the_wheel() -> None:
    schema = json_schema_for(afterthought_for("ja", 300))
    assert schema["title"] == "Afterthought"
    assert schema["properties"]["person_summary"]["maxLength"] == 300
    feeling = schema["properties"]["feeling"]
    assert "平静" in str(feeling) and "calm" not in str(feeling)
    assert "enum" not in str(json_schema_for(afterthought_for(None, 300))["properties"]["feeling"])


def test_one_call_per_participant_fills_both_stores_and_both_feelings(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    _converse(client)
    calls = _afterthoughts(scripted)
    assert sorted(c.options.agent_id for c in calls) == ["aoi", "hikari"]
    assert scripted.calls("person") == [] and scripted.calls("emotion") == []
    prompt = calls[0].messages[0]["content"]
    assert "- person_summary:" in prompt and "400" in prompt and "- feeling:" in prompt and "{" not in prompt
    for agent in ("aoi", "hikari"):
        reflection = rows(client, Memory, agent_id=agent, type="reflection")
        observations = rows(client, Memory, agent_id=agent, type="observation")
        assert len(reflection) == 1 and reflection[0].origin == "conversation"
        assert reflection[0].evidence_ids == sorted(m.id for m in observations)
        assert {m.importance for m in observations} == {reflection[0].importance}
        person = rows(client, PersonMemory, agent_id=agent)
        assert len(person) == 1 and person[0].summary and person[0].interaction_count == 1
        assert person[0].traits_noticed and person[0].last_session_id == "s-a"
        # The listener who did not speak last gets its feeling too, from its own reply.
        ended = [r for r in rows(client, EmotionRecord, agent_id=agent) if "会話が終わった" in r.cause]
        assert len(ended) == 1


def test_a_rerun_after_both_halves_asks_nothing_and_writes_nothing(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    _converse(client)
    before = len(scripted.history)
    assert _rerun(client, "aoi") is True
    assert len(scripted.history) == before
    assert len(rows(client, Memory, agent_id="aoi", type="reflection")) == 1
    assert rows(client, PersonMemory, agent_id="aoi")[0].interaction_count == 1


def test_a_crash_after_the_reflection_asks_again_and_writes_person_memory_only(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    _converse(client)
    app: Any = client.app
    with Session(app.state.engine) as session:  # as if the process died before person memory was saved
        session.exec(delete(PersonMemory).where(PersonMemory.agent_id == "aoi"))  # type: ignore[arg-type]
        session.commit()
    before = len(_afterthoughts(scripted))
    assert _rerun(client, "aoi") is True
    assert len(_afterthoughts(scripted)) == before + 1
    assert len(rows(client, Memory, agent_id="aoi", type="reflection")) == 1
    person = rows(client, PersonMemory, agent_id="aoi")
    assert len(person) == 1 and person[0].interaction_count == 1 and person[0].summary


def test_a_failed_call_records_the_meeting_and_the_retry_writes_the_reflection_once(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    from backend.errors import LLMUnavailable

    add_agents(client)
    client.post("/v1/conversation/turn", json=turn("aoi", "hikari", "s-f", []))
    drain(client)
    scripted.enqueue(*[LLMUnavailable("model down")] * 6, purpose="reflection")
    client.post("/v1/conversation/end", json={"session_id": "s-f", "reason": "distance"})
    drain(client)
    assert rows(client, Memory, agent_id="aoi", type="reflection") == []
    person = rows(client, PersonMemory, agent_id="aoi")
    assert person[0].interaction_count == 1 and "model down" in (person[0].last_error or "")
    assert _rerun(client, "aoi", "s-f") is True  # the job's retry: the model is back
    assert len(rows(client, Memory, agent_id="aoi", type="reflection")) == 1
    again = rows(client, PersonMemory, agent_id="aoi")[0]
    assert again.interaction_count == 1  # the meeting is not counted twice


def test_past_the_exchange_count_the_summary_counts_as_recompressed_without_a_call(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    app: Any = client.app
    book = app.state.memory.people
    lines = [f"{'ひかり' if i % 2 else '葵'}: 話題その{i}について話そう" for i in range(21)]
    add_agents(client)

    def fold(session_id: str, count: int) -> PersonMemory:
        learned = (["話好き"], [], f"話好きな友人({session_id})。")
        return client.portal.call(  # type: ignore[union-attr, no-any-return]
            lambda: book.fold(
                ("default", "aoi"),
                other_id="hikari",
                other_name="ひかり",
                transcript=lines[:count],
                session_id=session_id,
                day=1,
                time_of_day=9.0,
                language="ja",
                learned=learned,
            )  # fmt: skip
        )

    assert fold("s1", 12).exchanges_since_compress == 12
    row = fold("s2", 9)  # 21 > 20
    assert row.exchanges_since_compress == 0 and row.compressions == 1 and row.summary == "話好きな友人(s2)。"
    assert fold("s2", 9).interaction_count == 2  # the same session folded twice counts once
    assert scripted.calls("person") == []
    with Session(app.state.engine) as session:
        assert len(session.exec(select(PersonMemory)).all()) == 1


def test_the_reflection_is_placed_where_the_conversation_was_not_where_the_agent_last_reported(
    client: TestClient, scripted: ScriptedLLM
) -> None:
    add_agents(client)
    report = {"state": "wandering_in_poi", "location_name": "図書館", "day": 1, "time_of_day": 14.0}
    assert client.post("/v1/agents/aoi/state", json=report).is_success
    _converse(client, added=True)  # its turns are at 中央カフェ
    [aoi_call] = [c for c in _afterthoughts(scripted) if c.options.agent_id == "aoi"]
    prompt = aoi_call.messages[-1]["content"]
    assert "14:30 (中央カフェ)" in prompt and "(図書館)" not in prompt
    [reflection] = rows(client, Memory, agent_id="aoi", type="reflection")
    assert reflection.location_name == "中央カフェ"
