"""The echo check: a parsed reply whose free text copies the prompt instead of answering it is refused.

Small models given a grammar or a JSON Schema still fill the fields with what they saw: a placeholder
("<your line>", "..."), a field's own name or description (in the schema, or a phrase of the prompt's
"- field: description" lines), a schema word ("string"), a whole line of the prompt (the partner's last
line, a memory), a person's name from the call's facts, the re-ask's instruction (llm/reask.py), or a field
label with nothing after it ("Sam's line:", "（葵のセリフ）"; llm/label.py: `without_labels` cuts a label off a
line first). `echo_problem` finds the first such value and says which field it is and why, in one short
sentence the re-ask can say. Prompts and the schema's rules are cached (per message text, per reply class):
a turn's whole check (parse, labels, echoes) costs about a tenth of a millisecond.

Which strings are checked is decided by the reply's JSON Schema, once per reply class:
- skipped: strings with an enum, const, pattern or format, and ids (`id`, `*_id`, `*_ids`);
- vocabulary (a `maxLength` of at most VOCABULARY_MAX_LENGTH: an emotion word, a criterion name): only a
  structural placeholder ("<...>", dots) is refused; a one-character word such as 愛 is an answer;
- free text (every other string): all the rules. Items of a string list (concerns, notes) may quote the
  prompt, since extracting what was said is their job; scalar text (a line, an opinion) may not.
A property can opt out (`"echo_check": false`) or in (`true`) through `json_schema_extra`, or keep every rule
but the whole-line copy (`"echo_check": "may_repeat"`): a running summary rewritten to include a conversation
that taught nothing new is the old summary again, an answer, not an echo. A field a character says aloud
(`"echo_check": "spoken"`: a turn's line, an interview answer, a council opinion) must also hold a letter:
"}{" or a copied clock is no line.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from backend.llm.base import Message, T, annotated_schema_for
from backend.llm.label import label_problem, unlabelled
from backend.llm.loops import unlooped
from backend.llm.reask import leaks_instruction

#: A string whose maxLength is at most this is a word from a vocabulary, not free text.
VOCABULARY_MAX_LENGTH = 64
#: A value shorter than this (normalised) is not compared with the prompt's lines ("はい" may repeat).
MIN_LINE_ECHO_CHARS = 4
#: The `echo_check` of a field a character says aloud (TurnReply.dialogue, an interview answer, a council
#: opinion): a value with no letter in it ("}{", a copied clock "2014-01-07 07:33:22") is refused there.
#: Only there: a background reflection of numbers is refused nowhere (its job would retry to failure).
SPOKEN = "spoken"
#: A field description's phrase of this many words (or, without spaces, characters) may not open a value.
MIN_OPENING_WORDS = 4
MIN_OPENING_CHARS = 8
#: A sentence end: a value's first sentence is what `without_described` compares.
_SENTENCE_END = re.compile(r"[.。!?！？]+\s*")
#: Words prompts used to show as sample values, and schema words: never an answer on their own.
PLACEHOLDER_WORDS = frozenset(
    {
        "意見", "懸念", "まとめ", "賛成の条件", "基準名", "name", "your line", "your view", "a concern",
        "a condition", "a condition for your support", "string", "integer", "number", "boolean", "object",
        "array", "null", "true", "false", "json", "schema", "placeholder",
    }
)  # fmt: skip

_EDGE = " \t\r\n\"'`“”‘’「」『』()（）[]［］【】<>＜＞.。,，、!！?？:：;；-‐–—~〜・*#…"
#: "<your line>", "{name}", and a cut-off "<one of: happy, sad": a template slot, not a value.
_WRAPPED = re.compile(r"^\s*(?:<[^<>]*>?|＜[^＜＞]*＞?|\{[^{}]*\}?)\s*$")
_DOTS = re.compile(r"^[\s.。…・‥]*$")
#: A list mark, numbering or "[12]" id; applied to a normalised line, whose leading "[" is already gone.
_BULLET = re.compile(r"^\s*(?:[-*•・>]+|\d{1,3}[.)]|\[?\d{1,6}\])\s*")
_SPEAKER = re.compile(r"^[^:：\n]{1,64}[:：]\s*")
_ASIDE = re.compile(r"\s*\([^()]*\)?\s*$")
_PHRASE_SPLIT = re.compile(r"[.,;:。、，：；!?！？()（）]|\s[-–—]\s")
_ID_NAME = re.compile(r"(?:^|_)ids?$")
_NAME_KEY = re.compile(r"(?:^|_)(?:name|id)$")


def normalise(text: str) -> str:
    """What two texts are compared as: NFKC, case-folded, spaces collapsed, punctuation at the ends off."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split()).strip(_EDGE)


@dataclass(frozen=True)
class _Text:
    """A checked string location: its own words (name, description phrases) and how strictly to check."""

    key: str  # the property's name: "dialogue:" is a label (llm/label.py)
    words: frozenset[str]
    vocabulary: bool
    in_list: bool
    allow_empty: bool
    may_repeat: bool = False  # a whole line of the prompt is an answer here (a running summary kept)
    spoken: bool = False  # said aloud by a character (a line, an answer, an opinion): it must hold words


@dataclass(frozen=True, eq=False)  # hashed by identity: one per reply class (see _rules)
class _Rules:
    tree: Any  # _Text | ("object", {key: tree}) | ("array", tree) | None
    schema_words: frozenset[str]  # field names and titles of the whole reply schema
    #: A prompt line describing fields of this schema ("- dialogue: what 葵 says now"); group 1 is the text.
    field_line: re.Pattern[str] | None


@functools.lru_cache(maxsize=256)
def _rules(schema: type[BaseModel]) -> _Rules:
    json_schema = annotated_schema_for(schema)
    names: set[str] = set()
    tree = _compile(json_schema, "", names, in_list=False)
    fields = sorted(_property_names(json_schema), key=len, reverse=True)
    one = "(?:" + "|".join(map(re.escape, fields)) + ")"
    pattern = rf"^[ \t]*(?:[-*•・][ \t]*)?{one}(?:[ \t]*,[ \t]*{one})*[ \t]*[:：][ \t]*(.+)$"
    return _Rules(tree, frozenset(names), re.compile(pattern, re.MULTILINE) if fields else None)


def _property_names(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = set(node.get("properties") or {})
        for value in node.values():
            found |= _property_names(value)
        return found
    if isinstance(node, list):
        return set().union(*(_property_names(item) for item in node)) if node else set()
    return set()


def _compile(node: dict[str, Any], key: str, names: set[str], *, in_list: bool) -> Any:
    if node.get("title"):
        names.add(normalise(str(node["title"])))
    if node.get("echo_check") is False:  # before the branches: `str | None` is an anyOf under it
        return None
    for branch in ("anyOf", "oneOf"):
        if branch in node:
            options = [_compile(sub, key, names, in_list=in_list) for sub in node[branch]]
            return next((option for option in options if option is not None), None)
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        props = node.get("properties", {})
        for name in props:
            names.update({normalise(name), normalise(name.replace("_", " "))})
        compiled = {name: _compile(sub, name, names, in_list=False) for name, sub in props.items()}
        kept = {name: sub for name, sub in compiled.items() if sub is not None}
        return ("object", kept) if kept else None
    if kind == "array":
        items = node.get("items")
        sub = _compile(items, key, names, in_list=True) if isinstance(items, dict) else None
        return ("array", sub) if sub is not None else None
    if kind != "string" or node.get("echo_check") is False or _ID_NAME.search(key):
        return None
    if node.get("echo_check") is not True and any(k in node for k in ("enum", "const", "pattern", "format")):
        return None
    limit = node.get("maxLength")
    vocabulary = node.get("echo_check") is not True and limit is not None and limit <= VOCABULARY_MAX_LENGTH
    description = str(node.get("description") or "")
    phrases = {normalise(p) for p in _PHRASE_SPLIT.split(description)} | {normalise(description)}
    words = frozenset(p for p in phrases if p) | {normalise(key)}
    may_repeat, spoken = node.get("echo_check") == "may_repeat", node.get("echo_check") == SPOKEN
    return _Text(key, words, vocabulary, in_list, node.get("default") == "", may_repeat, spoken)


def _walk(value: Any, tree: Any, path: str) -> Iterator[tuple[str, str, _Text]]:
    if isinstance(tree, _Text):
        if isinstance(value, str):
            yield path, value, tree
    elif tree[0] == "object" and isinstance(value, Mapping):
        for key, sub in tree[1].items():
            if key in value:
                yield from _walk(value[key], sub, f"{path}.{key}" if path else key)
    elif tree[0] == "array" and isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, tree[1], f"{path}[{index}]")


@functools.lru_cache(maxsize=512)
def prompt_lines(content: str) -> frozenset[str]:
    """The normalised lines of one message, each also without its bullet and its "Name: " prefix."""
    lines: set[str] = set()
    for raw in content.splitlines():
        norm = normalise(raw)
        bare = _BULLET.sub("", norm)
        for line in (norm, bare.strip(_EDGE), _SPEAKER.sub("", bare, count=1).strip(_EDGE)):
            if len(line) >= MIN_LINE_ECHO_CHARS:
                lines.add(line)
    return frozenset(lines)


@functools.lru_cache(maxsize=512)
def _field_texts(content: str, rules: _Rules) -> tuple[str, ...]:
    """The texts with which `content` describes the reply's fields, as written ("心配な点（なければ空）")."""
    if rules.field_line is None:
        return ()
    return tuple(found.group(1) for found in rules.field_line.finditer(content))


@functools.lru_cache(maxsize=512)
def _described(content: str, rules: _Rules) -> frozenset[str]:
    """The phrases with which `content` describes the reply's fields ("- concerns: 心配な点（なければ空）")."""
    phrases: set[str] = set()
    for text in _field_texts(content, rules):
        phrases.update(normalise(part) for part in (text, *_PHRASE_SPLIT.split(text)))
    return frozenset(p for p in phrases if len(p) >= 2)


@functools.lru_cache(maxsize=512)
def _openings(content: str, rules: _Rules) -> tuple[str, ...]:
    """The description phrases long enough that a value opening with one copies the prompt ("your position
    on the proposal is against": SmolLM2's council opinion), longest first."""
    phrases = [p for p in _described(content, rules) if _long_phrase(p)]
    return tuple(sorted(phrases, key=len, reverse=True))


def _long_phrase(phrase: str) -> bool:
    words = phrase.split()
    return len(words) >= MIN_OPENING_WORDS if len(words) > 1 else len(phrase) >= MIN_OPENING_CHARS


def _opens_with(norm: str, phrase: str) -> bool:
    """Whether `norm` starts with `phrase` as whole words (Japanese has no spaces: 言葉です opens with 言葉)."""
    if not norm.startswith(phrase):
        return False
    after = norm[len(phrase) : len(phrase) + 1]
    return not (after.isascii() and after.isalnum())


@functools.lru_cache(maxsize=512)
def _folded(content: str) -> str:
    # Every normalised line is a substring of this: a cheap test before splitting a long prompt into lines.
    return " ".join(unicodedata.normalize("NFKC", content).casefold().split())


def fact_names(facts: Mapping[str, Any], depth: int = 2) -> set[str]:
    """People's names and ids in a call's facts: `name`, `*_name`, `id`, `*_id` keys, nested dicts too."""
    found: set[str] = set()
    for key, value in facts.items():
        if isinstance(value, str):
            if _NAME_KEY.search(key) and (norm := normalise(value)):
                found.add(norm)
        elif depth > 0 and isinstance(value, dict):  # dict, not Mapping: this runs on every reply
            found |= fact_names(value, depth - 1)
    return found


def echo_problem(
    reply: BaseModel,
    schema: type[BaseModel],
    messages: Sequence[Message],
    facts: Mapping[str, Any] | None = None,
) -> str | None:
    """Why `reply` (a parsed `schema`) copies its prompt instead of answering, or None when it does not.

    Args:
        reply: the validated reply.
        schema: its class (the rules are built once per class).
        messages: the prompt it answers; system and user lines count, earlier assistant replies do not.
        facts: the call's `options.facts`; the names and ids in it are not a reply on their own.

    Returns:
        One short sentence naming the field, e.g. 'dialogue is a placeholder ("<your line>")', or None.
    """
    rules = _rules(schema)
    if rules.tree is None:
        return None
    names: set[str] | None = None
    contents = [m.get("content", "") for m in messages if m.get("role") != "assistant"]
    for path, value, spec in _walk(reply.model_dump(mode="json"), rules.tree, ""):
        norm = normalise(value)
        problem = _value_problem(value, norm, spec, rules)
        if problem is None and not spec.vocabulary:
            if names is None:
                names = fact_names(facts or {})
            problem = _copy_problem(value, norm, spec, rules, contents, names)
        if problem is not None:
            return f"{path} {problem}: write it anew, in your own words"
    return None


def _copy_problem(
    value: str, norm: str, spec: _Text, rules: _Rules, contents: Sequence[str], names: set[str]
) -> str | None:
    """Why a free-text value copies its prompt: the instruction, a label, a name, a field line, a line."""
    if leaks_instruction(value):
        return "repeats the instructions instead of answering"
    if (labelled := label_problem(value, _labels(spec))) is not None:
        return labelled
    if norm in names:
        return f"is only a name ({value.strip()[:40]!r}), not what was asked"
    if (described := _description_copied(value, (norm,), rules, contents)) is not None:
        return described
    if not spec.in_list and not spec.may_repeat and _copies_a_line(norm, value, contents):
        return f"repeats a line of the prompt word for word ({value.strip()[:60]!r})"
    return None


def _labels(spec: _Text) -> tuple[str, ...]:
    """The field names that label a value of this field ("dialogue:", "spoken reply:")."""
    return (spec.key, spec.key.replace("_", " ")) if spec.key else ()


def free_texts(reply: BaseModel, schema: type[BaseModel]) -> list[str]:
    """The reply's free-text values that are not items of a list (a line, an answer, an opinion)."""
    tree = _rules(schema).tree
    if tree is None:
        return []
    walked = _walk(reply.model_dump(mode="json"), tree, "")
    return [value for _, value, spec in walked if not spec.vocabulary and not spec.in_list and value.strip()]


def mended(reply: T, schema: type[T], messages: Sequence[Message]) -> T:
    """`reply` with its free text mended before the echo check, from one dump and validated once:
    - a field label cut off the start of each value ("Sam's line: Hi!" -> "Hi!"; llm/label.py);
    - the loop a value fell into cut off ("08:28, 08:28, ..."; llm/loops.py);
    - a first sentence that is a whole field description of the prompt cut off when a proper answer follows
      (SmolLM2 answered an interview with "Ben's spoken reply to the interviewer, in English, in Ben's own
      words. You remember that Mia ran the Corner Cafe...": the rest is the answer);
    - blank items, items of debris with no letter or digit ("} ,") and items that copy a field's description
      ("each thing that worries you") dropped from lists of free text (SmolLM2 wrote council opinions
      with `"concerns": [""]` and a concern copied from the prompt: no concern, not a wrong answer), unless
      the schema needs the items (a minimum count): then the echo check names the empty one.
    A value that is only a label or a description is left for `echo_problem` to refuse."""
    rules = _rules(schema)
    if rules.tree is None:
        return reply
    described: set[str] | None = None

    contents = [m.get("content", "") for m in messages if m.get("role") != "assistant"]

    def mend(value: str, spec: _Text) -> str:
        nonlocal described
        value = unlooped(_unlabel_one(value, spec))
        if spec.in_list:
            return "" if _describes_a_field(value, rules, contents) else value
        if (end := _SENTENCE_END.search(value)) is None:
            return value
        if described is None:
            described = {normalise(text) for content in contents for text in _field_texts(content, rules)}
        if normalise(value[: end.start()]) not in described:
            return value
        rest = value[end.end() :]
        return rest if len(rest.strip(_EDGE)) >= 2 else value

    dumped = reply.model_dump(mode="json")
    mended = _on_text(dumped, rules.tree, mend)
    kept = _drop_empty(mended, rules.tree)
    if kept == dumped:
        return reply
    if kept != mended:
        try:
            return schema.model_validate(kept)
        except ValueError:  # a minimum of items: the echo check names the empty one
            pass
    return reply if mended == dumped else schema.model_validate(mended)


def _describes_a_field(item: str, rules: _Rules, contents: Sequence[str]) -> bool:
    """Whether a list item is a field's description in the prompt (also without its edge punctuation), or
    opens with a long phrase of one: an item the model copied instead of writing one. (An item that is only
    a field's name, "agreements", is left for the echo check to refuse: a whole list of those is an echo,
    not an empty answer.)"""
    norm = normalise(item)
    if len(norm) < 2:
        return False
    return _description_copied(item, (norm, norm.strip(_EDGE)), rules, contents) is not None


def _description_copied(
    value: str, forms: Sequence[str], rules: _Rules, contents: Sequence[str]
) -> str | None:
    """Why `value` copies a field description of the prompt: one of its normalised `forms` is a description
    phrase, or its first form opens with a long one; None when it does not."""
    if any(form in _described(content, rules) for content in contents for form in forms):
        return f"repeats the prompt's description of a field ({value.strip()[:60]!r})"
    for content in contents:
        opening = next((p for p in _openings(content, rules) if _opens_with(forms[0], p)), None)
        if opening is not None:
            return f"opens with the prompt's description of a field ({opening[:60]!r})"
    return None


def _debris(item: str) -> bool:
    """A list item with no letter or digit that is not a template's placeholder: blank, or JSON debris
    ("} ," in SmolLM2's council conditions). "..." and "<...>" stay, for the echo check to refuse."""
    stripped = item.strip()
    if any(c.isalnum() for c in stripped):
        return False
    return not stripped or not (_DOTS.match(stripped) or _WRAPPED.match(stripped))


def _drop_empty(value: Any, tree: Any) -> Any:
    if isinstance(tree, _Text):
        return value
    if tree[0] == "object" and isinstance(value, dict):
        return {k: _drop_empty(v, tree[1][k]) if k in tree[1] else v for k, v in value.items()}
    if tree[0] == "array" and isinstance(value, list):
        if isinstance(tree[1], _Text) and not tree[1].vocabulary:
            return [item for item in value if not (isinstance(item, str) and _debris(item))]
        return [_drop_empty(item, tree[1]) for item in value]
    return value


def _unlabel_one(value: str, spec: _Text) -> str:
    rest = unlabelled(value, _labels(spec))
    return value if rest is None or len(rest.strip(_EDGE)) < 2 else rest


def _on_text(value: Any, tree: Any, change: Callable[[str, _Text], str]) -> Any:
    """`value` with `change` applied to each free-text string of it (`tree`: the schema's rules)."""
    if isinstance(tree, _Text):
        return change(value, tree) if isinstance(value, str) and not tree.vocabulary else value
    if tree[0] == "object" and isinstance(value, dict):
        return {k: _on_text(v, tree[1][k], change) if k in tree[1] else v for k, v in value.items()}
    if tree[0] == "array" and isinstance(value, list):
        return [_on_text(item, tree[1], change) for item in value]
    return value


def _value_problem(value: str, norm: str, spec: _Text, rules: _Rules) -> str | None:
    stripped = value.strip()
    if _WRAPPED.match(stripped) or (stripped and _DOTS.match(stripped)):
        return f"is a placeholder ({stripped[:40]!r}), not an answer"
    if spec.vocabulary:
        return None
    if not stripped:
        return None if spec.allow_empty else "is empty"
    if len(norm) <= 1:
        return f"has at most one character ({stripped!r})"
    if spec.spoken and not any(ch.isalpha() for ch in stripped):  # "}{", "2014-01-07 07:33:22"
        return f"has no words ({stripped[:40]!r})"
    # "意見（2〜4文、あなたの口調で）": an old template's slot with its hint in brackets.
    bare = _ASIDE.sub("", norm).strip(_EDGE) if norm.endswith(")") or "(" in norm else norm
    if norm in PLACEHOLDER_WORDS or bare in PLACEHOLDER_WORDS:
        return f"is a placeholder ({stripped[:40]!r}), not an answer"
    if any(word in spec.words or word in rules.schema_words for word in (norm, bare)):
        return f"repeats the field's name or description ({stripped[:40]!r})"
    return None


def _copies_a_line(norm: str, value: str, contents: Sequence[str]) -> bool:
    if len(norm) < MIN_LINE_ECHO_CHARS:
        return False
    candidates = [norm]
    if _SPEAKER.match(norm):
        unprefixed = _SPEAKER.sub("", norm, count=1).strip(_EDGE)
        if len(unprefixed) >= MIN_LINE_ECHO_CHARS:
            candidates.append(unprefixed)
    for content in contents:
        folded = _folded(content)
        if any(c in folded for c in candidates) and any(c in prompt_lines(content) for c in candidates):
            return True
    return False
