"""JSON Schema -> GBNF grammar for llama.cpp's constrained decoding (the `llamacpp` provider).

Why our own converter rather than `llama_cpp.LlamaGrammar.from_json_schema`:
- Its string rule is `[^"\\]`, which lets raw control characters (newlines, tabs) into JSON strings
  (llama-cpp-python issue #1259): such replies fail to parse. Here string characters exclude `\\x00-\\x1F`
  and `\\x7F`, as llama.cpp's own C++ converter does; escapes (`\\n`) stay allowed.
- It ignores `minimum`/`maximum`, so a 1-10 importance may come out as 57. Small integer ranges are
  enumerated here, and bounded numbers keep their integer part in range.

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

#: Integer ranges up to this many values are enumerated exactly.
MAX_ENUMERATED_RANGE = 256

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
            options = " | ".join(json_literal(v) for v in schema["enum"])
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
        if low is not None and high is not None and 0 <= high - low < MAX_ENUMERATED_RANGE:
            options = " | ".join(gbnf_literal(str(v)) for v in range(int(low), int(high) + 1))
            return self.add(name, f"({options}) {space}")
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
            and high - low < MAX_ENUMERATED_RANGE
        ):
            # Integer part in [low, high), any fraction; or exactly `high`, with zero fraction at most.
            below = " | ".join(gbnf_literal(str(v)) for v in range(int(low), int(high)))
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
