"""Make a stage script import groundkit from the tree it lies in, never from an installed copy.

DVC runs a queued or ``--temp`` experiment in a copy of the repository under ``.dvc/tmp/exps``.
An installed groundkit (editable or not) points at some other tree, and an experiment run on it
would record, under its own commit, numbers computed by code it does not hold. Every stage script
imports this module before anything from groundkit: it puts the stage's repository root first on
``sys.path``, then refuses to go on if groundkit still came from elsewhere (something imported it
before the stage started, e.g. a ``sitecustomize`` module).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import groundkit  # noqa: E402

_imported_from = Path(groundkit.__file__).resolve().parent
if _imported_from != ROOT / "groundkit":
    raise SystemExit(
        f"error: {Path(sys.argv[0]).name} runs in {ROOT} but imported groundkit from {_imported_from}, "
        "so its outputs would not come from this tree's code\n"
        "  fix: find what imports groundkit before the stage starts (a sitecustomize module or a .pth file) "
        "and remove it"
    )
