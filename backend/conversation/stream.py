"""The streamed turn: `delta` events as the model writes the dialogue, then one `reply` event.

Invariant for Unity: the `delta` texts (since the last `reset`, if any) concatenate to the final reply's
`dialogue`. Deltas are cleaned as they stream (text.StreamCleaner: control characters and terminal escapes
never reach a speech bubble, not even for a moment, and line breaks become spaces), exactly as the final
dialogue is. A server-side change
that only appends (a goodbye added because the partner said goodbye) is sent as one more delta. A change
that rewrites what was already shown (the model failed mid-stream and a fallback line replaces it, or the
reply was cut) is sent as `reset` followed by the whole final line.

Events are (name, data) pairs; api/conversation.py writes them as server-sent events, and turns an error
raised once the stream has begun into an `error` event (errors are mapped in api/, not here).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from backend.conversation.extract import FieldExtractor
from backend.conversation.schemas import TurnReply
from backend.conversation.service import ConversationService, PreparedTurn
from backend.errors import LLMError
from backend.llm.base import Completion, GenerateOptions, Message, json_schema_for
from backend.llm.retry import repaired
from backend.logs import reason
from backend.text import StreamCleaner

log = logging.getLogger(__name__)


#: A stream event: its name (`delta`, `reset`, `reply`) and its data.
Event = tuple[str, dict[str, Any]]


async def turn_events(service: ConversationService, prepared: PreparedTurn) -> AsyncIterator[Event]:
    """The events of a streamed turn. Storage and retry-safety are those of the plain turn.

    Raises:
        MachiError: the turn could not be stored (after some deltas may have been sent).
    """
    if prepared.stored is not None:
        yield "delta", {"text": prepared.stored["dialogue"]}
        yield "reply", prepared.stored
        return
    shown: list[str] = []
    reply: TurnReply | None = prepared.forced
    pieces = _dialogue_pieces(service, prepared) if prepared.forced is None else _nothing()
    if prepared.ctx is not None and service.stream_check is not None:
        # Every line is checked as it is said (shown), among characters too: a sentence at a time.
        pieces = _checked(pieces, service.stream_check)
    async for text in pieces:
        if isinstance(text, TurnReply):
            reply = text
        else:
            shown.append(text)
            yield "delta", {"text": text}
    stored = await service.finish(prepared, reply)
    sent, final = "".join(shown), stored["dialogue"]
    if final.startswith(sent):
        if final != sent:
            yield "delta", {"text": final[len(sent) :]}
    else:
        yield "reset", {}
        yield "delta", {"text": final}
    yield "reply", stored


#: Where a streamed line may be shown up to (a sentence checked whole).
_SENTENCE_END = "。！？!?…."


async def _checked(pieces: AsyncIterator[Any], may_show: Callable[[str], bool]) -> AsyncIterator[Any]:
    """A streamed line: dialogue shown a whole sentence at a time, each checked with the
    line so far (the word list) first; from a sentence that fails, nothing more is shown, and the stored
    reply (a deflection, moderation having held the line back) replaces what was shown with a `reset`."""
    shown, pending, stopped = "", "", False
    async for piece in pieces:
        if not isinstance(piece, str):
            yield piece
            continue
        pending += piece
        cut = max(pending.rfind(mark) for mark in _SENTENCE_END)
        if stopped or cut < 0:
            continue
        if not may_show(shown + pending[: cut + 1]):
            stopped = True
            continue
        shown, sentence, pending = shown + pending[: cut + 1], pending[: cut + 1], pending[cut + 1 :]
        yield sentence


async def _nothing() -> AsyncIterator[Any]:
    """No pieces: a reply decided without the model (a deflection) is sent whole when it is stored."""
    return
    yield


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
    """The streamed reply, checked as the plain turn's is (llm/retry.py `repaired`): if unusable, re-asked
    once (not streamed) within the deadline; then the turn falls back."""
    messages, options = service.messages(prepared), service.options(prepared)
    schema = service.reply_schema(prepared)
    loop = asyncio.get_running_loop()

    async def ask(conversation: list[Message], options: GenerateOptions) -> Completion:
        budget = stop_at - loop.time()
        if budget <= 0:
            raise TimeoutError("no time left for a re-ask")
        call = service.llm.complete(conversation, options=options, schema=json_schema_for(schema))
        return await asyncio.wait_for(call, timeout=budget)

    first = Completion(text, trace_id=usage.trace_id)
    try:
        return await repaired(ask, messages, schema, options, tracer=service.llm, first=first)
    except (LLMError, TimeoutError) as exc:
        log.warning("streamed turn %s falls back after re-ask: %s", prepared.request.session_id, reason(exc))
        return None


async def _close(iterator: Any) -> None:
    close = getattr(iterator, "aclose", None)
    if close is not None:
        try:
            await close()
        except Exception:  # noqa: BLE001 - closing a failed stream must not mask the turn's outcome
            log.debug("closing the model stream failed", exc_info=True)
