"""The code's own structure: imports run down the layers, no cycles, SQL only where a concept keeps it, small functions.

Every import of a `backend/` module counts, wherever it is written: at the top, inside a function (a lazy
import is still a dependency), under `TYPE_CHECKING`. A module's concept is its folder under `backend/`
(`backend/memory/index.py` belongs to `memory`); a module directly under `backend/` is its own concept.
A concept's `cli.py` is an entry point (it builds the app or a client to run a command), so it sits with
`app` and `cli` at the top whatever its folder.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

BACKEND = Path(__file__).resolve().parent.parent / "backend"

#: Top to bottom. A module may import its own concept, any concept in a lower layer, and a concept of its
#: own layer as long as the concepts' graph stays acyclic (checked below).
LAYERS: list[set[str]] = [
    {"app", "cli", "simulate", "protocol"},  # entry points and tools that drive the whole server
    {"api"},  # HTTP routes and their dependencies (api/deps.py)
    {"security"},  # HTTP middleware, keys, throttles: under the routes that use them
    {"conversation", "council", "planning", "interview", "transfer", "scripted"},  # what characters do
    {"intention", "memory", "emotion", "world", "player", "action"},  # the state of a mind and of the town
    {"llm", "events", "jobs", "moderation"},  # infrastructure (moderation: config and errors only)
    {"storage"},  # engine, sessions, migrations, retention
    {"config", "errors", "gametime", "text", "ids", "body", "logs", "tasks", "backend"},  # basics
]
LAYER = {concept: depth for depth, concepts in enumerate(LAYERS) for concept in concepts}
ENTRY = 0

MAX_FUNCTION_LINES = 60
SQL_PACKAGES = ("sqlmodel", "sqlalchemy")


def _modules() -> dict[str, Path]:
    found = {}
    for path in BACKEND.rglob("*.py"):
        parts = path.relative_to(BACKEND.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def concept(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer(module: str) -> int:
    if module.endswith(".cli"):
        return ENTRY
    return LAYER[concept(module)]


def _imports(module: str) -> Iterator[str]:
    """Every name `module` imports (absolute), as written in any import statement anywhere in the file."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            yield source
            yield from (f"{source}.{alias.name}" for alias in node.names)


def _graph() -> dict[str, set[str]]:
    return {m: {t for t in _imports(m) if t in MODULES and t != m} for m in MODULES}


GRAPH = _graph()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _concept_graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for source, targets in GRAPH.items():
        if layer(source) == ENTRY:
            continue  # entry points may reach anything; they are nobody's dependency
        for target in targets:
            if concept(target) != concept(source):
                edges[concept(source)].add(concept(target))
    return edges


CONCEPTS = sorted({concept(m) for m in MODULES})


def test_every_concept_has_a_layer() -> None:
    assert not set(CONCEPTS) - set(LAYER), "give these concepts a layer in LAYERS"


@pytest.mark.parametrize("name", CONCEPTS)
def test_no_module_import_cycle(name: str) -> None:
    cycles = [c for c in _cycles(GRAPH) if any(concept(m) == name for m in c)]
    assert not cycles, f"import cycles through {name}: {cycles}"


@pytest.mark.parametrize("name", CONCEPTS)
def test_no_concept_cycle(name: str) -> None:
    cycles = [c for c in _cycles(_concept_graph()) if name in c]
    witnesses = [
        f"{s} -> {t}"
        for cycle in cycles
        for s, targets in GRAPH.items()
        for t in targets
        if concept(s) in cycle and concept(t) in cycle and concept(s) != concept(t) and layer(s) != ENTRY
    ]
    assert not cycles, f"concepts import each other: {cycles}; imports: {witnesses}"


@pytest.mark.parametrize("name", CONCEPTS)
def test_imports_run_down_the_layers(name: str) -> None:
    upward = [
        f"{source} -> {target}" + (" (a cli module is an entry point)" if target.endswith(".cli") else "")
        for source, targets in GRAPH.items()
        if concept(source) == name and layer(source) != ENTRY
        for target in targets
        if layer(target) < layer(source)
    ]
    assert not upward, "imports that run up the layer order:\n" + "\n".join(sorted(upward))


def _may_use_sql(module: str) -> bool:
    parts = module.split(".")
    if concept(module) == "storage" or module in ("backend.config", "backend.api.deps"):
        return True
    return len(parts) >= 3 and parts[2] in ("repo", "models")


@pytest.mark.parametrize("name", CONCEPTS)
def test_sql_only_in_repositories_models_and_storage(name: str) -> None:
    offenders = sorted(
        module
        for module in MODULES
        if concept(module) == name
        and not _may_use_sql(module)
        and any(imported.split(".")[0] in SQL_PACKAGES for imported in _imports(module))
    )
    assert not offenders, (
        f"these modules import sqlmodel/sqlalchemy; move their SQL to {name}/repo.py: {offenders}"
    )


@pytest.mark.parametrize("name", CONCEPTS)
def test_no_function_over_60_lines(name: str) -> None:
    long = []
    for module, path in MODULES.items():
        if concept(module) != name:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{module}.{node.name} ({length} lines)")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


@pytest.mark.parametrize("name", [c for c in CONCEPTS if (BACKEND / c).is_dir()])
def test_each_concept_says_what_it_owns_and_may_import(name: str) -> None:
    folder = BACKEND / name
    readme = folder / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    text += ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    assert "Owns" in text and "Imports" in text, (
        f"backend/{name}: say in README.md or the package docstring what it owns ('Owns: ...') and what it "
        "may import ('Imports: ...')"
    )


def test_the_checks_catch_what_they_name() -> None:
    """The walker sees a cycle, an upward import and a lazy import the way the tests above rely on."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert layer("backend.llm.base") > layer("backend.memory.service") > layer("backend.api.memory")
    assert layer("backend.council.cli") == ENTRY
    lazy = "backend.conversation.service"
    assert any(t.startswith("backend.") for t in _imports(lazy))


def test_every_backend_import_names_a_module_that_exists() -> None:
    """A moved or deleted module leaves no import behind (mypy ignores missing imports for third parties)."""
    missing = sorted(
        f"{module} imports {target}"
        for module in MODULES
        for target in _imports(module)
        if target.startswith("backend.")
        and target not in MODULES
        and target.rpartition(".")[0] not in MODULES
    )
    assert not missing, missing
