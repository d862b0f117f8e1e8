"""A small GBNF recogniser for tests: does a grammar (llama.cpp syntax, one rule per line) accept a text?

Covers what `backend.llm.grammar` emits: literals, character classes (ranges, negation, escapes), groups,
alternation, rule references and the `? * + {m} {m,} {m,n}` repetitions. Backtracking with memoisation;
meant for short texts.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

Node = tuple[Any, ...]
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "]": "]", "[": "[", "-": "-", "/": "/"}


class _Parser:
    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def char(self) -> str:
        ch = self.text[self.pos]
        self.pos += 1
        if ch != "\\":
            return ch
        code = self.text[self.pos]
        self.pos += 1
        if code in "xu":
            width = 2 if code == "x" else 4
            value = chr(int(self.text[self.pos : self.pos + width], 16))
            self.pos += width
            return value
        return _ESCAPES[code]

    def alternation(self) -> Node:
        options = [self.sequence()]
        while self.peek() == "|":
            self.pos += 1
            options.append(self.sequence())
        return ("alt", tuple(options))

    def sequence(self) -> Node:
        items = []
        while self.peek() not in ("", "|", ")"):
            items.append(self.postfix(self.atom()))
        return ("seq", tuple(items))

    def atom(self) -> Node:
        ch = self.peek()
        if ch == '"':
            self.pos += 1
            chars = []
            while self.text[self.pos] != '"':
                chars.append(self.char())
            self.pos += 1
            return ("lit", "".join(chars))
        if ch == "[":
            self.pos += 1
            negate = self.text[self.pos] == "^"
            self.pos += negate
            ranges = []
            while self.text[self.pos] != "]":
                low = self.char()
                high = low
                if self.text[self.pos] == "-" and self.text[self.pos + 1] != "]":
                    self.pos += 1
                    high = self.char()
                ranges.append((low, high))
            self.pos += 1
            return ("class", negate, tuple(ranges))
        if ch == "(":
            self.pos += 1
            node = self.alternation()
            assert self.peek() == ")"
            self.pos += 1
            return node
        match = re.compile(r"[a-zA-Z0-9-]+").match(self.text, self.pos)
        assert match, f"cannot parse at {self.text[self.pos :]!r}"
        self.pos = match.end()
        return ("ref", match.group())

    def postfix(self, node: Node) -> Node:
        ch = self.text[self.pos] if self.pos < len(self.text) else ""
        bounds = {"?": (0, 1), "*": (0, None), "+": (1, None)}.get(ch)
        if bounds:
            self.pos += 1
            return ("rep", node, *bounds)
        match = re.compile(r"\{(\d+)(,(\d*))?\}").match(self.text, self.pos)
        if match:
            self.pos = match.end()
            low = int(match.group(1))
            high = low if match.group(2) is None else (int(match.group(3)) if match.group(3) else None)
            return ("rep", node, low, high)
        return node


def parse_gbnf(grammar: str) -> dict[str, Node]:
    rules = {}
    for line in grammar.strip().splitlines():
        name, _, body = line.partition(" ::= ")
        rules[name.strip()] = _Parser(body).alternation()
    return rules


def accepts(grammar: str, text: str) -> bool:
    """True when the grammar's `root` derives exactly `text`."""
    rules = parse_gbnf(grammar)

    @cache
    def ends(node: Node, i: int) -> frozenset[int]:
        kind = node[0]
        if kind == "lit":
            return frozenset([i + len(node[1])]) if text.startswith(node[1], i) else frozenset()
        if kind == "class":
            if i >= len(text):
                return frozenset()
            inside = any(low <= text[i] <= high for low, high in node[2])
            return frozenset([i + 1]) if inside != node[1] else frozenset()
        if kind == "ref":
            return ends(rules[node[1]], i)
        if kind == "alt":
            return frozenset().union(*(ends(option, i) for option in node[1]))
        if kind == "seq":
            positions = frozenset([i])
            for item in node[1]:
                positions = frozenset().union(*(ends(item, p) for p in positions)) if positions else positions
            return positions
        _, inner, low, high = node
        result, frontier, count = set(), {i}, 0
        while frontier and (high is None or count <= high):
            if count >= low:
                result |= frontier
            if high is not None and count == high:
                break
            frontier = set().union(*(ends(inner, p) for p in frontier)) - (result if count >= low else set())
            count += 1
        return frozenset(result)

    return len(text) in ends(rules["root"], 0)
