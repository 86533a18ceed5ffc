"""The sides of a comparison: a run's per_query.csv and run.json, read from a folder, a git revision or a DVC
experiment.

A side is a git revision or DVC experiment (its committed ``metrics/``), or a directory holding
``per_query.csv`` and ``run.json`` (the output of ``groundkit run`` or a workspace's ``metrics/``).
per_query.csv is parsed by the reader beside its writer (groundkit/scoring/schema.py).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from groundkit._json import loads_line
from groundkit.errors import CompareError, JSONLineError
from groundkit.scoring.schema import read_per_query

NO_ANSWER = "no_answer"


@dataclass(frozen=True)
class Side:
    """One run's per-query results and metadata, as read from disk or git: per_query.csv's columns
    (groundkit/scoring/schema.py's :class:`PerQuery`), run.json, and where each came from."""

    label: str
    metadata: dict[str, Any]
    metric_names: list[str]
    position: dict[str, int]
    lines: list[int]
    categories: list[str]
    queries: list[str]
    first_gold_rank: list[float]
    abstained: list[bool]
    top_score: list[float]
    values: np.ndarray
    csv_path: str
    json_path: str
    human_names: list[str] = field(default_factory=list)
    human_values: np.ndarray | None = None
    """The ``human.`` columns of a run scored under two label sets (groundkit/scoring/schema.py)."""


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def resolve_revision(spec: str, cwd: Path) -> str | None:
    """A commit for ``spec``: any git revision, else a DVC experiment name (refs/exps/.../NAME)."""
    found = _git(["rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}"], cwd)
    if found.returncode == 0:
        return found.stdout.strip()
    refs = _git(["for-each-ref", "--format=%(refname) %(objectname)", "refs/exps"], cwd)
    matches = sorted({line.split()[1] for line in refs.stdout.splitlines()
                      if line.split()[0].rsplit("/", 1)[-1] == spec})
    if len(matches) > 1:
        raise CompareError(spec, f"names {len(matches)} DVC experiments",
                           fix="use the experiment's commit from `dvc exp show` instead of its name")
    return matches[0] if matches else None


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CompareError(where, f"is not UTF-8 text (byte {exc.start + 1})",
                           fix="point at a per_query.csv and run.json written by groundkit") from None


def _read_metadata(text: str, where: str) -> dict[str, Any]:
    # run.json spans many lines: json.loads reports the line of a syntax error, loads_line does not.
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise CompareError(where, f"is not valid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno,
                           fix="re-run the score stage (or `groundkit run`) to write it again") from None
    except (RecursionError, ValueError):
        pass  # loads_line below names these in one sentence
    try:
        metadata = loads_line(text)
    except JSONLineError as exc:
        raise CompareError(where, f"is not valid run metadata: {exc.problem}",
                           fix="re-run the score stage (or `groundkit run`) to write it again") from None
    if not isinstance(metadata, dict):
        raise CompareError(where, "is not a JSON object", fix="re-run the score stage to write it again")
    for key in ("judgments_hash", "corpus_hash"):
        if not isinstance(metadata.get(key), str) or not metadata[key]:
            raise CompareError(where, f"has no {key} (a string): the run cannot be checked as comparable",
                               key=key, fix="re-run the score stage with this version of groundkit")
    if not isinstance(metadata.get("params", {}), dict):
        raise CompareError(where, "has params that are not an object", key="params",
                           fix="re-run the score stage to write it again")
    return metadata


def _parse_side(label: str, csv_text: str, json_text: str, csv_path: str, json_path: str) -> Side:
    metadata = _read_metadata(json_text, json_path)
    table = read_per_query(csv_text, csv_path, CompareError)
    return Side(label=label, metadata=metadata, **vars(table), csv_path=csv_path, json_path=json_path)


def read_side(spec: str, *, cwd: Path, metrics_dir: str = "metrics", label: str | None = None) -> Side:
    """Read one side of a comparison: a results directory, a git revision, or a DVC experiment name.

    ``label`` names the side in the report (default: ``spec``), e.g. an experiment read by its commit.
    """
    directory = Path(spec)
    names = ("per_query.csv", "run.json")
    texts: dict[str, str] = {}
    paths: dict[str, str] = {}
    if directory.is_dir():
        if not (directory / "per_query.csv").is_file() and (directory / metrics_dir / "per_query.csv").is_file():
            directory = directory / metrics_dir
        for name in names:
            if not (directory / name).is_file():
                raise CompareError(directory, f"holds no {name}",
                                   fix="point at the --out folder of `groundkit run` or at a metrics/ folder")
        for name in names:
            paths[name] = str(directory / name)
            texts[name] = _decode((directory / name).read_bytes(), paths[name])
    else:
        commit = resolve_revision(spec, cwd)
        if commit is None:
            raise CompareError(spec, "is neither a directory, a git revision nor a DVC experiment name",
                               fix="give a folder written by `groundkit run`, a branch/tag/commit, or a name "
                               "listed by `dvc exp list`")
        for name in names:
            paths[name] = f"{spec}:{metrics_dir}/{name}"
            shown = subprocess.run(["git", "show", f"{commit}:./{metrics_dir}/{name}"], cwd=cwd,
                                   capture_output=True, check=False)
            if shown.returncode != 0:
                raise CompareError(paths[name], "is not in that revision",
                                   fix="compare revisions whose `dvc repro` results were committed "
                                   "(metrics/ is tracked by git)")
            texts[name] = _decode(shown.stdout, paths[name])
    return _parse_side(label or spec, texts["per_query.csv"], texts["run.json"], paths["per_query.csv"],
                       paths["run.json"])
