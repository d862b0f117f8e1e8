"""The one re-ask after an unusable reply, made so that a small model does not make the same reply again.

- What was wrong is said in one short sentence (`REASK`), without the refused text: neither the refused reply
  nor a quote of it (the partner's line it copied, a placeholder) is put back into the prompt, since a small
  model shown a copy copies it again.
- The re-ask samples hotter (REASK_HEAT), and after an echo it bans the openings of the refused text (and of
  the partner's line it copied) through `GenerateOptions.banned_openings`: llama.cpp in process turns them
  into a logit bias (`llamacpp.logit_bias`); Ollama has no logit bias, and an OpenAI-compatible server's
  token ids are unknown to the client, so those two only sample hotter.
- Nothing of the instruction may come back as a reply: `leaks_instruction` finds its wording, or a
  paraphrase of "your previous reply could not be used" in English or Japanese, in a reply, and the echo
  check (llm/echo.py) refuses it, for turns and interviews alike.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from backend.llm.base import GenerateOptions, Message

#: A re-ask samples this much hotter than the call it repeats: the same sampling tends to the same reply.
REASK_HEAT = 0.3
#: The re-ask, one sentence: `{reason}` is the refusal without its quotes (see `reason_of`).
REASK = "Your last reply was not used because {reason}."
#: How an echo refusal begins (llm/retry.py `checked_reply`); the re-ask says it as "its <field> ...".
ECHO_PREFIX = "the reply echoes the prompt: "
#: Openings banned on a re-ask, and the characters kept of each (the provider bans its first token).
MAX_BANNED = 4
OPENING_CHARS = 40
#: Characters of a refusal's reason the re-ask keeps.
MAX_REASON_CHARS = 300

_QUOTED = re.compile(r"\s*\((['\"]).*?\1\)|\s*(?<!\w)(['\"])(?:(?!\2).){8,}?\2(?!\w)")
#: The instruction's wording and its paraphrases ("Your previous reply could not be used", 前の返事は使えません).
_LEAKS = re.compile(
    r"\b(?:previous|last|earlier|prior|former)\s+(?:reply|answer|response|output|message)\b"
    r"[^.!?。！？]{0,40}?(?:\bnot\b|n't\b|\bnever\b)[^.!?。！？]{0,16}?\b(?:used|usable|accepted|valid)\b"
    r"|\bcould\s+not\s+be\s+used\b|\bwas\s+not\s+used\s+because\b|\bwrite\s+it\s+anew\b"
    r"|\bjson\s+object\b|\bmatch(?:es)?\s+the\s+schema\b|\bno\s+code\s+fences\b|\becho(?:es|ed)?\s+the\s+prompt\b"
    r"|(?:前|前回|さっき|先ほど|先程|直前|最後)の(?:返事|返答|回答|応答|答え|出力|メッセージ)"
    r"[^。！？]{0,20}?(?:使えな|使えませ|使用できな|使用できませ|使われな|使われませ|受け付けられな|採用されな|無効)"
    r"|JSONオブジェクト|スキーマ(?:に|と)(?:合|一致)|自分の言葉で(?:書き|言い)直",
    re.IGNORECASE,
)


#: Words one of which every leak holds: most replies hold none, and skip the regular expression.
_LEAK_WORDS = (
    "previous", "last", "earlier", "prior", "former", "could not be used", "not used because", "anew", "json",
    "schema", "code fence", "echo", "前", "さっき", "先ほど", "先程", "最後", "スキーマ", "自分の言葉",
)  # fmt: skip


def leaks_instruction(text: str) -> bool:
    """Whether `text` repeats the re-ask's instruction, or paraphrases it, in English or Japanese."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return any(word in folded for word in _LEAK_WORDS) and _LEAKS.search(folded) is not None


def reason_of(error: str) -> str:
    """A refusal as the re-ask says it: quotes of the refused text removed, one line, at most
    MAX_REASON_CHARS; an echo's "dialogue repeats ..." said as "its dialogue repeats ..."."""
    if error.startswith(ECHO_PREFIX):
        error = "its " + error[len(ECHO_PREFIX) :]
    reason = " ".join(_QUOTED.sub("", error).split()).rstrip(" .。")
    return reason[:MAX_REASON_CHARS]


def opening(text: str) -> str:
    """The start of a refused text, as a ban: its first OPENING_CHARS characters, spaces collapsed."""
    return " ".join(text.split())[:OPENING_CHARS].strip(" \"'「」『』")


def reask(
    messages: Sequence[Message], error: str, options: GenerateOptions, *, avoid: Iterable[str] = ()
) -> tuple[list[Message], GenerateOptions]:
    """The conversation and options of the one re-ask after an unusable reply.

    Args:
        messages: the prompt the refused reply answered (the re-ask repeats it, without the reply).
        error: why the reply was refused (an LLMReplyError's message).
        options: the refused call's options.
        avoid: texts the re-ask must not start with again (the refused text, the line it copied).

    Returns:
        The prompt plus one user message saying what was wrong, and options sampled REASK_HEAT hotter with
        the openings of `avoid` in `banned_openings`.
    """
    asked = [*messages, {"role": "user", "content": REASK.format(reason=reason_of(error))}]
    heat = min(2.0, (options.temperature if options.temperature is not None else 0.7) + REASK_HEAT)
    banned = list(dict.fromkeys([*options.banned_openings, *filter(None, map(opening, avoid))]))
    return asked, options.model_copy(update={"temperature": heat, "banned_openings": banned[:MAX_BANNED]})
