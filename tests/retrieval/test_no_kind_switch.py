"""The retriever kind is asked of the registry, never compared with a name outside it.

A comparison such as ``retriever == "dense"`` or ``retriever in ("dense", "hybrid")`` written in one more
module is how the kind came to be switched on in fifteen places; each copy is a place a new retriever has
to be remembered. This scan fails on any comparison of a retriever's name with a string literal in
groundkit/ and stages/ outside the table of kinds (groundkit/retrieval/kinds.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

REGISTRY = (REPO / "groundkit" / "retrieval" / "kinds.py",)


def _is_kind(node: ast.AST) -> bool:
    """An expression holding a retriever's name: ``params.retrieve.retriever`` or a variable named ``retriever``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "retriever"
    return isinstance(node, ast.Name) and node.id == "retriever"


def _literals(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, ast.Tuple | ast.List | ast.Set) and any(_literals(e) for e in node.elts)


def kind_switches(source: str) -> list[int]:
    """Line numbers where a retriever's name is compared with a string literal, or tested for a literal prefix."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_kind(side) for side in sides) and any(_literals(side) for side in sides):
                found.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in {"startswith", "endswith"} and _is_kind(node.func.value)):
            found.append(node.lineno)
    return found


def _modules() -> list[Path]:
    files = sorted((REPO / "groundkit").rglob("*.py")) + sorted((REPO / "stages").rglob("*.py"))
    return [path for path in files if path not in REGISTRY]


def test_no_module_outside_the_registry_switches_on_the_retriever_kind():
    offenders = [f"{path.relative_to(REPO)}:{line}" for path in _modules()
                 for line in kind_switches(path.read_text(encoding="utf-8"))]
    assert offenders == []


@pytest.mark.parametrize(
    "code",
    [
        'if params.retrieve.retriever == "external":\n    pass\n',
        'bm25 = params.retrieve.retriever == "bm25"\n',
        'x = retriever in ("dense", "hybrid")\n',
        'x = "hybrid" != self.retriever\n',
        'x = retriever.startswith("python:")\n',
        'x = retriever not in ["bm25", "hybrid"]\n',
    ],
)
def test_the_scan_sees_each_way_of_writing_a_switch(code):
    assert kind_switches(code) == [1]


@pytest.mark.parametrize(
    "code",
    [
        "x = Need.EMBEDDINGS in params.retrieve.kind.needs\n",
        'x = params.retrieve.depth == 100\n',
        'overrides = ["retrieve.retriever=external"]\n',
    ],
)
def test_asking_the_registry_is_no_switch(code):
    assert kind_switches(code) == []

