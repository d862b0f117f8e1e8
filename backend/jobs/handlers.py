"""Which handler runs each job kind: wired once in the app's lifespan."""

from __future__ import annotations

from typing import Any

from backend.conversation import jobs as conversation_jobs
from backend.conversation.aftermath import Aftermath
from backend.memory import jobs as memory_jobs


def install(state: Any) -> None:
    """Register every kind's handler on `state.jobs`, using the services on `state` (app.state)."""
    runner, memory = state.jobs, state.memory

    runner.register(memory_jobs.RATE, memory.run_rating, merging=True)
    after = Aftermath(
        engine=state.engine,
        memory=memory,
        tasks=state.tasks,
        emotion=getattr(state, "emotion", None),
        events=getattr(state, "events", None),
    )
    conversation_jobs.register(runner, after)
