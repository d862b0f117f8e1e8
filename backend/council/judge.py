"""LLM-as-a-judge: one model scores content on named criteria, in one hierarchical step.

It is the council's contrast (one judge instead of peers deliberating) and Machi's evaluation tool: it scores
any text, or a stored conversation for staying in character, coherence and use of memory.

Failure: the reply is validated (every requested criterion present, every score an integer 1-10, overall
1-10) and re-asked once by the standard wrapper. If the model still gives nothing usable the judge raises
`JudgeUnavailable` (503, code `llm_error`). This is the one place Machi answers a model failure with a 5xx:
the judge is an evaluation tool, never on Unity's live path, and an invented score would be worse than none.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from backend.council import prompts, repo
from backend.council.schemas import JudgeReply, JudgeResult, judge_reply_for
from backend.errors import InvalidInput, LLMError, NotFound
from backend.gametime import utcnow
from backend.llm.base import LLM, PRIORITY_BACKGROUND, GenerateOptions
from backend.text import is_japanese
from backend.world.models import Agent

if TYPE_CHECKING:
    from backend.storage.db import Engine

DEFAULT_CRITERIA = ("in_character", "coherence", "helpfulness")
CONVERSATION_CRITERIA = ("in_character", "coherence", "memory_use")
#: What each built-in criterion is called in a rationale: people read these, not the ids.
CRITERION_LABELS: dict[str, dict[str, str]] = {
    "in_character": {"ja": "キャラクターらしさ", "en": "staying in character"},
    "coherence": {"ja": "話の一貫性", "en": "coherence"},
    "helpfulness": {"ja": "役立ち度", "en": "helpfulness"},
    "memory_use": {"ja": "記憶の活かし方", "en": "use of memories"},
    "overall": {"ja": "全体", "en": "overall"},
}


def criterion_label(name: str, language: str) -> str:
    """A criterion as a person reads it in `language` (a caller's own criterion names itself)."""
    return CRITERION_LABELS.get(name, {}).get(prompts.lang_key(language), name.replace("_", " "))


#: Memories shown to the judge per speaker, so it can tell whether they were used.
JUDGE_MEMORIES = 6
MAX_CONTENT_CHARS = 20_000


class JudgeUnavailable(LLMError):
    """The judge model gave no valid verdict even after a re-ask (see the module docstring)."""

    code = "llm_error"


async def judge_content(
    llm: LLM,
    content: str,
    *,
    criteria: list[str] | None = None,
    context: str | None = None,
    language: str | None = None,
    world_id: str = "default",
    session_id: str | None = None,
    facts: dict[str, Any] | None = None,
) -> JudgeResult:
    """Score `content` on each criterion (1-10).

    Args:
        llm: the (wrapped) model; the call is traced with stage `judge`.
        content: the text to judge.
        criteria: criterion names (default in_character, coherence, helpfulness).
        context: what the judge should know (personas, the situation), or None.
        language: ja or en; default guessed from the content.
        world_id, session_id: for the trace.
        facts: extra structured facts for the scripted engine.

    Returns:
        A JudgeResult with a score for every criterion, in the order asked.

    Raises:
        JudgeUnavailable: the model failed or answered invalidly twice.
    """
    wanted = list(criteria or DEFAULT_CRITERIA)
    language = prompts.lang_key(language or ("ja" if is_japanese(content) else "en"))
    labels = {name: criterion_label(name, language) for name in wanted}
    messages = prompts.judge_messages(content, wanted, context, language, labels=labels)
    options = GenerateOptions(
        purpose="judge",
        labels={"stage": "judge"},
        world_id=world_id,
        session_id=session_id,
        language=language,
        priority=PRIORITY_BACKGROUND,
        facts={
            "content": content,
            "criteria": wanted,
            "criterion_labels": labels,
            "context": context,
            "language": language,
            **(facts or {}),
        },
    )
    try:
        reply = await llm.generate_json(messages, judge_reply_for(wanted), options=options)
    except LLMError as exc:
        raise JudgeUnavailable(
            f"the judge model gave no valid verdict: {exc.message}"[:500], details={"cause": exc.code}
        ) from exc
    return _result(reply, wanted, session_id)


def _result(reply: JudgeReply, wanted: list[str], session_id: str | None) -> JudgeResult:
    by_name = {item.criterion: item for item in reply.scores}
    return JudgeResult(
        scores={name: by_name[name].score for name in wanted},
        overall=round(reply.overall, 1),
        rationale=reply.rationale,
        recommended_action=reply.recommended_action,
        reasons={name: by_name[name].reason for name in wanted if by_name[name].reason},
        session_id=session_id,
    )


async def judge_conversation(
    engine: Engine, llm: LLM, world_id: str, session_id: str, *, memory: Any = None
) -> JudgeResult:
    """Score a stored conversation (in character, coherence, memory use) and keep the verdict on it.

    Raises:
        NotFound: no such conversation in the world.
        InvalidInput: the conversation has no turns yet.
        JudgeUnavailable: as `judge_content`.
    """
    found = await asyncio.to_thread(repo.conversation, engine, world_id, session_id)
    if found is None:
        raise NotFound(f"no conversation {session_id!r} in world {world_id!r}")
    conversation, turns, agents = found
    names = {agent_id: agent.name for agent_id, agent in agents.items()}
    # The stored transcript also holds the lines Unity sent as history; the turns are the fallback.
    turn_lines = [f"{names.get(t.speaker_id, t.speaker_id)}: {t.dialogue}" for t in turns]
    lines = list(conversation.transcript or []) or turn_lines
    if not lines:
        raise InvalidInput(
            f"conversation {session_id!r} has no turns to judge", details={"field": "session_id"}
        )
    content = "\n".join(lines)[-MAX_CONTENT_CHARS:]
    language = conversation.language or next((a.language for a in agents.values()), None)
    language = language or ("ja" if is_japanese(content) else "en")
    speakers = [_speaker(agent, memory, world_id) for agent in agents.values()]
    context = "\n".join(_speaker_context(s, language) for s in speakers)
    result = await judge_content(
        llm,
        content,
        criteria=list(CONVERSATION_CRITERIA),
        context=context,
        language=language,
        world_id=world_id,
        session_id=session_id,
        facts={"transcript": lines, "speakers": speakers},
    )
    verdict = {
        **result.model_dump(),
        "criteria": list(CONVERSATION_CRITERIA),
        "judged_at": utcnow().isoformat(),
    }
    await asyncio.to_thread(repo.keep_verdict, engine, world_id, session_id, verdict)
    return result


def _speaker(agent: Agent, memory: Any, world_id: str) -> dict[str, Any]:
    memories: list[str] = []
    if memory is not None:
        memories = [m.content for m in memory.recent(world_id, agent.id, limit=JUDGE_MEMORIES)]
    return {
        "id": agent.id,
        "name": agent.name,
        "traits": list(agent.traits),
        "backstory": agent.backstory,
        "speaking_style": agent.speaking_style,
        "memories": memories,
    }


def _speaker_context(speaker: dict[str, Any], language: str) -> str:
    persona = prompts.persona_text(speaker, language)
    label = "記憶" if prompts.lang_key(language) == "ja" else "memories"
    remembered = "; ".join(speaker["memories"])
    return f"- {speaker['name']}: {persona}" + (f"\n  {label}: {remembered}" if remembered else "")
