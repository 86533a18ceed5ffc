"""A sweep's experiments as one table: a parameter against the metrics, for a plot across experiments.

``dvc plots diff`` overlays revisions on the same axes (hit rate against k, say); it cannot put a
*parameter* on the x axis, because each experiment contributes one point. This module reads
``dvc exp show --json``, keeps the current commit and its experiments, and writes one row per
experiment: its name, the chosen parameters and the answerable metrics. ``dvc plots show`` then
draws that CSV like any other plot file.

Only comparable rows are kept. ``dvc exp show`` lists every experiment of the commit, including
ones run with ``-S corpus.judgments=...`` or ``-S corpus.root=...`` (other queries or other
documents: their numbers measure another task), queued, running or failed ones (whose metrics
are the commit's own, copied into the stash DVC runs them from), and an experiment that re-ran
the commit's own parameters (the commit's row a second time, under another name). Each revision's
``metrics/run.json`` is read from git and its ``judgments_hash`` and ``corpus_hash`` must match
the commit's; what is left out is returned with the reason, for the command to print.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groundkit.artifacts.atomic import atomic_write_text
from groundkit.artifacts.lines import csv_text
from groundkit.errors import InputError, JSONLineError, MeasureError, SweepError
from groundkit.inputs.jsonline import loads_line
from groundkit.inputs.text import markdown_text
from groundkit.scoring.measures import MEASURES

METRICS_FILE = "metrics/metrics.json"
DETAIL_FILE = "metrics/detail.json"
RUN_FILE = "metrics/run.json"
HASHES = ("judgments_hash", "corpus_hash")
# Experiments DVC lists that have not produced results of their own (executor states of dvc exp show).
NOT_RUN = {"queued": "queued, not run yet", "running": "still running",
           "failed": "failed; the metrics DVC shows for it are the commit's own"}

# Reads a revision's metrics/run.json: the metadata, or the reason it cannot be used.
RunReader = Callable[[str], "dict[str, Any] | str"]


@dataclass
class Sweep:
    """The rows to tabulate, each revision left out as ``(name, reason)``, and the experiments kept.

    ``experiments`` lists the kept rows that are experiments (not a commit) as ``(name, rev)``; ``revisions``
    every kept row's.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)
    experiments: list[tuple[str, str]] = field(default_factory=list)
    revisions: list[tuple[str, str]] = field(default_factory=list)


def _dig(data: dict[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _params(entry: dict[str, Any]) -> dict[str, Any]:
    data = entry.get("data") or {}
    return ((data.get("params") or {}).get("params.yaml") or {}).get("data") or {}


def _metrics(entry: dict[str, Any], metrics_file: str) -> dict[str, Any]:
    data = entry.get("data") or {}
    return ((data.get("metrics") or {}).get(metrics_file) or {}).get("data") or {}


def _short(value: Any) -> str:
    return str(value)[:12]


def _mismatch(metadata: dict[str, Any], reference: dict[str, Any]) -> str | None:
    """Why a revision's run is not comparable with the baseline commit's, or None when it is."""
    for key, what in zip(HASHES, ("other judgments", "another corpus"), strict=True):
        if metadata.get(key) != reference.get(key):
            return (f"scored on {what} ({key} {_short(metadata.get(key))}, the baseline's "
                    f"{_short(reference.get(key))})")
    return None


def _answerable(metrics: dict[str, Any]) -> dict[str, Any]:
    """The answerable figures of a metrics document: detail.json's block, or a flat headline metrics.json."""
    block = metrics.get("answerable")
    return block if isinstance(block, dict) else metrics


def experiment_rows(shown: list[dict[str, Any]], params: list[str], run_json: RunReader,
                    metrics_file: str = METRICS_FILE, detail: RunReader | None = None) -> Sweep:
    """One row per comparable experiment of the baseline commit (and the commit itself), sorted by the params.

    A row holds the figures of ``metrics_file`` as ``dvc exp show`` gives them, and every answerable
    figure of the revision's detail.json when ``detail`` reads it.
    """
    sweep = Sweep()
    seen: dict[str, str] = {}
    for commit in shown:
        if commit.get("rev") == "workspace":
            continue
        commit_name = commit.get("name") or commit["rev"][:7]
        reference = run_json(commit["rev"])
        if isinstance(reference, str):
            raise SweepError(f"{commit_name}:{RUN_FILE}", f"cannot be used ({reference}), so no experiment can be "
                             "checked against the commit's judgments and corpus",
                             fix="commit the results of `dvc repro` (metrics/ is tracked by git), then sweep again")
        candidates = [(commit, commit_name, None)]
        for experiment in commit.get("experiments") or []:
            state = (experiment.get("executor") or {}).get("state")
            for revision in experiment.get("revs") or []:
                candidates.append((revision, revision.get("name") or revision["rev"][:7], state))
        for entry, name, state in candidates:
            rev = entry["rev"]
            reason = None
            if rev in seen:
                reason = f"the same commit as {seen[rev]}"
            elif state in NOT_RUN:
                reason = NOT_RUN[state]
            elif entry.get("error"):
                reason = f"DVC could not read it: {(entry['error'] or {}).get('msg', 'unknown error')}"
            elif not _metrics(entry, metrics_file):
                reason = f"no {metrics_file}"
            else:
                metadata = reference if entry is commit else run_json(rev)
                reason = metadata if isinstance(metadata, str) else _mismatch(metadata, reference)
            if reason is None and entry is not commit and _params(entry) == _params(commit) \
                    and _metrics(entry, metrics_file) == _metrics(commit, metrics_file):
                reason = f"repeats {commit_name} (same params.yaml and metrics)"
            seen.setdefault(rev, name)
            if reason is not None:
                sweep.left_out.append((name, reason))
                continue
            if entry is not commit:
                sweep.experiments.append((name, rev))
            sweep.revisions.append((name, rev))
            row: dict[str, Any] = {"experiment": name}
            for p in params:
                row[p] = _dig(_params(entry), p)
            row.update(_answerable(_metrics(entry, metrics_file)))
            more = detail(rev) if detail is not None else {}
            row.update(_answerable(more) if isinstance(more, dict) else {})
            sweep.rows.append(row)
    for row in sweep.rows:
        missing = [p for p in params if row[p] is None]
        if missing:
            raise SweepError("params.yaml", f"experiment {row['experiment']!r} has no {missing[0]}",
                             key=missing[0], fix="name a parameter of params.yaml, e.g. chunk.size")
    sweep.rows.sort(key=lambda r: ([r[p] for p in params], r["experiment"]))
    return sweep


def _git_json(cwd: Path, rev: str, path: str) -> tuple[Any, str | None]:
    """The JSON in ``path`` as committed in ``rev`` at ``cwd``, and None; or None and why it cannot be read."""
    shown = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=cwd, capture_output=True, check=False)
    if shown.returncode != 0:
        return None, f"no {path} in its commit"
    try:
        return loads_line(shown.stdout.decode("utf-8")), None
    except (UnicodeDecodeError, JSONLineError):
        return None, f"its {path} is not valid JSON"


def git_run_json(cwd: Path) -> RunReader:
    """A reader of ``metrics/run.json`` as committed in a revision of the repository at ``cwd``."""

    def read(rev: str) -> dict[str, Any] | str:
        metadata, problem = _git_json(cwd, rev, RUN_FILE)
        if problem is not None:
            return problem
        if not isinstance(metadata, dict) or not all(isinstance(metadata.get(k), str) for k in HASHES):
            return f"its {RUN_FILE} lacks {' or '.join(HASHES)}"
        return metadata

    return read


def git_detail(cwd: Path) -> RunReader:
    """A reader of a revision's committed ``metrics/detail.json``: ``dvc exp show`` has only the headline."""

    def read(rev: str) -> dict[str, Any] | str:
        metrics, problem = _git_json(cwd, rev, DETAIL_FILE)
        if problem is not None:
            return problem
        return metrics if isinstance(metrics, dict) else f"its {DETAIL_FILE} is not a JSON object"

    return read


def _is_metric(name: str) -> bool:
    try:
        MEASURES.parse(name)
    except MeasureError:
        return False
    return True


def dvc_exp_show(cwd: Path, error: type[InputError], where: str) -> list[dict[str, Any]]:
    """``dvc exp show --json`` in ``cwd``, parsed; a failure is raised as ``error`` naming ``where``.

    DVC runs from groundkit's own environment (``python -m dvc``, as ``groundkit init`` runs it), so a
    ``groundkit`` started by its path from an environment that is not activated finds the DVC installed beside it.
    """
    if importlib.util.find_spec("dvc") is None:
        raise error(where, f"cannot run `dvc exp show --json`: DVC is not installed in {sys.prefix}",
                    fix="install groundkit with its dependencies (pip install groundkit), which include DVC")
    shown = subprocess.run([sys.executable, "-m", "dvc", "exp", "show", "--json"], cwd=cwd, capture_output=True,
                           text=True, check=False)
    if shown.returncode != 0:
        raise error(where, f"`dvc exp show --json` failed in {cwd}: {shown.stderr.strip()[:300]}",
                    fix="run it inside the repository, after `dvc exp run` or `dvc queue start`")
    return json.loads(shown.stdout)


def plot_column(name: str) -> str:
    """A CSV column name ``dvc plots`` can draw: Vega-Lite reads ``chunk.size`` as field ``size`` of ``chunk``."""
    return name.replace(".", "_")


def sweep_table(cwd: Path, params: list[str], out: Path, metrics: list[str]) -> tuple[str, list[tuple[str, str]]]:
    """Write the sweep CSV to ``out``; return it as a Markdown table, and what was left out and why."""
    for metric in metrics:
        try:
            MEASURES.parse(metric)
        except MeasureError as exc:
            raise SweepError("--metric", str(exc), fix="name a metric metrics.json reports, e.g. ndcg@10") from None
    shown = dvc_exp_show(cwd, SweepError, "dvc")
    sweep = experiment_rows(shown, params, git_run_json(cwd), detail=git_detail(cwd))
    rows = sweep.rows
    if not rows:
        raise SweepError(cwd, "has no experiments with metrics on this commit",
                         fix="queue a sweep first: dvc exp run --queue -S 'chunk.size=range(200,2001,300)'")
    unknown = [m for m in metrics if m not in rows[0]]
    if unknown:
        raise SweepError("--metric", f"{unknown[0]!r} is not in metrics.json",
                         fix=f"use one of {[name for name in rows[0] if _is_metric(name)]}")
    columns = ["experiment", *params, *metrics]
    named = [{plot_column(c): row[c] for c in columns} for row in rows]
    atomic_write_text(out, csv_text(named, [plot_column(c) for c in columns]))
    lines = ["| " + " | ".join(columns) + " |", "| " + " | ".join("---" for _ in columns) + " |"]
    for row in rows:
        cells = [f"{row[c]:.4f}" if isinstance(row[c], float) else markdown_text(str(row[c])) for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n", sweep.left_out
