"""JSON Schema -> GBNF grammar for llama.cpp's constrained decoding (the `llamacpp` provider).

Why our own converter rather than `llama_cpp.LlamaGrammar.from_json_schema`:
- Its string rule is `[^"\\]`, which lets raw control characters (newlines, tabs) into JSON strings
  (llama-cpp-python issue #1259): such replies fail to parse. Here string characters exclude `\\x00-\\x1F`
  and `\\x7F`, as llama.cpp's own C++ converter does; escapes (`\\n`) stay allowed.
- It ignores `minimum`/`maximum`, so a 1-10 importance may come out as 57. Integer ranges are written
  here as digit patterns (0-100 is `[0-9] | [1-9] [0-9] | "100"`), and bounded numbers keep their integer
  part in range.

Kept cheap to decode: llama.cpp checks every vocabulary token against every live parse stack at each step,
and each alternative open at a point is one more stack. So ranges are digit patterns, not one alternative per
value (0-100 as 101 literals cost a fifth of the decoding speed of an emotion reply, bench/grammar.py), and
enums are factored by common prefix (`"s" ("ad" | "urprised")`): one stack until the values part ways.

The subset covered is what pydantic emits for Machi's reply models: objects (every property is emitted, in
order, which is valid whether or not it is required), arrays with min/max items, strings with min/max length,
enums and consts, anyOf/oneOf, integers, numbers (no exponent: any JSON number can be written without one),
booleans, null, `$ref` into `$defs`, and free-form values. Unknown keywords (pattern, format) are not
enforced by the grammar; the reply is validated afterwards anyway.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: A JSON string character: anything but quote, backslash and control characters, or an escape.
CHAR_RULE = r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'

#: llama.cpp's grammar parser treats a repetition bound above this as unbounded.
MAX_BOUNDED_REPETITION = 2000

_PRIMITIVES: dict[str, str] = {
    "space": '" "?',
    "char": CHAR_RULE,
    "string": '"\\"" char* "\\"" space',
    "integer": '"-"? ("0" | [1-9] [0-9]{0,15}) space',
    "number": '"-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,15})? space',
    "boolean": '("true" | "false") space',
    "null": '"null" space',
    "value": "object | array | string | number | boolean | null",
    "object": '"{" space (string ":" space value ("," space string ":" space value)*)? "}" space',
    "array": '"[" space (value ("," space value)*)? "]" space',
}
_DEPENDS = {
    "string": ("char", "space"),
    "integer": ("space",),
    "number": ("space",),
    "boolean": ("space",),
    "null": ("space",),
    "value": ("object", "array", "string", "number", "boolean", "null"),
    "object": ("space", "string", "value"),
    "array": ("space", "value"),
}


def gbnf_literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def json_literal(value: Any) -> str:
    """A GBNF literal matching exactly the compact JSON encoding of `value`."""
    return gbnf_literal(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


class _Converter:
    def __init__(self, root_schema: dict[str, Any]) -> None:
        self.root_schema = root_schema
        self.rules: dict[str, str] = {}

    def add(self, name: str, body: str) -> str:
        """Add a rule (or reuse an identical one), renaming on clashes; returns the rule's name."""
        for existing, existing_body in self.rules.items():
            if existing_body == body:  # e.g. eight 0-100 emotion values share one rule
                return existing
        name = re.sub(r"[^a-zA-Z0-9-]+", "-", name).strip("-") or "rule"
        candidate, n = name, 0
        while candidate in self.rules and self.rules[candidate] != body:
            n += 1
            candidate = f"{name}-{n}"
        self.rules[candidate] = body
        return candidate

    def primitive(self, name: str) -> str:
        if name not in self.rules:
            self.rules[name] = _PRIMITIVES[name]
            for dep in _DEPENDS.get(name, ()):
                self.primitive(dep)
        return name

    def resolve(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#/"):
            raise ValueError(f"only local $ref is supported, got {ref!r}")
        node: Any = self.root_schema
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return dict(node)

    def visit(self, schema: dict[str, Any] | bool, name: str) -> str:
        """The name of a rule matching `schema` (plus its trailing space)."""
        if schema is True or schema == {}:
            return self.primitive("value")
        if not isinstance(schema, dict):
            raise ValueError(f"unsupported schema at {name!r}: {schema!r}")
        if "$ref" in schema:
            return self.visit(self.resolve(schema["$ref"]), name)
        if "const" in schema:
            return self.add(name, f"{json_literal(schema['const'])} {self.primitive('space')}")
        if "enum" in schema:
            if not schema["enum"]:
                raise ValueError(f"an empty enum at {name!r} matches nothing")
            options = alternatives([_compact(v) for v in schema["enum"]])
            return self.add(name, f"({options}) {self.primitive('space')}")
        for key in ("anyOf", "oneOf"):
            if key in schema:
                alts = [self.visit(sub, f"{name}-{i}") for i, sub in enumerate(schema[key])]
                return self.add(name, " | ".join(alts))
        if "allOf" in schema and len(schema["allOf"]) == 1:
            return self.visit(schema["allOf"][0], name)
        kind = schema.get("type")
        if isinstance(kind, list):
            alts = [self.visit({**schema, "type": k}, f"{name}-{k}") for k in kind]
            return self.add(name, " | ".join(alts))
        handler = {
            "object": self.object_rule,
            "array": self.array_rule,
            "string": self.string_rule,
            "integer": self.integer_rule,
            "number": self.number_rule,
        }.get(kind or "")
        if handler is not None:
            return handler(schema, name)
        if kind in ("boolean", "null"):
            return self.primitive(kind)
        if kind is None:
            return self.primitive("value")
        raise ValueError(f"unsupported JSON Schema type {kind!r} at {name!r}")

    def object_rule(self, schema: dict[str, Any], name: str) -> str:
        properties: dict[str, Any] = schema.get("properties") or {}
        space = self.primitive("space")
        if not properties:
            extra = schema.get("additionalProperties", True)
            if extra is False:
                return self.add(name, f'"{{" {space} "}}" {space}')
            value = self.visit(extra if isinstance(extra, dict) else True, f"{name}-value")
            pair = f'{self.primitive("string")} ":" {space} {value}'
            return self.add(name, f'"{{" {space} ({pair} ("," {space} {pair})*)? "}}" {space}')
        pairs = []
        for key, sub in properties.items():
            value = self.visit(sub, f"{name}-{key}")
            pairs.append(f'{gbnf_literal(json.dumps(key, ensure_ascii=False))} {space} ":" {space} {value}')
        body = f' "," {space} '.join(pairs)
        return self.add(name, f'"{{" {space} {body} "}}" {space}')

    def array_rule(self, schema: dict[str, Any], name: str) -> str:
        space = self.primitive("space")
        prefix = schema.get("prefixItems")
        if prefix:
            items = [self.visit(sub, f"{name}-{i}") for i, sub in enumerate(prefix)]
            body = f' "," {space} '.join(items)
            return self.add(name, f'"[" {space} {body} "]" {space}')
        item = self.visit(schema.get("items", True), f"{name}-item")
        low, high = int(schema.get("minItems", 0)), schema.get("maxItems")
        if high is not None and int(high) == 0:
            return self.add(name, f'"[" {space} "]" {space}')
        more_high = None if high is None else int(high) - 1
        inner = f'{item} ("," {space} {item}){_repeat(max(low - 1, 0), more_high)}'
        if low == 0:
            inner = f"({inner})?"
        return self.add(name, f'"[" {space} {inner} "]" {space}')

    def string_rule(self, schema: dict[str, Any], name: str) -> str:
        low, high = int(schema.get("minLength", 0)), schema.get("maxLength")
        if low == 0 and high is None:
            return self.primitive("string")
        count = _repeat(low, None if high is None else int(high))
        return self.add(name, f'"\\"" {self.primitive("char")}{count} "\\"" {self.primitive("space")}')

    def integer_rule(self, schema: dict[str, Any], name: str) -> str:
        low, high = _bounds(schema, integer=True)
        space = self.primitive("space")
        if low is not None and high is not None:
            if low > high:
                raise ValueError(f"an empty integer range at {name!r}: {low} > {high}")
            return self.add(name, f"({integer_range(int(low), int(high))}) {space}")
        if low is not None and low >= 1:
            return self.add(name, f"[1-9] [0-9]{{0,15}} {space}")
        if low is not None and low >= 0:
            return self.add(name, f'("0" | [1-9] [0-9]{{0,15}}) {space}')
        return self.primitive("integer")

    def number_rule(self, schema: dict[str, Any], name: str) -> str:
        low, high = _bounds(schema, integer=False)
        space = self.primitive("space")
        exclusive = "exclusiveMinimum" in schema or "exclusiveMaximum" in schema
        if (
            low is not None
            and high is not None
            and not exclusive
            and float(low).is_integer()
            and float(high).is_integer()
            and 0 <= low < high
        ):
            # Integer part in [low, high), any fraction; or exactly `high`, with zero fraction at most.
            below = integer_range(int(low), int(high) - 1)
            top = gbnf_literal(str(int(high)))
            body = f'({below}) ("." [0-9]{{1,6}})? | {top} ("." "0"{{1,6}})?'
            return self.add(name, f"({body}) {space}")
        if low is not None and low >= 0:
            return self.add(name, f'("0" | [1-9] [0-9]{{0,15}}) ("." [0-9]{{1,15}})? {space}')
        return self.primitive("number")

    def grammar(self, root: str) -> str:
        lines = [f"root ::= {root}"]
        lines += [f"{name} ::= {body}" for name, body in self.rules.items()]
        return "\n".join(lines) + "\n"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def alternatives(texts: list[str]) -> str:
    """A GBNF alternation matching exactly `texts`, factored by common prefix so that values sharing a
    start share one parse stack: ["sad", "surprised"] -> `"s" ("ad" | "urprised")`."""
    trie: dict[str, Any] = {}
    for text in dict.fromkeys(texts):
        node = trie
        for ch in text:
            node = node.setdefault(ch, {})
        node[""] = {}  # the end of a value (no character is "")
    return _trie_rule(trie)


def _trie_rule(node: dict[str, Any]) -> str:
    """The alternation below a trie node (a node never both ends a value and is the root: values differ)."""
    options = []
    for ch, child in node.items():
        if ch == "":
            continue
        run = ch
        while len(child) == 1 and "" not in child:  # a single path: one literal, not one rule per char
            ((ch, child),) = child.items()
            run += ch
        literal = gbnf_literal(run)
        if list(child) == [""]:
            options.append(literal)
        elif "" in child:  # a value ends here and longer ones go on: "1" ("0")?
            options.append(f"{literal} ({_trie_rule(child)})?")
        else:
            options.append(f"{literal} ({_trie_rule(child)})")
    return " | ".join(options)


def integer_range(low: int, high: int) -> str:
    """A GBNF alternation of the decimal integers from `low` to `high`, as digit patterns: a handful of
    alternatives whatever the width of the range (0-100: `[0-9] | [1-9] [0-9] | "100"`)."""
    if low < 0:
        negative = f'"-" ({_natural_range(max(1, -high), -low)})'
        return negative if high < 0 else f"{negative} | {_natural_range(0, high)}"
    return _natural_range(low, high)


def _natural_range(low: int, high: int) -> str:
    parts: list[str] = []
    full: list[int] = []  # widths of whole blocks (10-99, 100-999...) in a row: one rule for all of them
    while low <= high:  # split by digit count: [7, 123] -> [7, 9] [10, 99] [100, 123]
        width = len(str(low))
        top = min(high, 10**width - 1)
        if low == (10 ** (width - 1) if width > 1 else 1) and top == 10**width - 1:
            full.append(width)
        else:
            parts += _whole_blocks(full) + _same_width(str(low), str(top))
            full = []
        low = top + 1
    return " | ".join(parts + _whole_blocks(full))


def _whole_blocks(widths: list[int]) -> list[str]:
    """[2, 3, 4] (all of 10-9999) -> `[1-9] [0-9]{1,3}`."""
    if not widths:
        return []
    low, high = widths[0] - 1, widths[-1] - 1  # digits after the first
    if high == 0:
        return ["[1-9]"]
    count = f"{{{low},{high}}}" if low != high else ("" if low == 1 else f"{{{low}}}")
    return [f"[1-9] [0-9]{count}"]


def _same_width(low: str, high: str) -> list[str]:
    """Digit patterns for the numbers from `low` to `high`, both written with the same number of digits."""
    if low == high:
        return [gbnf_literal(low)]
    if len(low) == 1:
        return [f"[{low}-{high}]"]
    if low[0] == high[0]:
        inner = _same_width(low[1:], high[1:])
        rest = inner[0] if len(inner) == 1 else f"({' | '.join(inner)})"
        return [f"{gbnf_literal(low[0])} {rest}"]
    width = len(low) - 1
    out: list[str] = []
    first, last = int(low[0]), int(high[0])
    if low[1:] != "0" * width:  # the first leading digit only covers part of its block
        out += _same_width(low, low[0] + "9" * width)
        first += 1
    tail_partial = high[1:] != "9" * width
    if tail_partial:
        last -= 1
    if first <= last:
        lead = gbnf_literal(str(first)) if first == last else f"[{first}-{last}]"
        out.append(f"{lead} [0-9]" + (f"{{{width}}}" if width > 1 else ""))
    if tail_partial:
        out += _same_width(high[0] + "0" * width, high)
    return out


def _repeat(low: int, high: int | None) -> str:
    """A GBNF repetition suffix; llama.cpp treats a bound above 2000 as none, so say so explicitly."""
    if high is None or high > MAX_BOUNDED_REPETITION:
        return f"{{{low},}}"
    return f"{{{low},{high}}}"


def _bounds(schema: dict[str, Any], *, integer: bool) -> tuple[float | None, float | None]:
    low = schema.get("minimum")
    high = schema.get("maximum")
    if "exclusiveMinimum" in schema:
        low = schema["exclusiveMinimum"] + (1 if integer else 0)
    if "exclusiveMaximum" in schema:
        high = schema["exclusiveMaximum"] - (1 if integer else 0)
    if integer:
        low = math.ceil(low) if low is not None else None
        high = math.floor(high) if high is not None else None
    return low, high


def json_schema_to_gbnf(schema: dict[str, Any]) -> str:
    """A GBNF grammar (llama.cpp syntax) whose sentences are compact JSON documents valid for `schema`.

    Args:
        schema: a JSON Schema, e.g. `backend.llm.base.json_schema_for(Model)`.

    Returns:
        The grammar text; its start rule is `root`.

    Raises:
        ValueError: the schema uses a construct the converter does not cover (non-local $ref, unknown type).
    """
    converter = _Converter(schema)
    root = converter.visit(schema, "reply")
    return converter.grammar(root)
