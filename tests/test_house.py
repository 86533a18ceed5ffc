"""The house rules that no single module can check: layers, import cycles, one exception module.

The import graph is read from the source (``ast``), not by importing: it sees
every import, also those inside functions, except the ones under
``if TYPE_CHECKING:``, which never run. Imports inside functions count:
deferring an import hides a cycle from Python's import machinery, but the
modules still need each other whenever that code runs, DVC's stage deps
(the import closures) include them, and the one cycle this project had,
dense <-> the retriever registry, was made of nothing else.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "groundkit"

# Lowest first; a module may import from its own layer or any below it, never from above.
LAYERS = ("infrastructure", "config", "corpus", "retrieval", "execution", "scoring", "pipeline", "reports", "labels",
          "api", "cli")
INFRASTRUCTURE = {"groundkit.errors"}  # and every private groundkit._name module
# The table of retriever kinds is configuration: it says what retrieve.retriever may name, and config
# validates params against it. It imports no retriever's code: each kind names its builder as a string.
# The report stage's step renders a report: it lives with the steps, the stage table names it as a
# string, and no pipeline module imports it.
# A judge's name (judge.model) is parsed by config too: the parser is a leaf of its own.
PLACED = {"groundkit.retrieval.kinds": "config", "groundkit.scoring.names": "config", "groundkit.labels.spec": "config",
          "groundkit.pipeline.steps.report": "reports"}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def groundkit_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node that can run, skipping the bodies of ``if TYPE_CHECKING:`` (their ``else`` runs)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def imported_modules(source: str, name: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` (source ``source``) imports at run time."""
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package holding `name`
                base = name.split(".")[: len(name.split(".")) - node.level]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            # `from groundkit.corpus import spans` imports the module groundkit.corpus.spans.
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {module for module in found if module in known and module != name}


def import_graph() -> dict[str, set[str]]:
    modules = groundkit_modules()
    known = set(modules)
    return {name: imported_modules(path.read_text(encoding="utf-8"), name, known) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for child in sorted(graph.get(node, ())):
            if child not in index:
                visit(child)
                low[node] = min(low[node], low[child])
            elif child in on_stack:
                low[node] = min(low[node], index[child])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def layer(module: str) -> str | None:
    """The layer ``module`` belongs to, or None for the package's own ``__init__`` (the public facade)."""
    if module == "groundkit":
        return None
    if module in PLACED:
        return PLACED[module]
    if module in INFRASTRUCTURE or module.split(".")[1].startswith("_"):
        return "infrastructure"
    top = module.split(".")[1]
    return top if top in LAYERS else "unassigned"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for module, targets in sorted(graph.items()):
        here = layer(module)
        if here is None:
            continue
        for target in sorted(targets):
            there = layer(target)
            if there is not None and LAYERS.index(there) > LAYERS.index(here):
                wrong.append(f"{module} ({here}) imports {target} ({there})")
    return wrong


def exception_classes(sources: dict[str, str]) -> dict[str, str]:
    """Every class defined in ``sources`` (module -> source) that derives from an exception, by class name.

    A base is an exception when it is a builtin exception, is named like one (``yaml.YAMLError``),
    or is itself such a class found in ``sources`` (repeated until nothing new is found).
    """
    builtin = {name for name, value in vars(builtins).items()
               if isinstance(value, type) and issubclass(value, BaseException)}
    classes = [(module, node) for module, source in sources.items()
               for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef)]
    found: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for module, node in classes:
            if node.name in found:
                continue
            bases = {base.id if isinstance(base, ast.Name) else base.attr
                     for base in node.bases if isinstance(base, ast.Name | ast.Attribute)}
            if any(b in builtin or b in found or b.endswith(("Error", "Exception")) for b in bases):
                found[node.name] = module
                changed = True
    return found


# --- the rules, on the real code


def test_every_module_has_a_layer():
    assert [m for m in groundkit_modules() if layer(m) == "unassigned"] == []


def test_imports_point_down_the_layers():
    assert upward_imports(import_graph()) == []


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_every_exception_class_lives_in_the_errors_module():
    sources = {name: path.read_text(encoding="utf-8") for name, path in groundkit_modules().items()}
    sources.update({f"stages.{p.stem}": p.read_text(encoding="utf-8") for p in (REPO / "stages").glob("*.py")})
    found = exception_classes(sources)
    assert {name: module for name, module in found.items() if module != "groundkit.errors"} == {}
    assert {"GroundkitError", "InputError", "JSONLineError", "Terminated"} <= set(found)


MAX_LINES = 600
"""A module longer than this holds more than one concept: split it (STYLE.md, one module per concept)."""

STORE = "groundkit.pipeline.store"
PROCESS_TABLES = {
    "groundkit._atomic": {"_syncers"},  # scratch folders being synced now: durability, no values are shared
    "groundkit._lines": {"_KEYS"},  # the JSON of each record key: a pure function's results, any caller's
    "groundkit.retrieval.trec": {"_RANK_COLUMN"},  # " 1 ", " 2 ", ...: the same text for every caller
}
"""Module-level tables filled at run time outside the store, each a pure function's results, never a run's data."""


def empty_tables(source: str) -> set[str]:
    """Names bound at module level to an empty dict, list or set: tables a module fills as it runs."""
    found = set()
    for node in ast.parse(source).body:
        targets, value = ([node.target], node.value) if isinstance(node, ast.AnnAssign) else \
            (node.targets, node.value) if isinstance(node, ast.Assign) else ([], None)
        literal = isinstance(value, ast.Dict | ast.List | ast.Set) and \
            not getattr(value, "keys", getattr(value, "elts", 1))
        call = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
            value.func.id in {"dict", "list", "set"} and not value.args
        empty = literal or call
        if empty:
            found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def shares_in_run(source: str) -> bool:
    """Whether a module keeps values per thread or context: how in-run sharing was reached before the store."""
    return any(isinstance(node, ast.Import | ast.ImportFrom) and any(
        name in {"contextvars"} for name in ([a.name for a in node.names] if isinstance(node, ast.Import)
                                              else [node.module or ""]))
               for node in ast.walk(ast.parse(source))) or "threading.local" in source


def splits_a_retriever_string(source: str) -> bool:
    """Whether a module splits a retriever string itself (``retriever.split``, ``spec.split(":")``)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in {"split", "partition"}:
            target = ast.unparse(node.func.value)
            if "retriever" in target or target in {"spec", "kind_spec"}:
                return True
    return False


def plants_a_module(source: str) -> bool:
    """Whether ``sys.modules[...] = ...`` (or ``.setdefault``/``.update``) appears."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) and ast.unparse(t.value) == "sys.modules"
                                                for t in node.targets):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                ast.unparse(node.func.value) == "sys.modules" and node.func.attr in {"setdefault", "update"}:
            return True
    return False


def test_only_the_store_shares_what_a_run_read_or_wrote():
    for name, path in groundkit_modules().items():
        source = path.read_text(encoding="utf-8")
        if name == STORE:
            continue
        assert not shares_in_run(source), name
        assert empty_tables(source) <= PROCESS_TABLES.get(name, set()), name
        assert "RunStore(" not in source or name == "groundkit.pipeline.runner", name


def test_the_retriever_string_is_parsed_in_one_place():
    offenders = [name for name, path in groundkit_modules().items()
                 if name != "groundkit.retrieval.kinds" and splits_a_retriever_string(path.read_text(encoding="utf-8"))]
    assert offenders == []


def test_no_module_is_longer_than_the_limit():
    long = {name: n for name, path in groundkit_modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_no_module_is_planted_in_sys_modules():
    files = [*sorted((REPO / "groundkit").rglob("*.py")), *sorted((REPO / "stages").rglob("*.py"))]
    assert [str(p.relative_to(REPO)) for p in files if plants_a_module(p.read_text(encoding="utf-8"))] == []


# --- the checkers, on inputs whose answer is known: each rule can fail


def test_cycles_finds_a_cycle_and_only_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_imports_inside_functions_count_and_type_checking_ones_do_not():
    source = ("from typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n    from groundkit.cli import main\n"
              "def f():\n    from groundkit.reports import compare\n"
              "from . import spans\n")
    known = {"groundkit.cli", "groundkit.reports", "groundkit.reports.compare", "groundkit.corpus.spans"}
    assert imported_modules(source, "groundkit.corpus.passage", known) == {
        "groundkit.reports", "groundkit.reports.compare", "groundkit.corpus.spans"}


def test_an_upward_import_is_reported():
    graph = {"groundkit.config": {"groundkit.corpus.audit", "groundkit.errors"}, "groundkit.corpus.audit": set()}
    assert upward_imports(graph) == ["groundkit.config (config) imports groundkit.corpus.audit (corpus)"]


def test_exception_classes_follow_bases_across_modules():
    sources = {"m1": "class A(ValueError):\n    pass\nclass Plain:\n    pass\n",
               "m2": ("import yaml\nclass B(A):\n    pass\nclass C(yaml.YAMLError):\n    pass\n"
                      "class D(Plain):\n    pass\n")}
    assert exception_classes(sources) == {"A": "m1", "B": "m2", "C": "m2"}


def test_the_new_rules_see_what_they_forbid():
    assert empty_tables("_memo: dict[str, int] = {}\nTABLE = {'a': 1}\nseen = set()\n") == {"_memo", "seen"}
    assert shares_in_run("import contextvars\n") and shares_in_run("x = threading.local()\n")
    assert not shares_in_run("import threading\n")
    assert splits_a_retriever_string("_, m, f = params.retrieve.retriever.split(':')\n")
    assert splits_a_retriever_string("name = spec.partition(':')\n")
    assert not splits_a_retriever_string("host, port = address.split(':')\n")
    assert plants_a_module("import sys\nsys.modules['x'] = object()\n")
    assert plants_a_module("sys.modules.setdefault('x', m)\n")
    assert not plants_a_module("m = sys.modules.get('x')\n")
