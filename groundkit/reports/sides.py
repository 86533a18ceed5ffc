"""The sides of a comparison: a run's per_query.csv and run.json, read from a folder, a git revision or a DVC
experiment.

A side is a git revision or DVC experiment (its committed ``metrics/``), or a directory holding
``per_query.csv`` and ``run.json`` (the output of ``groundkit run`` or a workspace's ``metrics/``).
``compare --experiments`` takes as candidates the experiments of the current commit (:func:`experiment_sides`):
those ``dvc exp show --json`` lists, less the ones groundkit/reports/sweep.py leaves out of a sweep (queued,
running or failed, scored on other judgments or another corpus, or repeating the commit).
per_query.csv is parsed by the reader beside its writer (groundkit/scoring/schema.py).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundkit.errors import CompareError, JSONLineError
from groundkit.inputs.jsonline import loads_line
from groundkit.reports.sweep import dvc_exp_show, experiment_rows, git_run_json
from groundkit.scoring.schema import PerQuery, read_per_query

NO_ANSWER = "no_answer"


@dataclass(frozen=True)
class Side:
    """One run's per-query results and metadata, as read from disk or git: per_query.csv read
    (groundkit/scoring/schema.py's :class:`PerQuery`), run.json, and where each came from."""

    label: str
    metadata: dict[str, Any]
    per_query: PerQuery
    csv_path: str
    json_path: str


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
    return Side(label=label, metadata=metadata, per_query=table, csv_path=csv_path, json_path=json_path)


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


def _flatten(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def params_changed(baseline: Side, candidate: Side) -> dict[str, list[Any]]:
    """Each flattened parameter whose value differs: ``{key: [baseline's, candidate's]}`` (None: not set)."""
    before = _flatten(baseline.metadata.get("params", {}))
    after = _flatten(candidate.metadata.get("params", {}))
    changed = {k: [before.get(k), after.get(k)] for k in sorted(set(before) | set(after))
               if before.get(k) != after.get(k)}
    runs = [side.metadata.get("external_run") for side in (baseline, candidate)]
    if runs[0] != runs[1]:
        # Two run files scored alike (score-run, score-trec) differ in nothing else: name them, and their content.
        changed[RUN_FILE] = [None if run is None else f"{run['name']} (sha256 {run['sha256'][:12]})" for run in runs]
    return changed


RUN_FILE = "run file"
"""What :func:`params_changed` calls the external run file, when two results scored different ones."""


# --- the experiments of the current commit -----------------------------------------------------


def _sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, bool) or value is None:
        return (2, str(value))
    if isinstance(value, int | float):
        return (0, value)
    return (1, str(value))


def experiment_sides(cwd: Path, baseline: Side, baseline_spec: str, *,
                     metrics_dir: str = "metrics") -> tuple[list[Side], list[tuple[str, str]]]:
    """The comparable experiments of the current commit, sorted by the parameters they change.

    Returns the sides and what was left out as ``(name, reason)``. An experiment that is the
    baseline itself is left out too.
    """
    sweep = experiment_rows(dvc_exp_show(cwd, CompareError, "--experiments"), [], git_run_json(cwd))
    left_out = list(sweep.left_out)
    base_rev = None if Path(baseline_spec).is_dir() else resolve_revision(baseline_spec, cwd)
    base_results = _results(base_rev or baseline_spec, cwd, metrics_dir)
    sides = []
    for name, rev in sweep.experiments:
        if rev == base_rev:
            left_out.append((name, "is the baseline"))
            continue
        if base_results is not None and _results(rev, cwd, metrics_dir) == base_results:
            # An experiment that changed only where the work ran (execution.engine) changed no number: as a
            # candidate it would add a test to the correction, and weaken every other candidate's.
            left_out.append((name, f"its results are the baseline's, byte for byte ({' and '.join(RESULTS)}): "
                                   "it changes no number (execution.engine, say)"))
            continue
        sides.append(read_side(rev, cwd=cwd, metrics_dir=metrics_dir, label=name))
    changed = [params_changed(baseline, side) for side in sides]
    keys = sorted({key for change in changed for key in change})
    order = sorted(range(len(sides)), key=lambda i: ([_sort_key(changed[i].get(k, [None, None])[1]) for k in keys],
                                                     sides[i].label))
    return [sides[i] for i in order], left_out


RESULTS = ("per_query.csv", "metrics.json")
"""The files that hold a run's results: two runs with the same bytes in both are the same result."""


def _results(spec: str, cwd: Path, metrics_dir: str) -> tuple[bytes, ...] | None:
    """The bytes of :data:`RESULTS` in a results folder (found as read_side finds it) or a revision, or None."""
    folder = Path(spec)
    if folder.is_dir():
        if not (folder / RESULTS[0]).is_file():
            folder = folder / metrics_dir
        try:
            return tuple((folder / name).read_bytes() for name in RESULTS)
        except OSError:
            return None
    shown = [subprocess.run(["git", "show", f"{spec}:./{metrics_dir}/{name}"], cwd=cwd, capture_output=True,
                            check=False) for name in RESULTS]
    return None if any(s.returncode for s in shown) else tuple(s.stdout for s in shown)
