"""Run the whole evaluation in-process, against a throwaway index.

The runner calls the same step functions as the DVC stages, in the order of
the stage table (groundkit/pipeline/stages.py), inside a scratch folder, and
moves the finished artifacts into ``--out`` only when every step has
succeeded: a failed or terminated run leaves nothing behind. It never
touches the repository tree, and writes into an existing folder only on the
terms of groundkit/artifacts/outputs.py.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from groundkit.artifacts.outputs import output_folder
from groundkit.config import Params
from groundkit.corpus.judgments import pool_path
from groundkit.errors import JudgmentsError
from groundkit.inputs.text import terminal_lines
from groundkit.pipeline.collector import fewer_collections
from groundkit.pipeline.stages import (
    ARTIFACTS,
    CHUNKS,
    CORPUS_ROOT,
    JUDGMENTS,
    MACHINE_JUDGMENTS,
    MACHINE_POOL,
    METRICS,
    REPORT,
    STAGES,
    Artifact,
    ParamPath,
    RenderedPath,
    written_by,
)
from groundkit.pipeline.store import RunStore
from groundkit.retrieval.kinds import Need
from groundkit.scoring.cautions import PREFIX, two_labels, unanswered, unreachable
from groundkit.scoring.measures import metrics_of

__all__ = ["ARTIFACTS", "QUERIES_FILE", "RANKING_ARTIFACTS", "rank_queries", "run"]

QUERIES_FILE = "queries.jsonl"
"""What ``rank_queries`` ranked: the queries as judgments without gold, in the results folder beside the run."""
_RANKING_STAGES = tuple(stage for stage in STAGES if stage.in_process and stage.name not in
                        (written_by(METRICS), written_by(REPORT)))
RANKING_ARTIFACTS: tuple[str, ...] = (QUERIES_FILE, *(
    Path(path).name for stage in _RANKING_STAGES for out in stage.outputs for path in out.artifact.files))
"""What ``groundkit run --queries`` writes: every artifact up to the run, none of the scores."""


def run(
    corpus: str | Path, judgments: str | Path, params: Params, out: str | Path, *, force: bool = False,
    command: str = "run", inputs: Mapping[str, str | Path | None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> dict[str, object]:
    """Evaluate ``judgments`` on ``corpus`` with ``params``; write artifacts into ``out``.

    Args:
        force: Replace the artifacts of an earlier run in ``out`` (other files there are kept).
        command: The command writing ``out``, recorded in its ``.groundkit-output`` marker.
        inputs: Further input files ``out`` must stay clear of, by description (the params file).
        warn: Called with each warning about the results (groundkit/scoring/cautions.py), once the artifacts
            are in ``out``; by default each is printed to stderr, ``warning: ...`` in a line.

    Returns:
        The metrics.json document.

    Raises:
        OutputError: if ``out`` is, contains or lies inside an input, or holds files groundkit did not write.
    """
    metrics_of(params)  # a metric no measure writes fails before any work
    corpus, judgments = Path(corpus), Path(judgments)
    sources: dict[str, str | Path | None] = {"the corpus folder": corpus, "the judgments file": judgments,
                                             **(inputs or {})}
    if Need.RUN_FILE in params.retrieve.kind.needs:
        sources["the run file"] = params.retrieve.run
    if params.corpus.machine_judgments is not None:
        if Path(params.corpus.machine_judgments).resolve() == judgments.resolve():
            raise JudgmentsError(judgments, "is also corpus.machine_judgments: a person's judgments and a judge's "
                                 "are kept in two files, so no machine label becomes a person's",
                                 fix="point corpus.machine_judgments at the file groundkit judgments judge wrote "
                                     "(--out), or leave it unset")
        sources["the machine judgments file"] = params.corpus.machine_judgments
    with output_folder(out, command=command, artifacts=ARTIFACTS, inputs=sources, force=force) as work:
        # Every artifact under its own name in the scratch folder; the two inputs where the caller says, and the
        # machine judgments where params name them.
        paths: dict[Artifact | ParamPath | RenderedPath, Path] = {CORPUS_ROOT: corpus, JUDGMENTS: judgments}
        if params.corpus.machine_judgments is not None:
            paths[MACHINE_JUDGMENTS] = Path(params.corpus.machine_judgments)
            pool = pool_path(paths[MACHINE_JUDGMENTS])
            if pool.is_file():
                paths[MACHINE_POOL] = pool
        paths.update((output.artifact, work / output.artifact.name) for stage in STAGES for output in stage.outputs)
        # One process: what the steps read and write goes through one store, which hands back what the run
        # itself wrote (groundkit/pipeline/store.py). What the steps made is freed before the collector's
        # threshold comes back (the store, then each step's result as the next step starts): a collection at
        # the default threshold walks every young object still alive, and a depth-1000 run's 300,000 ranked
        # pairs cost it 0.07 s.
        summary: dict[str, object] = {}
        warnings: list[str | None] = []
        with fewer_collections():
            store = RunStore(work)
            for stage in (stage for stage in STAGES if stage.in_process):
                step = importlib.import_module(stage.step)
                result = step.run(**stage.arguments(paths, params, store))
                if stage.name == written_by(CHUNKS):
                    warnings.append(step.caution(len(result), params))
                if stage.name == written_by(METRICS):
                    summary = result
                del result
            del store
    warnings += [unanswered(summary), unreachable(summary, params.score.min_overlap), *two_labels(summary)]
    for warning in filter(None, warnings):
        (warn or _to_stderr)(warning)
    return summary


def _to_stderr(warning: str) -> None:
    print("\n".join(terminal_lines(PREFIX + warning)), file=sys.stderr)


def rank_queries(
    corpus: str | Path, queries: str | Path, params: Params, out: str | Path, *, force: bool = False,
    inputs: Mapping[str, str | Path | None] | None = None,
) -> int:
    """Rank passages for queries nobody labelled (groundkit/corpus/queries.py); write the results folder
    without scores into ``out``: the run, the chunks, the documents, and the queries as judgments without gold.

    The steps are those of :func:`run` up to the retrieve stage, so a folder written here pools as any run
    folder does (``groundkit pool``, ``groundkit judgments judge``).

    Returns:
        The number of queries ranked.
    """
    from groundkit.corpus.queries import as_judgments, read_queries

    read = as_judgments(read_queries(queries))
    corpus = Path(corpus)
    sources: dict[str, str | Path | None] = {"the corpus folder": corpus, "the queries file": Path(queries),
                                             **(inputs or {})}
    if Need.RUN_FILE in params.retrieve.kind.needs:
        sources["the run file"] = params.retrieve.run
    # Queries without gold are no_answer judgments to the steps; that they share words with the corpus is
    # what a query log's queries do, not a broken label.
    params = params.model_copy(update={"audit": params.audit.model_copy(update={"no_answer_shares_words": "warn"})})
    with output_folder(out, command="run", artifacts=RANKING_ARTIFACTS, inputs=sources, force=force) as work:
        judgments = work / QUERIES_FILE
        judgments.write_text("".join(j.to_json() + "\n" for j in read), encoding="utf-8", newline="\n")
        paths: dict[Artifact | ParamPath, Path] = {CORPUS_ROOT: corpus, JUDGMENTS: judgments}
        paths.update((output.artifact, work / output.artifact.name) for stage in STAGES for output in stage.outputs)
        with fewer_collections():
            store = RunStore(work)
            for stage in _RANKING_STAGES:
                importlib.import_module(stage.step).run(**stage.arguments(paths, params, store))
            del store
    return len(read)
