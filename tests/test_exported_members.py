"""groundkit's public API: ``__all__`` says exactly what ``import groundkit`` offers (as httpx checks its own)."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType

import groundkit
from tests.dvc_helpers import env

HEAVY = ("numpy", "pandas", "torch", "transformers", "pydantic", "yaml", "bm25s")


def _subpackage(name: str) -> bool:
    value = vars(groundkit).get(name)
    return isinstance(value, ModuleType) and value.__name__ == f"groundkit.{name}"


def test_all_lists_every_public_member_and_nothing_else():
    offered = {name for name in dir(groundkit)
               if (not name.startswith("_") or name == "__version__") and not _subpackage(name)}
    assert sorted(groundkit.__all__) == sorted(offered)
    assert len(set(groundkit.__all__)) == len(groundkit.__all__)


def test_every_member_resolves_to_where_it_is_defined_inside_groundkit():
    for name in groundkit.__all__:
        if name == "__version__":
            continue
        member = getattr(groundkit, name)
        # A class or function knows its module; a table (RETRIEVERS, a tuple) is looked up where _LAZY says.
        home = member.__module__ if isinstance(member, type) or callable(member) else groundkit._LAZY[name]
        assert home.startswith("groundkit."), name
        assert getattr(sys.modules[home], name) is member, name


def test_what_the_examples_and_the_cli_use_is_public():
    assert {"load_params", "Params", "load_corpus", "load_judgments", "Document", "Chunk", "Judgment", "run",
            "compare", "read_side", "GroundkitError", "InputError"} <= set(groundkit.__all__)
    assert issubclass(groundkit.ParamsError, groundkit.InputError)


def test_an_unknown_name_is_an_attribute_error():
    assert not hasattr(groundkit, "no_such_member")


def test_importing_groundkit_loads_nothing_heavy():
    # Every DVC stage imports the package first; it must not drag the runner's imports into every stage.
    probe = ("import sys, groundkit; from groundkit import GroundkitError, ParamsError; "
             f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} "
             "or (m.startswith('groundkit.') and m not in ('groundkit.errors', 'groundkit._version'))))")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env(), check=True)
    assert shown.stdout.strip() == "[]"
