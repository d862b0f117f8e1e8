"""storage/rows.py: `build` makes the same objects as the models' constructors, and they insert and track."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session, select

from backend.jobs.models import Job
from backend.llm.models import LLMCall
from backend.memory.models import Memory
from backend.storage.db import create_db_engine, init_db
from backend.storage.rows import build, insert_all

MEMORY = {
    "world_id": "default",
    "agent_id": "aoi",
    "type": "observation",
    "content": "カフェでひかりと話した",
    "importance": 4,
    "importance_source": "provisional",
    "tags": ["カフェ", "ひかり"],
    "session_id": "s-1",
    "created_day": 2,
    "created_time_of_day": 14.5,
    "last_accessed_day": 2,
    "last_accessed_time_of_day": 14.5,
}
STAMPS = {"created_at", "updated_at", "last_accessed_at", "run_after"}


def dump(obj: Memory | Job | LLMCall) -> dict[str, object]:
    return {k: v for k, v in obj.model_dump().items() if k not in STAMPS}


def test_build_equals_the_constructor_defaults_included() -> None:
    assert dump(build(Memory, MEMORY)) == dump(Memory(**MEMORY))
    job = {"world_id": "default", "kind": "memory.rate", "payload": {"ids": [1]}, "dedupe_key": None}
    assert dump(build(Job, job)) == dump(Job(**job))
    call = {"purpose": "dialogue", "provider": "scripted", "model": "m", "messages": [], "ok": True}
    assert dump(build(LLMCall, call)) == dump(LLMCall(**call))
    built = build(Memory, MEMORY)
    assert built.evidence_ids == [] and built.evidence_ids is not build(Memory, MEMORY).evidence_ids
    assert built.model_fields_set == set(MEMORY)


def test_built_objects_insert_and_later_changes_are_saved(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'rows.db'}")
    init_db(engine)
    core, orm = build(Memory, MEMORY), build(Memory, {**MEMORY, "content": "図書館で本を読んだ"})
    with Session(engine, expire_on_commit=False) as session:
        insert_all(session, [core])
        session.add(orm)
        session.commit()
    assert core.id is not None and orm.id is not None
    with Session(engine) as session:
        orm.importance = 9  # a change to a built object is tracked like any other
        session.add(orm)
        session.commit()
    with Session(engine) as session:
        stored = {row.content: row for row in session.exec(select(Memory))}
    assert stored["カフェでひかりと話した"].tags == ["カフェ", "ひかり"]
    assert stored["図書館で本を読んだ"].importance == 9
