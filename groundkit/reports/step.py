"""The report stage's step: the HTML report of the run just scored, beside its metrics.

It reads what the score stage wrote and the artifacts the run was scored from, and renders the
page of groundkit/reports/html.py. It lives with the reports, not with the pipeline's steps: the
stage table (groundkit/pipeline/stages.py) names it as a dotted string, an entry point the runner
and the DVC entry point import by name, so no pipeline module imports reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from groundkit.artifacts.atomic import atomic_write_text
from groundkit.errors import ArtifactError
from groundkit.pipeline.stages import MACHINE_SPANS_FILE, PASSAGES_FILE, PER_QUERY, RUN_METADATA, written_by
from groundkit.reports.evidence import read_files
from groundkit.reports.html import render
from groundkit.reports.page_data import workspace_input

if TYPE_CHECKING:
    from groundkit.config import Params
    from groundkit.pipeline.store import Store

LABEL = "this run"
"""The run's name in its own report: a fixed word, since its folder may be a scratch folder."""


def run(
    per_query: Path,
    run_metadata: Path,
    plots: Path,
    documents: Path,
    spans: Path,
    machine_spans: Path,
    chunks: Path,
    run: Path,
    passages: Path,
    *,
    out_report: Path,
    store: Store,
) -> int:
    """Write the report; return its size in bytes."""
    if run_metadata != per_query.parent / RUN_METADATA.name or per_query.name != PER_QUERY.name:
        raise ArtifactError(run_metadata, f"must lie beside {per_query} as {RUN_METADATA.name}, as the "
                            f"{written_by(PER_QUERY)} stage writes them", fix="keep the score stage's outputs together")
    passages_file = passages / PASSAGES_FILE
    evidence = read_files(documents, spans, chunks, run, passages_file, source="the run's artifacts", store=store,
                          machine_spans=machine_spans / MACHINE_SPANS_FILE)
    page = render(workspace_input(per_query, evidence, plots / "budget.csv", LABEL))
    atomic_write_text(out_report, page)
    return len(page.encode("utf-8"))


def summary(size: int, params: Params) -> str:
    """What the stage did, in a line."""
    return f"report: {size / 1024:.0f} KiB"
