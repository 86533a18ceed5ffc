"""Metric names are built in one place: groundkit/scoring/names.py.

Every other module asks the registry (``Measure.label``, ``Metric.name``) for a name. This test
reads groundkit's source and fails where an f-string, ``%`` or ``.format()`` or a ``+`` chain
puts a cut-off into a metric name itself, as ``f"recall@{k}"`` or ``f"recall@{b}chars"`` once did in
five modules.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "groundkit"
REGISTRY = PACKAGE / "scoring" / "names.py"

HOLE = "\x00"  # stands for an interpolated value in a template; never in source text
# A metric name with a hole for its cut-off: `name@<hole>`, `<hole>@<hole>`, or `<hole>chars` (a budget).
NAME_TEMPLATE = re.compile(rf"(?:[A-Za-z_]\w*|{HOLE})@{HOLE}|{HOLE}chars\b")
PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[diouxXeEfFgGcrsa]")
FORMAT_FIELD = re.compile(r"\{[^{}]*\}")


def _template(node: ast.expr) -> str | None:
    """The text ``node`` builds, with HOLE for every value put into it; None if it is not a string build."""
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else HOLE
                       for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) \
            and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
        return PERCENT_SPEC.sub(HOLE, node.left.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
        return FORMAT_FIELD.sub(HOLE, node.func.value.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts = [_template(node.left), _template(node.right)]
        if all(p is None for p in parts) and not any(
                isinstance(side, ast.Constant) and isinstance(side.value, str) for side in (node.left, node.right)):
            return None
        return "".join(HOLE if p is None else p for p in parts)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def built_metric_names(source: str) -> list[int]:
    """Lines of ``source`` that build a metric name by string formatting."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant):
            continue  # a literal name ("mrr", "recall@10" in a message) is not built
        text = _template(node) if isinstance(node, ast.expr) else None
        if text is not None and NAME_TEMPLATE.search(text):
            found.add(node.lineno)
    return sorted(found)


@pytest.mark.parametrize("snippet", [
    'name = f"recall@{k}"',
    'name = f"ndcg@{ks[-1]}"',
    'name = f"chars@{k:d}"',
    'name = f"recall@{b}chars"',
    'name = f"{measure}@{k}"',
    'name = "chars@%d" % k',
    'name = "recall@%(b)schars" % {"b": b}',
    'name = "ndcg@{}".format(k)',
    'name = "recall@{budget}chars".format(budget=b)',
    'name = "mrr@" + str(k)',
    'name = "recall@" + str(b) + "chars"',
    'names = [f"chars@{k}" for k in ks]',
])
def test_each_way_of_building_a_name_is_found(snippet):
    assert built_metric_names(snippet) == [1]


@pytest.mark.parametrize("snippet", [
    'text = f"{value:.4f}"',
    'name = "recall@10"',
    'fix = f"lower retrieve.depth to {n}; MAP@1000 needs only 1000"',
    'header = f"budget_chars,{b}"',
    'text = f"{n} chars of context"',
    'path = "a" + "b"',
    'label = RECALL.label(k)',
])
def test_other_strings_are_not_taken_for_names(snippet):
    assert built_metric_names(snippet) == []


def test_the_registry_is_where_names_are_built():
    # The scan sees the registry's own construction, so it would see a copy of it anywhere else.
    assert built_metric_names(REGISTRY.read_text(encoding="utf-8"))


def test_no_metric_name_is_built_outside_the_registry():
    offences = [f"{path.relative_to(PACKAGE.parent)}:{line}"
                for path in sorted(PACKAGE.rglob("*.py")) if path != REGISTRY
                for line in built_metric_names(path.read_text(encoding="utf-8"))]
    assert offences == [], "ask groundkit.scoring.measures for metric names (Measure.label, Metric.name)"
