"""Step check-inputs: name every input path that is missing from this copy of the repository.

DVC runs a queued or ``--temp`` experiment in a copy of the repository that holds only what git commits
and DVC tracks. A corpus or judgments file that is neither is missing there, and DVC itself fails on the
first stage that depends on it with a bare ``[Errno 2]``. This stage runs before that one (its paths are
params, not deps, and its output is neither cached nor committed, so every such copy runs it), and says
what is missing and how to make it part of the experiment.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.artifacts.atomic import atomic_write_text
from groundkit.errors import InputError
from groundkit.inputs.suggest import near_path_text

if TYPE_CHECKING:
    from groundkit.config import Params
    from groundkit.pipeline.store import Store


def run(corpus_root: Path, judgments: Path, machine_judgments: Path | None, run_file: Path, out_inputs: Path, *,
        store: Store | None, code: Sequence[Path] = ()) -> dict[str, str]:
    """Check that every input path exists here; record them (the same bytes whenever they are found). Nothing is
    read, so ``store`` goes unused. The stage imports the standard library alone (it reads no params: the
    paths come on its command line), so it starts in a few tens of milliseconds."""
    expected = {"corpus.root": (corpus_root, "folder"), "corpus.judgments": (judgments, "file"),
                "retrieve.run": (run_file, "file")}
    if machine_judgments is not None:  # handed over only where params.yaml names one
        expected["corpus.machine_judgments"] = (machine_judgments, "file")
    missing = [(key, path) for key, (path, kind) in expected.items()
               if not (path.is_dir() if kind == "folder" else path.is_file())]
    here = Path.cwd()
    missing += [("your code", path) for path in code if not path.exists()]
    if missing:
        raise InputError(
            missing[0][1],
            _problem(missing, here),
            fix=_fix(missing, here),
        )
    found = {key: path.as_posix() for key, (path, _) in expected.items()}
    # dumps_json's format (groundkit/artifacts/lines.py), without the pydantic that module imports: strings only here.
    atomic_write_text(out_inputs, json.dumps(found, sort_keys=True, indent=2, ensure_ascii=False) + "\n")
    return found


def _in_experiment(here: Path) -> bool:
    return (".dvc", "tmp", "exps") in {tuple(here.parts[i:i + 3]) for i in range(len(here.parts))}


def _shown(path: Path, here: Path) -> str:
    try:
        return path.resolve().relative_to(here.resolve()).as_posix()
    except ValueError:
        return str(path)


def _problem(missing: list[tuple[str, Path]], here: Path) -> str:
    key = missing[0][0]
    named = "is your code, and" if key == "your code" else f"is {key}, and"
    also = "; also missing: " + ", ".join(f"{_shown(path, here)} ({key})" for key, path in missing[1:]) \
        if missing[1:] else ""
    if _in_experiment(here):
        return (f"{named} it is not in this experiment's copy of the repository{also}. A queued or --temp "
                "experiment holds only what git commits and DVC tracks")
    return f"{named} it does not exist{near_path_text(missing[0][1])}{also}"


def _fix(missing: list[tuple[str, Path]], here: Path) -> str:
    paths = " ".join(_shown(path, here) for _, path in missing)
    if _in_experiment(here):
        return (f"commit it (git add {paths} && git commit), or track it with DVC (dvc add {paths}, then "
                "commit the .dvc file), then queue the experiment again")
    return "create it, or point params.yaml at the right path"


def summary(found: dict[str, str], params: Params | None) -> str:
    """What the stage did, in a line."""
    return "check-inputs: " + ", ".join(f"{key} {path}" for key, path in found.items())
