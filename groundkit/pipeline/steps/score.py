"""Step score: qrels, metrics (the headline and the detail), per-query rows, plot data and run metadata."""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundkit import __version__
from groundkit.artifacts import (
    atomic_directory,
    atomic_write_lines,
    atomic_write_text,
    csv_text,
    dumps_json,
    file_sha256,
    read_json,
    read_models,
)
from groundkit.corpus.passage import Chunk, Excerpt
from groundkit.corpus.spans import ResolvedJudgment
from groundkit.errors import ArtifactError, RunFileError
from groundkit.pipeline.stages import CHUNKS, GOLD_SPANS, PASSAGES, PASSAGES_FILE, RUN, VALIDATION, written_by
from groundkit.retrieval.trec import qrels_lines, read_run
from groundkit.scoring.measures import BUDGET_RECALL, NDCG, RECALL
from groundkit.scoring.schema import ExternalRunFile, QueryResult, RunMetadata
from groundkit.scoring.score import budget_curve, hit_rate_curve, score_run

if TYPE_CHECKING:
    from groundkit.config import Params, ScoreParams


def run(
    spans: Path,
    chunks: Path,
    run: Path,
    passages: Path,
    validation: Path,
    params: Params,
    *,
    out_qrels: Path,
    out_metrics: Path,
    out_detail: Path,
    out_per_query: Path,
    out_run_metadata: Path,
    out_plots: Path,
) -> dict[str, object]:
    """Derive qrels, score the run, and write the metrics, per-query rows, plot data and run metadata.

    Returns:
        The detail.json document (every measure, overall and per category).
    """

    judgments = read_models(spans, ResolvedJudgment, producer=written_by(GOLD_SPANS))
    kind = params.retrieve.kind
    # A retriever that ranks chunks ranks the chunks, any of which it could have returned: they are the universe
    # of passages. One that reads a run ranks the run's own passages (passages.jsonl); which others would have
    # been relevant is unknown.
    universe: Sequence[Excerpt] | None
    if kind.ranks_chunks:
        universe = ranked_from = read_models(chunks, Chunk, producer=written_by(CHUNKS))
    else:
        universe, ranked_from = None, read_models(passages / PASSAGES_FILE, Excerpt, producer=written_by(PASSAGES))
    by_id = {p.passage_id: p for p in ranked_from}
    listed_in = CHUNKS.name if kind.ranks_chunks else PASSAGES_FILE
    rankings = read_run(run, [j.query_id for j in judgments], set(by_id), listed_in=listed_in,
                        producer=written_by(RUN))
    for query_id, ranking in rankings.items():
        if len(ranking) > params.retrieve.depth:
            raise ArtifactError(run, f"query {query_id!r} has {len(ranking)} results, more than retrieve.depth",
                                fix=f"re-run the {written_by(RUN)} stage")
    inputs = read_json(validation, producer=written_by(VALIDATION))
    external_run = None if kind.ranks_chunks else _external_run_file(Path(params.retrieve.run))
    try:
        metadata = RunMetadata(
            corpus_hash=inputs["corpus_hash"],
            judgments_hash=inputs["judgments_hash"],
            params=params.result_params(),
            groundkit_version=__version__,
            external_run=external_run,
        )
    except (KeyError, TypeError, ValueError):
        raise ArtifactError(validation, "lacks the input hashes",
                            fix=f"re-run the {written_by(VALIDATION)} stage") from None
    ranked = {q: list(map(itemgetter(0), r)) for q, r in rankings.items()}
    result, qrels = score_run(judgments, ranked, by_id, params.score.ks, params.score.budgets, universe=universe)
    summary = result.summary()
    ks = params.score.ks
    bars = list(dict.fromkeys([RECALL.label(ks[0]), RECALL.label(ks[-1]), NDCG.label(ks[-1])]))
    categories = [{"category": name, **{m: block[m] for m in bars}}
                  for name, block in summary["by_category"].items() if "mrr" in block]
    with atomic_directory(out_plots) as plots:
        curves = {
            "hit_rate.csv": csv_text(hit_rate_curve(result, params.retrieve.depth), ["k", "recall"]),
            "budget.csv": csv_text(budget_curve(judgments, ranked, by_id), ["budget_chars", "recall"]),
            "categories.csv": csv_text(categories, ["category", *bars]),
            "queries.csv": csv_text(_by_query(result.queries, bars[-1]), ["position", bars[-1], "query_id"]),
        }
        for name, text in curves.items():
            (plots / name).write_text(text, encoding="utf-8", newline="\n")
    atomic_write_lines(out_qrels, qrels_lines(qrels))
    atomic_write_text(out_per_query, result.per_query_csv())
    atomic_write_text(out_run_metadata, dumps_json(metadata.document()))
    atomic_write_text(out_detail, dumps_json(summary))
    atomic_write_text(out_metrics, dumps_json(headline(summary, params.score)))
    return summary


def headline(summary: dict[str, Any], score: ScoreParams) -> dict[str, Any]:
    """The few answerable figures metrics.json keeps, so ``dvc metrics show`` fits in 80 columns.

    nDCG and hit rate at the deepest k, MRR, and hit rate within the middle context budget (the
    lower middle of an even number); detail.json has every measure, overall and per category.
    """
    k, budget = score.ks[-1], score.budgets[(len(score.budgets) - 1) // 2]
    answerable = summary["answerable"]
    return {name: answerable[name] for name in (NDCG.label(k), RECALL.label(k), "mrr", BUDGET_RECALL.label(budget))}


def _by_query(queries: Sequence[QueryResult], metric: str) -> list[dict[str, object]]:
    """Answerable queries best first by ``metric`` (ties by query id), numbered: the per-query plot's line."""
    ranked = sorted((q for q in queries if q.answerable), key=lambda q: (-q.metrics[metric], q.query_id))
    return [{"position": i, metric: q.metrics[metric], "query_id": q.query_id} for i, q in enumerate(ranked, 1)]


def _external_run_file(path: Path) -> ExternalRunFile:
    """Name and SHA-256 of the external run being scored: run.json says which file it measured, not where it lay."""

    try:
        digest = file_sha256(path)
    except OSError as exc:
        raise RunFileError(path, f"cannot be read to record its SHA-256 in run.json ({exc.strerror})",
                           fix="keep the run file (retrieve.run) in place until scoring is done") from None
    return ExternalRunFile(name=path.name, sha256=digest)


def summary(metrics: dict[str, object], params: Params) -> str:
    """What the stage did, in a line."""
    return f"score: {metrics['answerable']}"
