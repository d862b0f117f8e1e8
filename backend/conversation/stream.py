"""The streamed turn: `delta` events as the model writes the dialogue, then one `reply` event.

Invariant for Unity: the `delta` texts (since the last `reset`, if any) concatenate to the final reply's
`dialogue`. Deltas are cleaned as they stream (text.StreamCleaner: control characters and terminal escapes
never reach a speech bubble, not even for a moment, and line breaks become spaces), exactly as the final
dialogue is. A server-side change
that only appends (a goodbye added because the partner said goodbye) is sent as one more delta. A change
that rewrites what was already shown (the model failed mid-stream and a fallback line replaces it, or the
reply was cut) is sent as `reset` followed by the whole final line.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from backend.conversation.extract import FieldExtractor
from backend.conversation.schemas import TurnReply
from backend.conversation.service import ConversationService, PreparedTurn
from backend.errors import LLMError, LLMReplyError, MachiError, error_body
from backend.llm.base import Completion, json_schema_for
from backend.llm.retry import checked_reply, reask
from backend.llm.trace import mark_invalid_reply
from backend.logs import reason
from backend.text import StreamCleaner

log = logging.getLogger(__name__)


def sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def turn_events(service: ConversationService, prepared: PreparedTurn) -> AsyncIterator[str]:
    """The SSE body of a streamed turn. Storage and retry-safety are those of the plain turn."""
    if prepared.stored is not None:
        yield sse("delta", {"text": prepared.stored["dialogue"]})
        yield sse("reply", prepared.stored)
        return
    shown: list[str] = []
    reply: TurnReply | None = None
    try:
        async for text in _dialogue_pieces(service, prepared):
            if isinstance(text, TurnReply):
                reply = text
            else:
                shown.append(text)
                yield sse("delta", {"text": text})
        stored = await service.finish(prepared, reply)
    except MachiError as exc:
        yield sse("error", error_body(exc.code, exc.message, exc.details))
        return
    except Exception:  # noqa: BLE001 - the stream has begun; an error event is all Unity can still get
        log.exception("streamed turn %s failed", prepared.request.session_id)
        yield sse("error", error_body("internal_error", "the turn could not be stored; retry it"))
        return
    sent, final = "".join(shown), stored["dialogue"]
    if final.startswith(sent):
        if final != sent:
            yield sse("delta", {"text": final[len(sent) :]})
    else:
        yield sse("reset", {})
        yield sse("delta", {"text": final})
    yield sse("reply", stored)


async def _dialogue_pieces(service: ConversationService, prepared: PreparedTurn) -> AsyncIterator[Any]:
    """Dialogue text pieces while the model streams, then the parsed TurnReply (nothing on failure)."""
    messages, options = service.messages(prepared), service.options(prepared)
    extractor, cleaner, raw = FieldExtractor("dialogue"), StreamCleaner(single_line=True), []
    usage = Completion("")
    loop = asyncio.get_running_loop()
    stop_at = loop.time() + service.remaining(prepared)
    schema = json_schema_for(service.reply_schema(prepared))  # cached per schema class
    pieces = service.llm.stream(messages, options=options, schema=schema, usage=usage)
    iterator = pieces.__aiter__()
    try:
        while True:
            piece = await asyncio.wait_for(iterator.__anext__(), timeout=max(0.0, stop_at - loop.time()))
            raw.append(piece)
            text = cleaner.feed(extractor.feed(piece))
            if text:
                yield text
    except StopAsyncIteration:
        pass
    except (LLMError, TimeoutError) as exc:
        log.warning("streamed turn %s falls back: %s", prepared.request.session_id, reason(exc))
        return
    except Exception:  # noqa: BLE001 - a provider bug still gets Unity a fallback line
        log.exception("streamed turn %s: unexpected model failure", prepared.request.session_id)
        return
    finally:
        await _close(iterator)
    reply = await _parse_or_reask(service, prepared, "".join(raw), usage, stop_at)
    if reply is not None:
        yield reply


async def _parse_or_reask(
    service: ConversationService, prepared: PreparedTurn, text: str, usage: Completion, stop_at: float
) -> TurnReply | None:
    """Repair, validate and echo-check the streamed reply; if unusable, re-ask once (not streamed) within
    the deadline. One re-ask in all, as for the plain turn; then the turn falls back."""
    messages, options = service.messages(prepared), service.options(prepared)
    schema = service.reply_schema(prepared)
    try:
        return checked_reply(text, schema, messages, options)
    except LLMReplyError as exc:
        await mark_invalid_reply(service.llm, usage.trace_id, exc.message)
        log.info("streamed turn %s: reply unusable (%s); re-asking", prepared.request.session_id, exc.message)
        reasked, reask_options = reask(messages, text, exc.message, options)
    budget = stop_at - asyncio.get_running_loop().time()
    if budget <= 0:
        return None
    try:
        call = service.llm.complete(reasked, options=reask_options, schema=json_schema_for(schema))
        completion = await asyncio.wait_for(call, timeout=budget)
    except (LLMError, TimeoutError) as again:
        log.warning(
            "streamed turn %s falls back after re-ask: %s", prepared.request.session_id, reason(again)
        )
        return None
    try:
        return checked_reply(completion.text, schema, messages, options)
    except LLMReplyError as again:
        await mark_invalid_reply(service.llm, completion.trace_id, again.message)
        log.warning(
            "streamed turn %s falls back after re-ask: %s", prepared.request.session_id, reason(again)
        )
        return None


async def _close(iterator: Any) -> None:
    close = getattr(iterator, "aclose", None)
    if close is not None:
        try:
            await close()
        except Exception:  # noqa: BLE001 - closing a failed stream must not mask the turn's outcome
            log.debug("closing the model stream failed", exc_info=True)
