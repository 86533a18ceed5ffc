"""A sweep's experiments as one table: a parameter against the metrics, for a plot across experiments.

``dvc plots diff`` overlays revisions on the same axes (hit rate against k, say); it cannot put a
*parameter* on the x axis, because each experiment contributes one point. This module reads
``dvc exp show --json``, keeps the experiments of the current commit, and writes one row per
experiment: its name, the chosen parameters and the answerable metrics. ``dvc plots show`` then
draws that CSV like any other plot file.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from groundkit.artifacts import atomic_write_text, csv_text
from groundkit.errors import InputError


class SweepError(InputError):
    """The experiments cannot be read or lack a requested parameter or metric."""


def _dig(data: dict[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _rows_of(entry: dict[str, Any], name: str, params: list[str], metrics_file: str) -> dict[str, Any] | None:
    data = entry.get("data") or {}
    values = ((data.get("params") or {}).get("params.yaml") or {}).get("data") or {}
    metrics = ((data.get("metrics") or {}).get(metrics_file) or {}).get("data") or {}
    if not metrics:
        return None
    row: dict[str, Any] = {"experiment": name}
    for p in params:
        row[p] = _dig(values, p)
    row.update(metrics.get("answerable", {}))
    return row


def experiment_rows(shown: list[dict[str, Any]], params: list[str],
                    metrics_file: str = "metrics/metrics.json") -> list[dict[str, Any]]:
    """One row per experiment of the baseline commit (and the commit itself), sorted by the params."""
    rows = []
    for commit in shown:
        if commit.get("rev") == "workspace":
            continue
        baseline = _rows_of(commit, commit.get("name") or commit["rev"][:7], params, metrics_file)
        if baseline is not None:
            rows.append(baseline)
        for experiment in commit.get("experiments") or []:
            for revision in experiment.get("revs") or []:
                row = _rows_of(revision, revision.get("name") or revision["rev"][:7], params, metrics_file)
                if row is not None:
                    rows.append(row)
    for row in rows:
        missing = [p for p in params if row[p] is None]
        if missing:
            raise SweepError("params.yaml", f"experiment {row['experiment']!r} has no {missing[0]}",
                             key=missing[0], fix="name a parameter of params.yaml, e.g. chunk.size")
    rows.sort(key=lambda r: ([r[p] for p in params], r["experiment"]))
    return rows


def sweep_table(cwd: Path, params: list[str], out: Path, metrics: list[str]) -> str:
    """Write the sweep CSV to ``out`` and return it as a Markdown table."""
    shown = subprocess.run(["dvc", "exp", "show", "--json"], cwd=cwd, capture_output=True, text=True, check=False)
    if shown.returncode != 0:
        raise SweepError(cwd, f"`dvc exp show --json` failed: {shown.stderr.strip()[:300]}",
                         fix="run it inside the repository, after `dvc exp run` or `dvc queue start`")
    rows = experiment_rows(json.loads(shown.stdout), params)
    if not rows:
        raise SweepError(cwd, "has no experiments with metrics on this commit",
                         fix="queue a sweep first: dvc exp run --queue -S 'chunk.size=range(200,2001,300)'")
    unknown = [m for m in metrics if m not in rows[0]]
    if unknown:
        raise SweepError("--metric", f"{unknown[0]!r} is not in metrics.json", fix=f"use one of {sorted(rows[0])}")
    columns = ["experiment", *params, *metrics]
    atomic_write_text(out, csv_text(rows, columns))
    lines = ["| " + " | ".join(columns) + " |", "| " + " | ".join("---" for _ in columns) + " |"]
    for row in rows:
        cells = [f"{row[c]:.4f}" if isinstance(row[c], float) else str(row[c]) for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
