"""What every DVC stage runs: parse the stage's command line, load its params, run its step.

Two doors lead here. In groundkit's own repository dvc.yaml runs ``python stages/stage.py STAGE``,
which imports groundkit from the tree it lies in (stages/_own_tree.py), so an experiment is scored by
the code its commit holds. In a team's repository, ``groundkit init`` renders dvc.yaml with
``groundkit stage STAGE --groundkit-version V``: the installed groundkit runs, and it refuses to when it
is not the version dvc.yaml was rendered for (the version is part of every stage's command, so DVC
re-runs every stage when ``groundkit init --upgrade`` renders a new one, and dvc.lock records which
groundkit produced the results).

The team's own code (a ``python:`` retriever or chunker) is theirs to version: the stages that import it list
its files as dependencies (``--code PATH``, rendered by ``groundkit init``), and the stage refuses a
module from the repository that no such dependency covers, since DVC would not re-run it when that
module changed.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.machinery
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.errors import RepositoryError
from groundkit.pipeline.stages import BY_NAME, STAGES, Artifact, Output, ParamPath, RenderedPath, Stage

if TYPE_CHECKING:
    from groundkit.config import Params

UPGRADE = "groundkit init --upgrade"
"""The command that renders dvc.yaml for the installed groundkit."""


def _parser(installed: bool) -> argparse.ArgumentParser:
    prog = "groundkit stage" if installed else "stage.py"
    parser = argparse.ArgumentParser(prog=prog, description="Run one stage of the evaluation pipeline, as dvc.yaml "
                                     "calls it; every path comes from the command line.")
    commands = parser.add_subparsers(dest="stage", required=True, metavar="STAGE")
    for stage in STAGES:
        command = commands.add_parser(stage.name, help=stage.about, description=stage.about)
        if installed:
            command.add_argument("--groundkit-version", required=True, metavar="VERSION",
                                 help="the groundkit version dvc.yaml was rendered for; another one refuses to run")
            command.add_argument("--code", action="append", default=[], metavar="PATH",
                                 help="a file or folder of this repository's own code that the stage imports "
                                 "(a python: retriever or chunker), declared to DVC as a dependency")
        command.add_argument("--params", required=True, help="the params file")
        for port in (*stage.inputs, *stage.outputs):
            if isinstance(port, Output):
                command.add_argument(port.option, required=True, help=f"write {port.artifact.about}")
            elif port.option is not None:
                source = port.source
                about = source.about if not isinstance(source, ParamPath) else f"the path in {source.key}"
                if port.optional:
                    about += " (where params.yaml names one; dvc.yaml passes it only then)"
                command.add_argument(port.option, required=not port.optional, help=about)
        if stage.sets:
            command.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                                 help=f"params overrides (dvc.yaml passes {', '.join(stage.sets)})")
    return parser


def main(argv: Sequence[str] | None, *, installed: bool = False) -> int:
    """Run the stage ``argv`` names; ``installed`` for ``groundkit stage`` (the installed groundkit)."""
    from groundkit.pipeline.collector import fewer_collections

    args = _parser(installed).parse_args(argv)
    stage = BY_NAME[args.stage]
    if installed:
        check_version(args.groundkit_version)
    given: dict[Artifact | ParamPath | RenderedPath, str] = {}
    for port in (*stage.inputs, *stage.outputs):
        if port.option is not None:
            key = port.artifact if isinstance(port, Output) else port.source
            value = getattr(args, port.option.removeprefix("--").replace("-", "_"))
            if value is not None:
                given[key] = value
    params, store = None, None
    if stage.reads_params:  # pydantic, YAML and the store cost a stage about a tenth of a second to import
        from groundkit.config import load_params
        from groundkit.pipeline.store import Store
        from groundkit.scoring.measures import metrics_of

        repeated = getattr(args, "set", [])
        if repeated:
            # dvc.yaml repeats these values from the params file: a value the file cannot hold is reported
            # against the file, not against its copy on the command line.
            load_params(args.params, stage.overrides(given))
        params = load_params(args.params, [*repeated, *stage.overrides(given)])
        metrics_of(params)  # a metric no measure writes fails the first stage that reads params, not the score one
        check_optional_inputs(stage, params, given, installed)
        store = Store()
    code = _declared(args.code) if installed else None
    guards = code is not None and stage.code == "imports"
    if guards and stage.plugin is not None:
        assert params is not None  # a stage that imports a repository's code reads params
        check_plugin_declared(params, stage.plugin, code)
    step = importlib.import_module(stage.step)
    with fewer_collections():
        result = step.run(**stage.arguments(given, params, store, code or ()))
    if guards:
        check_modules_declared(code)
    print(step.summary(result, params), file=sys.stderr)
    return 0


def check_optional_inputs(stage: Stage, params: Params, given: Mapping[object, str], installed: bool) -> None:
    """Refuse a params.yaml that names an optional input (``corpus.machine_judgments``) dvc.yaml does not pass,
    or the other way round, and a judge's pool dvc.yaml does not pass where it lies beside that file: DVC would
    not re-run the stage when that file changed, or would hand over a file params.yaml no longer names."""
    from groundkit.corpus.judgments import pool_path

    render = UPGRADE if installed else "python -m groundkit.pipeline.dvc_yaml --write"
    fix = f"render dvc.yaml again for this params.yaml (`{render}`), commit it, and run again"
    for port in stage.inputs:
        source = port.source
        if isinstance(source, RenderedPath):
            named = params.corpus.machine_judgments
            pool = pool_path(Path(named)) if named is not None else None
            expected = pool.as_posix() if pool is not None and pool.is_file() else None
            passed = given.get(source)
            if (None if passed is None else Path(passed).as_posix()) != expected:
                shown = f"passes {passed!r}" if passed is not None else "passes none"
                raise RepositoryError(
                    "dvc.yaml", f"{shown} as {source.about} to the {stage.name} stage, but "
                    f"{'there is ' + repr(expected) if expected else 'there is none'}: judged@k and agreement would "
                    "be computed from a pool DVC does not track", fix=fix)
            continue
        if not (port.optional and isinstance(source, ParamPath)):
            continue
        section, _, key = source.key.partition(".")
        named = getattr(getattr(params, section), key)
        if (named is None) == (source not in given):
            continue
        if named is not None:
            raise RepositoryError(
                "dvc.yaml", f"does not pass {source.key} ({named!r} in params.yaml) to the {stage.name} stage: DVC "
                "would not re-run the pipeline when that file changed, and the scores would not be its own", fix=fix)
        raise RepositoryError(
            "dvc.yaml", f"passes {source.key} to the {stage.name} stage, but params.yaml sets none",
            fix=f"render dvc.yaml again for this params.yaml (`{render}`), or name the file in {source.key}")


def check_version(rendered_for: str) -> None:
    """Refuse to run when the installed groundkit is not the one dvc.yaml was rendered for."""
    from groundkit._version import __version__

    if rendered_for != __version__:
        raise RepositoryError(
            "dvc.yaml", f"was rendered for groundkit {rendered_for}, but groundkit {__version__} is installed: its "
            "stages would record results of one version under the command of another",
            fix=f"run `{UPGRADE}` to render dvc.yaml for groundkit {__version__}, then `dvc repro` (every stage "
                f"re-runs), or install groundkit=={rendered_for} again")


def _declared(paths: Sequence[str]) -> list[Path]:
    """The ``--code`` paths, resolved against the stage's working directory (the repository or experiment)."""
    return [Path(path).resolve() for path in paths]


def _repository_file(path: str | None, root: Path) -> Path | None:
    """``path`` resolved, when it is a file inside ``root`` and not inside an environment's own packages."""
    if not path:
        return None
    file = Path(path).resolve()
    if not file.is_relative_to(root):
        return None
    environments = {Path(p).resolve() for p in (sys.prefix, sys.exec_prefix, sys.base_prefix)}
    if any(file.is_relative_to(env) for env in environments if env.is_relative_to(root)):
        return None  # a virtual environment kept inside the repository: installed code, not the team's own
    return file


def _covered(file: Path, declared: Sequence[Path]) -> bool:
    return any(file == path or file.is_relative_to(path) for path in declared)


def _undeclared_fix(file: Path, root: Path) -> str:
    top = file.relative_to(root).parts[0]
    return (f"declare it with `{UPGRADE} --code {top}` (dvc.yaml then lists it as a dependency of the stages that "
            "import it), commit dvc.yaml, and run again")


def plugin_module(params: Params, key: str) -> tuple[str, str] | None:
    """(module, spec) of the ``python:MODULE:FACTORY`` the params key ``key`` names, or None for another kind."""
    section = key.partition(".")[0]
    kind = getattr(params, section).kind
    module = getattr(kind, "module", None) if kind.name == "python" else None
    return (module, kind.spec) if module else None


def check_plugin_declared(params: Params, key: str, declared: Sequence[Path]) -> None:
    """Before any work: a ``python:`` retriever or chunker found in this repository must be a declared dependency.

    The module is located as the stage will import it (the working directory first) without running it.
    """
    found = plugin_module(params, key)
    if found is None:
        return
    module, spec = found
    root = Path.cwd().resolve()
    located = importlib.machinery.PathFinder.find_spec(module.split(".")[0], [str(root)])
    if located is None:
        return  # not in this repository: an installed package, versioned by whoever installs it
    origin = located.origin if located.has_location else None
    folders = list(located.submodule_search_locations or [])
    file = _repository_file(folders[0] if folders else origin, root)
    if file is not None and not _covered(file, declared):
        what = "chunker" if key.startswith("chunk.") else "retriever"
        raise RepositoryError(
            file.relative_to(root), f"holds the {what} {spec!r} but is not a dependency of this stage in "
            "dvc.yaml, so DVC would not re-run the stage when it changes, and a queued experiment could report "
            "numbers of other code", fix=_undeclared_fix(file, root))


def check_modules_declared(declared: Sequence[Path]) -> None:
    """After the step: every module the stage imported from this repository lies in a declared dependency."""
    root = Path.cwd().resolve()
    workspace = _workspace_of(root)
    for name, module in sorted(sys.modules.items()):
        where = getattr(module, "__file__", None)
        file = _repository_file(where, root)
        if file is not None and not _covered(file, declared):
            raise RepositoryError(
                file.relative_to(root), f"was imported by this stage (module {name!r}) but is not one of its "
                "dependencies in dvc.yaml, so DVC would not re-run the stage when it changes",
                fix=_undeclared_fix(file, root))
        if workspace is not None and where and Path(where).resolve().is_relative_to(workspace) \
                and not Path(where).resolve().is_relative_to(root):
            raise RepositoryError(
                where, f"was imported by this experiment (module {name!r}) from the workspace, not from the "
                "experiment's own copy of the repository: the numbers would be those of the workspace's code",
                fix="make the module importable from the repository root (a module or package there, as "
                    "python:MODULE:FACTORY names it), not through an editable install of a src/ folder")


def _workspace_of(root: Path) -> Path | None:
    """The workspace a DVC experiment's temporary copy belongs to (``WORKSPACE/.dvc/tmp/exps/...``), else None."""
    parts = root.parts
    for i in range(len(parts) - 3):
        if parts[i:i + 3] == (".dvc", "tmp", "exps"):
            return Path(*parts[:i])
    return None
