"""Render dvc.yaml from the stage table: `python -m groundkit.pipeline.dvc_yaml --write`.

dvc.yaml is DVC's copy of the stage graph. Written by hand it drifts from the code, so it is rendered
from groundkit/pipeline/stages.py, and tests/pipeline/test_stages.py fails when the committed file and
the table disagree. Edit the table, then re-render.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundkit.console.guard import guarded
from groundkit.errors import OutputError
from groundkit.pipeline.stages import ENTRY, STAGES, Artifact, Input, Output, ParamPath, RenderedPath, Stage

ROOT = Path(__file__).resolve().parents[2]
"""The repository this module lies in."""

HEADER = """\
# The evaluation pipeline, rendered from the stage table in groundkit/pipeline/stages.py by
# `python -m groundkit.pipeline.dvc_yaml --write`: edit the table, not this file (a test compares them).
# Every path a stage reads or writes is named here and passed on its command line; corpus.root and
# corpus.judgments come from params.yaml, so `dvc exp run -S corpus.root=...` evaluates another corpus.
# Every templated value is single-quoted, so the shell hands it to the stage as written (a space or
# `$(...)` in a folder name is just a character); groundkit refuses a path param holding a single
# quote or a control character. A stage's code deps are the groundkit and stages folders
# (groundkit/pipeline/dvc_yaml.py says why folders, not files).
"""

# Plots over the score stage's CSVs (names inside the plot-data folder the score step writes).
TOP_PLOTS = """\
# Plots over the score stage's CSVs. `dvc plots diff main my-branch` (or experiment names) overlays
# the revisions on one chart; `dvc plots show` renders the workspace.
plots:
  - Hit rate against k:
      template: simple
      x: k
      y:
        metrics/plots/hit_rate.csv: recall
      x_label: k (chunks read)
      y_label: hit rate (answerable queries)
  - Hit rate against context budget:
      template: simple
      x: budget_chars
      y:
        metrics/plots/budget.csv: recall
      x_label: context budget (characters)
      y_label: hit rate within the budget
  - Per category:
      template: bar_horizontal
      x: ndcg@10
      y:
        metrics/plots/categories.csv: category
      title: nDCG@10 per category
  - Per query:
      template: simple
      x: position
      y:
        metrics/plots/queries.csv: ndcg@10
      x_label: answerable queries, best first
      y_label: nDCG@10
"""

INSTALLED_HEADER = """\
# The groundkit evaluation pipeline, written by `groundkit init` for groundkit {version}. Every stage runs
# the installed groundkit (`groundkit stage NAME`), which refuses to run when it is another version:
# after upgrading groundkit, run `groundkit init --upgrade` to render this file again (every stage then
# re-runs, and dvc.lock records the version that produced the results). Settings belong in params.yaml;
# `groundkit init --upgrade` refuses to replace this file once it has been edited.
# Every path a stage reads or writes is named here and passed on its command line, single-quoted where
# it comes from params.yaml, so the shell hands it over as written.
"""

_WIDTH = 100


@dataclass(frozen=True)
class Layout:
    """Where a rendering of dvc.yaml has its stages find groundkit.

    Attributes:
        version: None for groundkit's own repository, whose stages run ``python stages/stage.py`` from the
            tree they lie in and depend on its code folders; else the installed groundkit's version, for a
            repository set up by ``groundkit init``, whose stages run ``groundkit stage`` and depend on no
            groundkit file (the version on their command line stands for the code).
        code: The repository's own code (a ``python:`` retriever's files or folders) that the stages
            importing it depend on (installed layout only).
        machine_judgments: Whether params.yaml names ``corpus.machine_judgments``: only then do the stages
            that read the optional inputs get them on their command line and as dependencies (DVC cannot
            make a dependency conditional; groundkit/pipeline/entry.py refuses a params.yaml and a dvc.yaml
            that disagree).
    """

    version: str | None = None
    code: tuple[str, ...] = ()
    machine_judgments: bool = False
    machine_pool: str | None = None

    def passes(self, port: Input) -> bool:
        """Whether the rendered stage is handed ``port`` (an optional input only where params.yaml sets it, the
        judge's pool only where it was found)."""
        if isinstance(port.source, RenderedPath):
            return self.machine_pool is not None
        return not port.optional or self.machine_judgments

    def value(self, source: Artifact | ParamPath | RenderedPath) -> str:
        """How the stage's command line names ``source``: a params path as a quoted template, a rendered one as
        found (quoted), an artifact by its path."""
        if isinstance(source, ParamPath):
            return f"'{source.template}'"
        if isinstance(source, RenderedPath):
            return f"'{self.machine_pool}'"
        return source.path

    def dependency(self, source: Artifact | ParamPath | RenderedPath) -> list[str]:
        """What dvc.yaml lists as ``deps`` for ``source``."""
        if isinstance(source, ParamPath):
            return [source.template]
        if isinstance(source, RenderedPath):
            return [str(self.machine_pool)]
        return list(source.files)

    @property
    def installed(self) -> bool:
        return self.version is not None

    def entry(self, stage: Stage) -> str:
        """The start of the stage's command line, up to and including the options that say where groundkit is."""
        if not self.installed:
            return f"python {ENTRY} {stage.name}"
        code = "".join(f" --code '{path}'" for path in self.code) if stage.code else ""
        return f"groundkit stage {stage.name} --groundkit-version {self.version}{code}"


OWN = Layout()
"""groundkit's own repository."""


CODE_FOLDERS = ("groundkit", "stages")
"""What every stage of groundkit's own pipeline depends on as code (tests/pipeline/test_stages.py checks that
no module there imports anything else of the repository)."""


def code_deps(stage: Stage, layout: Layout = OWN) -> list[str]:
    """The code a stage depends on: in groundkit's own repository the ``groundkit`` and ``stages`` folders.

    Folders rather than the files each stage imports: after every stage DVC re-reads and rewrites
    dvc.lock with its pure-Python YAML round-tripper, so each dep costs every later stage again, and
    listing some 25 files per stage made that the largest part of a `dvc repro` (1.7 s of 8 on the golden
    corpus, benchmarks/bench_pipeline.py). A folder covers every file, so no code change can leave a stage
    stale; the price is that any change to groundkit's code re-runs every stage.

    In the installed layout, the only code a stage depends on is the repository's own that it imports.
    """
    if layout.installed:
        return list(layout.code) if stage.code == "imports" else []
    return list(CODE_FOLDERS)


def command(stage: Stage, layout: Layout = OWN) -> str:
    """The stage's command line, as DVC sees it before it fills in ``${...}``."""
    words = [f"{layout.entry(stage)} --params params.yaml"]
    for port in (*stage.inputs, *stage.outputs):
        if isinstance(port, Output):
            words.append(f"{port.option} {port.artifact.path}")
        elif port.option is not None and layout.passes(port):
            words.append(f"{port.option} {layout.value(port.source)}")
    words += [f"--set '{key}=${{{key}}}'" for key in stage.sets]
    return " ".join(words)


def _data_deps(stage: Stage, layout: Layout) -> list[str]:
    deps: list[str] = []
    for port in stage.inputs:
        if not port.dvc or not layout.passes(port):
            continue
        deps += layout.dependency(port.source)
    return deps


def stage_document(stage: Stage, layout: Layout = OWN) -> dict[str, Any]:
    """The stage as DVC reads it from dvc.yaml (what ``yaml.safe_load`` gives for it)."""
    document: dict[str, Any] = {"desc": stage.about, "cmd": command(stage, layout)}
    deps = [*code_deps(stage, layout), *_data_deps(stage, layout)]
    if deps:
        document["deps"] = deps
    if stage.params:
        document["params"] = list(stage.params)
    for kind in ("outs", "metrics", "plots"):
        entries: list[Any] = []
        for output in stage.outputs:
            artifact = output.artifact
            if artifact.dvc != kind:
                continue
            persist = {"persist": True} if artifact.persist else {}
            options = {**({} if artifact.cache else {"cache": False}), **persist, **dict(artifact.plot)}
            entries += [{path: options} if options else path for path in artifact.files]
        if entries:
            document[kind] = entries
    return document


def _fold(text: str, indent: str) -> list[str]:
    """``text`` as the lines of a folded block scalar, broken before an option where it grows too long."""
    lines: list[str] = []
    for word in text.split(" --"):
        word = word if not lines else f"--{word}"
        if lines and len(indent) + len(lines[-1]) + 1 + len(word) <= _WIDTH:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return [f"{indent}{line}" for line in lines]


def _comment(text: str, indent: str) -> list[str]:
    return [f"{indent}# {line}" for line in text.splitlines()]


def _stage_text(stage: Stage, layout: Layout) -> list[str]:
    document = stage_document(stage, layout)
    lines = _comment(stage.note, "  ") if stage.note else []
    lines += [f"  {stage.name}:", f"    desc: {document['desc']}", "    cmd: >-", *_fold(document["cmd"], "      ")]
    if "deps" in document:
        lines.append("    deps:")
    why = {port.source: port.why for port in stage.inputs if port.why}
    data = {source.template if isinstance(source, ParamPath) else source.path: reason
            for source, reason in why.items()}
    for dep in document.get("deps", []):
        if dep in data:
            lines += _comment(data[dep], "      ")
        lines.append(f"      - {dep}")
    if "params" in document:
        lines += ["    params:", *(f"      - {section}" for section in document["params"])]
    for kind in ("outs", "metrics", "plots"):
        if kind not in document:
            continue
        lines.append(f"    {kind}:")
        for entry in document[kind]:
            if isinstance(entry, str):
                lines.append(f"      - {entry}")
                continue
            ((path, options),) = entry.items()
            lines.append(f"      - {path}:")
            lines += [f"          {key}: {str(value).lower() if isinstance(value, bool) else value}"
                      for key, value in options.items()]
    return lines


def render(layout: Layout = OWN) -> str:
    """The text of dvc.yaml for the stage table: groundkit's own, or ``layout``'s."""
    body = "\n\n".join("\n".join(_stage_text(stage, layout)) for stage in STAGES)
    header = INSTALLED_HEADER.format(version=layout.version) if layout.installed else HEADER
    return f"{header}stages:\n{body}\n\n{TOP_PLOTS}"


def installed(version: str, code: Sequence[str] = (), labels: Layout | None = None) -> Layout:
    """The layout of a repository set up by ``groundkit init`` for groundkit ``version``; ``labels`` says what
    :func:`for_params` found of machine judgments."""
    return Layout(version=version, code=tuple(code), machine_judgments=labels is not None and labels.machine_judgments,
                  machine_pool=None if labels is None else labels.machine_pool)


def for_params(params_file: Path, root: Path) -> Layout:
    """What the params file in ``root`` asks of the stages: whether it names ``corpus.machine_judgments``, and where
    the judge's pool lies beside that file (``NAME.pool.jsonl``, None where there is none: machine judgments
    ``groundkit judgments propose`` wrote have no pool). A missing params file names nothing."""
    from groundkit.config import load_params
    from groundkit.corpus.judgments import pool_path

    machine = load_params(params_file).corpus.machine_judgments if params_file.is_file() else None
    if machine is None:
        return Layout()
    pool = pool_path(Path(machine))
    return Layout(machine_judgments=True, machine_pool=pool.as_posix() if (root / pool).is_file() else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m groundkit.pipeline.dvc_yaml", description=__doc__)
    parser.add_argument("--write", action="store_true", help="write dvc.yaml instead of printing it")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: the one holding groundkit)")
    args = parser.parse_args(argv)
    text = render(for_params(args.root / "params.yaml", args.root))
    if args.write:
        target = args.root / "dvc.yaml"
        if target.is_file() and target.read_text(encoding="utf-8") != text and _edited(target):
            raise OutputError(target, "has changes that are not committed; rendering would overwrite them",
                              fix="commit or stash your edits to dvc.yaml first (the stage table in "
                                  "groundkit/pipeline/stages.py is where a lasting change belongs)")
        target.write_text(text, encoding="utf-8", newline="\n")
    else:
        sys.stdout.write(text)
    return 0


def _edited(path: Path) -> bool:
    """Whether ``path`` differs from git's index or HEAD; outside a git checkout, every file counts as edited."""
    result = subprocess.run(["git", "-C", str(path.parent), "diff", "HEAD", "--quiet", "--", path.name],
                            capture_output=True)
    return result.returncode != 0


if __name__ == "__main__":
    sys.exit(guarded(main))
