"""The house rules that no single module can check: layers, import cycles, one exception module.

The import graph is read from the source (``ast``), not by importing: it sees every static import,
also those inside functions and those under ``if TYPE_CHECKING:``. Imports inside functions count:
deferring an import hides a cycle from Python's import machinery, but the modules still need each
other whenever that code runs, DVC's stage deps (the import closures) include them, and the one
cycle this project had at run time, dense <-> the retriever registry, was made of nothing else.
Type-only imports count too (STYLE.md, rule 19): a reader and an IDE follow them, and a knot of
them is a plan nobody can read from one end. The only imports not followed are dotted strings in a
table (the stage table's steps, a kind's builder): an entry point, imported by name where it runs.
"""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "groundkit"

# Lowest first; a module may import from its own layer or any below it, never from above.
LAYERS = ("infrastructure", "config", "corpus", "retrieval", "execution", "scoring", "pipeline", "reports", "labels",
          "api", "cli")
INFRASTRUCTURE = {"groundkit.errors"}  # and every private groundkit._name module, and these packages:
INFRASTRUCTURE_PACKAGES = {"artifacts", "inputs", "console"}
# Two declaration tables sit with configuration, which validates params against them: the kinds of
# retriever (what retrieve.retriever may name; each kind names its builder as a string) and the grammar
# of measure names, and the table of chunker kinds (chunk.strategy; its builders are strings too). Each
# imports nothing above config, even for types, which the graph checks.
PLACED = {"groundkit.retrieval.kinds": "config", "groundkit.corpus.chunking.kinds": "config",
          "groundkit.scoring.names": "config", "groundkit.labels.spec": "config"}
# A judge's name (judge.model) is parsed by config too: the parser is a leaf of its own.


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def groundkit_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported_modules(source: str, name: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` (source ``source``) imports statically, types included.

    ``from P import m``, where ``P.m`` is a module, imports ``P.m``; ``from P import x`` of anything else
    imports ``P`` itself (a package's ``__init__``, for the names it defines or re-exports).
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package holding `name`
                base = name.split(".")[: len(name.split(".")) - node.level]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            submodules = {f"{target}.{alias.name}" for alias in node.names} & known
            found |= submodules
            if len(submodules) < len(node.names):
                found.add(target)
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
    top = module.split(".")[1]
    if module in INFRASTRUCTURE or top.startswith("_") or top in INFRASTRUCTURE_PACKAGES:
        return "infrastructure"
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
    "groundkit.artifacts.atomic": {"_syncers"},  # scratch folders being synced now: durability, no values are shared
    "groundkit.artifacts.lines": {"_KEYS"},  # the JSON of each record key: a pure function's results, any caller's
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


def test_imports_inside_functions_and_type_checking_ones_count():
    source = ("from typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n    from groundkit.cli import main\n"
              "else:\n    from groundkit.api import evaluate\n"
              "def f():\n    from groundkit.reports import compare\n"
              "from . import spans\n")
    known = {"groundkit.cli", "groundkit.api", "groundkit.reports", "groundkit.reports.compare",
             "groundkit.corpus", "groundkit.corpus.spans"}
    # `from groundkit.reports import compare` and `from . import spans` name modules: only those are imported.
    assert imported_modules(source, "groundkit.corpus.passage", known) == {
        "groundkit.cli", "groundkit.api", "groundkit.reports.compare", "groundkit.corpus.spans"}


def test_a_knot_of_type_only_imports_is_a_cycle():
    kinds = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from groundkit.execution import Engine\n"
    execution = "from groundkit.retrieval.kinds import Ranking\n"
    known = {"groundkit.retrieval.kinds", "groundkit.execution"}
    graph = {"groundkit.retrieval.kinds": imported_modules(kinds, "groundkit.retrieval.kinds", known),
             "groundkit.execution": imported_modules(execution, "groundkit.execution", known)}
    assert cycles(graph) == [["groundkit.execution", "groundkit.retrieval.kinds"]]


def test_no_arrow_runs_from_pipeline_to_reports():
    graph = import_graph()
    assert [(module, target) for module, targets in sorted(graph.items()) if layer(module) == "pipeline"
            for target in sorted(targets) if layer(target) == "reports"] == []


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


# --- a root that shows the rooms, and ARCHITECTURE.md held to the modules

ROOT_FILES = 12
"""``ls groundkit/*.py``: at most this many; helpers live in the packages of their concern."""

ARCHITECTURE = REPO / "ARCHITECTURE.md"


def documented_modules() -> dict[str, str]:
    """Each module of the package, dotted from groundkit, with its layer; a package ``__init__`` holding only a
    docstring is not a module of its own."""
    found = {}
    for name, path in groundkit_modules().items():
        body = [node for node in ast.parse(path.read_text(encoding="utf-8")).body
                if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
        if name != "groundkit" and (path.name != "__init__.py" or body):
            found[name.split(".", 1)[1]] = layer(name) or ""
    return found


def layer_table(text: str) -> dict[str, str]:
    """Each module the Layers table of ARCHITECTURE.md names in backticks, with the layer of its row."""
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    named = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0] in LAYERS:
            for token in re.findall(r"`([^`]+)`", cells[1]):
                named[token] = cells[0]
    return named


def recipe(text: str, thing: str) -> str:
    """The bullet of "Where a new thing goes" for ``thing`` (e.g. "A measure")."""
    section = text.split("## Where a new thing goes", 1)[1].split("\n## ", 1)[0]
    return section.split(f"- **{thing}**", 1)[1].split("\n- **", 1)[0]


def defined_names(path: Path) -> set[str]:
    """Names bound at module level in ``path`` (or in every module under it): assignments, defs, classes."""
    names: set[str] = set()
    for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
        for node in ast.parse(file.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                names.add(node.name)
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) else []
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def test_the_package_root_lists_at_most_twelve_files():
    assert len(sorted(PACKAGE.glob("*.py"))) <= ROOT_FILES


def test_architecture_names_every_module_in_its_layer_and_nothing_else():
    assert layer_table(ARCHITECTURE.read_text(encoding="utf-8")) == documented_modules()


def test_the_recipe_for_a_new_measure_names_what_exists():
    bullet = recipe(ARCHITECTURE.read_text(encoding="utf-8"), "A measure")
    tokens = re.findall(r"`([^`]+)`", bullet)
    paths = [(PACKAGE.parent if t.startswith("tests/") else PACKAGE) / t for t in tokens if "/" in t]
    assert paths and all(path.exists() for path in paths), paths
    # Code, not prose: a token that is an identifier or an assignment/call of identifiers (`MEASURE = Measure(...)`),
    # leaving out names of things outside Python (`@Nchars` cut-offs, `score-trec`, the `groundkit.measures` group).
    code = [t for t in tokens
            if "/" not in t and re.fullmatch(r"[A-Za-z_][\w =(.)]*", t) and "." not in t.replace("...", "")]
    names = {name for t in code for name in re.findall(r"[A-Z]\w*", t)}  # the classes and constants it names
    defined = set().union(*(defined_names(path) for path in paths))
    assert names and names <= defined, names - defined
    # Each public module of scoring/measures/ follows the recipe: it defines MEASURE.
    for module in sorted((PACKAGE / "scoring" / "measures").glob("[!_]*.py")):
        assert "MEASURE" in defined_names(module), module.name


def test_the_architecture_checks_see_a_drift():
    text = "## Layers\n\n| layer | holds |\n| --- | --- |\n| corpus | `corpus.passage`, `corpus.gone` |\n\n## Next\n"
    assert layer_table(text) == {"corpus.passage": "corpus", "corpus.gone": "corpus"}
    steps = "## Where a new thing goes\n\n- **A measure**: call `MEASURES.register`.\n- **A stage**: x\n"
    assert recipe(steps, "A measure") == ": call `MEASURES.register`."
    assert "register" not in defined_names(PACKAGE / "scoring" / "measures" / "ndcg.py")


def test_the_modules_sharing_the_sweep_clone_are_scheduled_together():
    # conftest.py's scheduler keeps them on one worker; a module added to them without being listed builds the
    # clone again on the other worker (about 20 s of the suite, and nothing fails).
    from tests.conftest import SWEEP_CLONE_MODULES

    users = {str(path.relative_to(REPO)) for path in (REPO / "tests").rglob("test_*.py")
             if re.search(r"\bsweep_clone\b", path.read_text(encoding="utf-8"))}
    assert users == SWEEP_CLONE_MODULES


def test_the_modules_started_early_exist():
    # A module renamed but left in conftest.py's STARTED_EARLY would silently lose its place at the start.
    from tests.conftest import STARTED_EARLY

    assert all((REPO / module).is_file() for module in STARTED_EARLY)
