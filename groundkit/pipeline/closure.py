"""Which of groundkit's own source files a stage executes: its import closure, read from the source.

DVC re-runs a stage when one of its declared deps changes, so a stage's code deps must cover every
module of groundkit its script can import, at the top of a module or inside a function. The closure
is read from the syntax tree, never by importing, so it also holds the imports of branches a given
run does not take. Imports under ``if TYPE_CHECKING:`` never run and are left out. An import done
by name at run time (``importlib.import_module``) is invisible here: the caller adds that module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

TOP = "groundkit"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported_names(tree: ast.AST, package: str) -> set[str]:
    """Dotted module names (and ``module.attribute`` candidates) that ``tree`` imports at run time."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


def _module_file(root: Path, dotted: str) -> Path | None:
    candidate = root.joinpath(*dotted.split("."))
    if (candidate / "__init__.py").is_file():
        return candidate / "__init__.py"
    if candidate.with_suffix(".py").is_file():
        return candidate.with_suffix(".py")
    return None


def _files_run_by_import(root: Path, dotted: str) -> list[Path]:
    """Importing ``a.b.c`` runs ``a/__init__.py`` and ``a/b/__init__.py`` before ``a/b/c``."""
    parts = dotted.split(".")
    found = (_module_file(root, ".".join(parts[:end])) for end in range(1, len(parts) + 1))
    return [path for path in found if path is not None]


def import_closure(root: Path, scripts: Iterable[str] = (), modules: Iterable[str] = ()) -> set[str]:
    """Repository-relative POSIX paths of the files that running ``scripts`` and importing ``modules`` may execute.

    Args:
        root: The repository root, which holds the ``groundkit`` package.
        scripts: Scripts run as ``python SCRIPT`` (repository-relative); they are part of the closure,
            and so are the modules beside them that they import (their folder is first on ``sys.path``).
        modules: Dotted names of groundkit modules imported by name, e.g. a stage's step module.
    """
    root = root.resolve()
    todo: list[Path] = []
    for script in scripts:
        todo.append(root / script)
    for module in modules:
        todo.extend(_files_run_by_import(root, module))
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        rel = path.relative_to(root)
        inside = rel.parts[0] == TOP
        package = ".".join(rel.parent.parts if rel.name == "__init__.py" else rel.with_suffix("").parts[:-1])
        for name in _imported_names(ast.parse(path.read_text(encoding="utf-8")), package):
            if name == TOP or name.startswith(f"{TOP}."):
                todo.extend(_files_run_by_import(root, name))
            elif not inside and "." not in name and (path.parent / f"{name}.py").is_file():
                todo.append(path.parent / f"{name}.py")
    return {path.relative_to(root).as_posix() for path in seen}
