"""Scripted writer for interviews (`InterviewReply`): the answer quotes the memory that answers the question.

Knows or does not know, decided from the facts of backend/interview/prompts.py, never guessed:
- The question's *cues* are its content words: topics (kanji/katakana compounds such as パーティー, Latin
  words), less question words (know, heard, 何か ...), and the names of people it names (from the agent's
  person memory).
- A memory (or what the agent knows of a named person) *answers* when it holds a cue: a Japanese cue as a
  substring or by half of its character bigrams, a Latin one as a word (plural and -ed/-ing forms too).
  When the question has cues besides names, a name alone is not enough ("葵のパーティー" is not answered by
  "葵と図書館で話した").
- The answering memory with most cues wins (ties: the one that says most about them, then the better
  retrieved one). The answer retells its sentence that holds them, in words taken from it:
  "葵が「明日の19時に公園でパーティーをするんだけど、来ない？」と言った"
  -> "うん、葵が明日の19時に公園でパーティーをするって言ってたよ。"
- No memory answers: the agent says it has not heard of it, in words that repeat nothing of the question,
  so a check for the question's words in the answer cannot mistake ignorance for knowledge. A question
  with no cues at all (最近どう？) is answered from the best retrieved memory, if any.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from backend.memory.topics import topics
from backend.scripted.engine import WriterContext
from backend.text import STOP_WORDS, char_ngrams, latin_words, normalise, tokens

#: Words of a question that ask rather than name what is asked about.
_QUESTION_WORDS = frozenset(
    "know knew known heard hear anything something anyone someone everything tell told about what what's whats "
    "who whom whose where when which why how does did have has had any there happening happened going "
    "remember recall think thought news plans plan said say says you your yours me "
    "today tonight yesterday lately recently day morning afternoon evening now doing done "
    "何か 何 誰 どこ いつ 話 こと 知 聞".split()
)
#: A gist is cut to this many characters (the answer stays well within InterviewReply's maxLength).
MAX_GIST_CHARS = 180
#: Share of a Japanese cue's character bigrams a memory must hold to count as holding the cue.
BIGRAM_SHARE = 0.5

# A heard line may be followed by the facts of the news it told (conversation/aftermath._with_facts).
_JA_HEARD = re.compile(r"^(?P<who>[^「」]{1,64}?)が「(?P<line>.+)」と言った(?:。(?P<facts>[^「」]*))?$", re.S)
_JA_TOLD = re.compile(r"^(?P<who>[^「」]{1,64}?)に「(?P<line>.+)」と話した$", re.S)
_EN_HEARD = re.compile(r'^(?P<who>.{1,64}?) told me: "(?P<line>.+)"(?: (?P<facts>[^"]*))?$', re.S)
_EN_TOLD = re.compile(r'^I told (?P<who>.{1,64}?): "(?P<line>.+)"$', re.S)
_SENTENCES = re.compile(r"(?<=[。！？!?])\s*|(?<=\.)\s+|\n+")
_PARTS = re.compile(r"([、,，])")
#: Sentence-final words that do not fit before って (longest first): するんだけど -> する.
_JA_ENDINGS = ("んですけど", "んだけどね", "んだけど", "んだってね", "んだって", "んだよね", "んだよ", "んです",
               "けどね", "けど", "だよね", "だよ", "よね", "んだ", "ね", "よ", "わ")  # fmt: skip
_JA_OPENERS = frozenset(
    {
        "実は",
        "実はね",
        "実はさ",
        "そういえば",
        "そう言えば",
        "ところで",
        "聞いて",
        "聞いてよ",
        "ねえ",
        "そっか",
        "なるほど",
        "たしかに",
        "うんうん",
        "そうなんだ",
        "へえ",
    }
)
_EN_OPENERS = frozenset({"oh", "hey", "so", "well", "listen", "by the way", "you know", "guess what"})
_POLITE_MARKS = ("敬語", "丁寧", "です", "ます", "polite", "formal")


@dataclass(frozen=True)
class Cues:
    words: tuple[str, ...]  # what is asked about
    names: tuple[str, ...]  # people named


@dataclass(frozen=True)
class Found:
    text: str  # the memory (or person summary) that answers
    score: int  # cues it holds


def cues_of(question: str, names: list[str], own: tuple[str, ...] = ()) -> Cues:
    """The question's content words and the names of the people it names (see the module docstring); the
    agent's `own` name and id ("Emma, what do you know...") are neither."""
    folded = normalise(question)
    named = tuple(n for n in names if n and normalise(n) in folded)
    skip = {normalise(n) for n in (*named, *own) if n}
    found = [w for w in topics(question, limit=8, exclude=skip) if w not in _QUESTION_WORDS]
    found += [w for w in latin_words(question) if len(w) >= 3 and w not in _QUESTION_WORDS]
    words = [w for w in dict.fromkeys(found) if w not in skip and w not in STOP_WORDS]
    return Cues(tuple(words), named)


def holds(text: str, cue: str) -> bool:
    """Whether `text` holds the cue word (see the module docstring)."""
    folded = normalise(text)
    cue = normalise(cue)
    if cue.isascii():
        stems = {_stem(w) for w in latin_words(text)} | {_stem(w) for w in re.findall(r"[a-z0-9]+", folded)}
        return _stem(cue) in stems
    if cue in folded:
        return True
    grams = set(char_ngrams(cue, 2))
    return bool(grams) and len(grams & set(tokens(text))) / len(grams) >= BIGRAM_SHARE


def _stem(word: str) -> str:
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + keep
    return word


def score(text: str, cues: Cues) -> int:
    """How many cues `text` holds; 0 when the question asks about something besides names and `text` holds
    only names."""
    words = sum(holds(text, w) for w in cues.words)
    if cues.words and not words:
        return 0
    return words + sum(holds(text, n) for n in cues.names)


def best(candidates: list[str], cues: Cues, ja: bool) -> Found | None:
    """The candidate holding most cues; on a tie between lines of talk the one that says most about it (the
    longer retelling: the invitation heard beats one's own "パーティー？いいね！"), else the better retrieved. None if none holds any."""
    found: Found | None = None
    told = 0
    for text in candidates:
        points = score(text, cues)
        if points <= 0 or (found is not None and points < found.score):
            continue
        said = len(gist(_form(text)[2], cues, ja))
        # On a tie a line of talk that says more beats another line of talk; a plain memory (a fact the
        # agent lived: "ひかりに本を渡した") keeps its place before the day's longer chatter.
        talk = found is not None and _form(found.text)[0] != "plain" and _form(text)[0] != "plain"
        if found is None or points > found.score or (talk and said > told):
            found, told = Found(text, points), said
    return found


def gist(text: str, cues: Cues, ja: bool) -> str:
    """The sentence of `text` that holds most cues, from its start to its last part holding one (an
    invitation's trailing "来ない？" and an opening "そうだ、" go), without its sentence-final words."""
    sentences = [s.strip() for s in _SENTENCES.split(text) if s and s.strip()] or [text.strip()]
    sentence = max(sentences, key=lambda s: score(s, cues) if cues.words or cues.names else 0)
    pieces = _PARTS.split(sentence)
    parts, marks = pieces[::2], pieces[1::2]
    hit = [i for i, part in enumerate(parts) if score(part, cues) > 0]
    last = hit[-1] if hit else len(parts) - 1
    first = 0
    while first < last and _opener(parts[first], ja) and score(parts[first], cues) == 0:
        first += 1
    kept = "".join(p + (marks[i] if i < last else "") for i, p in enumerate(parts) if first <= i <= last)
    kept = kept.strip().rstrip("。！？!?.…、,， ")
    if ja:
        for ending in _JA_ENDINGS:
            if kept.endswith(ending) and len(kept) > len(ending) + 1:
                kept = kept[: -len(ending)]
                break
    if len(kept) > MAX_GIST_CHARS:
        kept = kept[:MAX_GIST_CHARS].rstrip() + "…"
    return kept


def _opener(part: str, ja: bool) -> bool:
    """A leading interjection (そうだ, ねえ, Oh, By the way): not what the memory says."""
    bare = part.strip()
    if ja:
        return bare in _JA_OPENERS or (len(bare) <= 4 and re.fullmatch(r"[\u3041-\u309f]+", bare) is not None)
    return bare.lower() in _EN_OPENERS


def _polite(ctx: WriterContext) -> bool:
    style = str((ctx.facts.get("agent") or {}).get("speaking_style") or "").lower()
    return any(mark in style for mark in _POLITE_MARKS)


def _form(text: str) -> tuple[str, str, str]:
    """(form, who, what): a line heard from someone, a line told to someone, or a plain memory."""
    forms = ((_JA_HEARD, "heard"), (_JA_TOLD, "told"), (_EN_HEARD, "heard"), (_EN_TOLD, "told"))
    for pattern, form in forms:
        match = pattern.match(text.strip())
        if match:
            return form, match.group("who").strip(), match.group("line")
    return "plain", "", text


def _unaddressed(line: str, names: tuple[str, ...]) -> str:
    """The line less its opening call to the one it was said to ("ねえ春花、", "Listen, Kai, "): the
    listener retelling it does not say its own name or the teller's back."""
    for name in (n for n in names if n):
        call = rf"^(?:ねえ|そうだ|あ、)?{re.escape(name)}(?:さん)?、(?:聞いて、)?|^(?:Listen, )?{re.escape(name)}, "
        line = re.sub(call, "", line.strip())
    return line


def retell(ctx: WriterContext, text: str, cues: Cues) -> str:
    """The answer that tells what `text` says, by its form (something heard, something told, a plain memory;
    with no cues, what comes to mind first)."""
    polite = _polite(ctx)
    form, who, line = _form(text)
    me = str((ctx.facts.get("agent") or {}).get("name") or "")
    said = gist(_unaddressed(line, (who, me)), cues, ctx.ja)
    if form == "plain" and not cues.words and not cues.names:
        return f"そうです{'ね' if polite else 'だな'}…{said}。" if ctx.ja else f"Well... {said}."
    if ctx.ja:
        yes = "はい" if polite else "うん"
        if form == "heard":
            return f"{yes}、{who}が{said}って言って{'いました' if polite else 'たよ'}。"
        if form == "told":
            return f"{yes}、{who}に{said}って話し{'ました' if polite else 'たよ'}。"
        return f"{yes}、{'知っています' if polite else '知ってるよ'}。{said}。"
    sentence = said[:1].upper() + said[1:]
    if form == "heard":
        return f'Yes, {who} told me: "{sentence}."'
    if form == "told":
        return f'Yes, I told {who}: "{sentence}."'
    return f"Yes, I know. {sentence}."


def unknown(ctx: WriterContext) -> str:
    """Not having heard of it, in words that repeat nothing of the question."""
    if ctx.ja:
        if _polite(ctx):
            return str(
                ctx.pick(
                    [
                        "すみません、それについては何も聞いていないです。",
                        "ごめんなさい、その話は初めて聞きました。",
                    ]
                )
            )
        return str(ctx.pick(["うーん、それについては何も聞いてないな。", "ごめん、その話は初めて聞いたよ。"]))
    return str(
        ctx.pick(["Hmm, I haven't heard anything about that.", "Sorry, that's the first I've heard of it."])
    )


def write_interview(ctx: WriterContext) -> dict[str, Any]:
    """The answer to `facts["question"]` from `facts["memories"]` and `facts["people"]` (see the module
    docstring and backend/interview/prompts.build_facts)."""
    facts = ctx.facts
    memories = [str(m.get("content") or "") for m in facts.get("memories") or [] if isinstance(m, dict)]
    people = [p for p in facts.get("people") or [] if isinstance(p, dict)]
    me = facts.get("agent") or {}
    own = (str(me.get("name") or ""), str(me.get("id") or ""))
    cues = cues_of(str(facts.get("question") or ""), [str(p.get("name") or "") for p in people], own)
    # What the agent knows of a named person counts after its memories (they are more specific).
    summaries = [_summary(str(p.get("context") or "")) for p in people]
    if not cues.words and not cues.names:
        found = Found(memories[0], 0) if memories else None
    else:
        found = best([*memories, *(s for s in summaries if s)], cues, ctx.ja)
    if found is None:
        return {"answer": unknown(ctx)}
    return {"answer": retell(ctx, found.text, cues)}


def _summary(context: str) -> str:
    """A person context without its heading line ("葵について(これまで2回話した…):")."""
    lines = [line.strip() for line in context.splitlines() if line.strip()]
    return " ".join(lines[1:])


WRITERS = {"InterviewReply": write_interview}
