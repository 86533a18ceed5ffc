"""Step score: qrels, metrics (the headline and the detail), per-query rows, plot data and run metadata."""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundkit._version import __version__
from groundkit.artifacts.atomic import atomic_directory, atomic_write_lines, atomic_write_text
from groundkit.artifacts.lines import csv_text, dumps_json, round_floats
from groundkit.artifacts.seals import file_sha256
from groundkit.corpus.judgments import Category
from groundkit.corpus.passage import Chunk, Excerpt
from groundkit.corpus.spans import JudgedPassage, ResolvedJudgment
from groundkit.errors import ArtifactError, ParamsError, RunFileError
from groundkit.pipeline.stages import (
    CHUNKING,
    CHUNKS,
    EMBEDDINGS,
    GOLD_SPANS,
    INDEX,
    MACHINE_POOL_FILE,
    MACHINE_SPANS,
    MACHINE_SPANS_FILE,
    PASSAGES,
    PASSAGES_FILE,
    RUN,
    RUN_PARAMS_FILE,
    SPAN_SOURCES,
    Artifact,
    written_by,
)
from groundkit.retrieval.trec import qrels_lines
from groundkit.scoring.measures import Cutoff, Metric, Relevance, metrics_of
from groundkit.scoring.schema import ExternalRunFile, QueryResult, RunMetadata
from groundkit.scoring.score import budget_curve, hit_rate_curve, score_run, score_two_label_sets
from groundkit.scoring.two_labels import LabelSets, estimate, holes, judged_at
from groundkit.scoring.two_labels import headline as ppi_headline

if TYPE_CHECKING:
    from groundkit.config import Params, ScoreParams
    from groundkit.pipeline.provenance import Provenance
    from groundkit.pipeline.store import Store


def run(
    spans: Path,
    machine_spans: Path,
    span_sources: Path,
    chunks: Path,
    chunking: Path,
    run: Path,
    passages: Path,
    params: Params,
    *,
    out_qrels: Path,
    out_metrics: Path,
    out_detail: Path,
    out_per_query: Path,
    out_run_metadata: Path,
    out_plots: Path,
    store: Store,
) -> dict[str, object]:
    """Derive qrels, score the run, and write the metrics, per-query rows, plot data and run metadata.

    run.json reports what the run was computed from, as the stages that did the work recorded it: the hashes
    of the corpus and judgments the spans were resolved from, the chunk params the chunks were cut with, and
    the params the run was ranked with. Each must equal what this stage reads in params.yaml, which it
    reports: a file edited while the pipeline ran is refused, not credited with numbers it did not make.

    With machine judgments (``corpus.machine_judgments``) every machine-judged query is scored under the
    judge's labels, and under the person's where they labelled it (per_query.csv's ``human.`` columns). The
    figures under the judge's labels are biased by its errors, so detail.json marks them, and metrics.json
    carries each headline metric's prediction-powered estimate instead (groundkit/scoring/two_labels.py).

    Returns:
        The detail.json document (every measure, overall and per category).
    """

    judgments = store.read_models(spans, ResolvedJudgment, producer=written_by(GOLD_SPANS))
    machine = store.read_models(machine_spans / MACHINE_SPANS_FILE, ResolvedJudgment,
                                producer=written_by(MACHINE_SPANS))
    person = {j.query_id for j in judgments}
    asked = [*judgments, *(j for j in machine if j.query_id not in person)]  # what the retrieve stage ranked
    kind = params.retrieve.kind
    # A retriever that ranks chunks ranks the chunks, any of which it could have returned: they are the universe
    # of passages. One that reads a run ranks the run's own passages (passages.jsonl); which others would have
    # been relevant is unknown.
    universe: Sequence[Excerpt] | None
    if kind.ranks_chunks:
        universe = ranked_from = store.read_models(chunks, Chunk, producer=written_by(CHUNKS))
    else:
        universe, ranked_from = None, store.read_models(passages / PASSAGES_FILE, Excerpt,
                                                        producer=written_by(PASSAGES))
    by_id = {p.passage_id: p for p in ranked_from}
    listed_in = CHUNKS.name if kind.ranks_chunks else PASSAGES_FILE
    rankings = store.read_run(run, [j.query_id for j in asked], set(by_id), listed_in=listed_in,
                        producer=written_by(RUN))
    for query_id, ranking in rankings.items():
        if len(ranking) > params.retrieve.depth:
            raise ArtifactError(run, f"query {query_id!r} has {len(ranking)} results, more than retrieve.depth",
                                fix=f"re-run the {written_by(RUN)} stage")
    reported = params.result_params()
    ranked_with = store.read_provenance(passages / RUN_PARAMS_FILE, producer=written_by(PASSAGES))
    external_run = None if kind.ranks_chunks else _external_run_file(Path(params.retrieve.run), ranked_with,
                                                                  passages / RUN_PARAMS_FILE)
    recorded = dict(ranked_with.params)
    if "chunk" in reported:
        recorded["chunk"] = _section(store.read_provenance(chunking, producer=written_by(CHUNKING)), "chunk",
                                     chunking)
    # The records hold floats as every JSON artifact does, at FLOAT_DIGITS decimals: so does run.json.
    _check_params(params, round_floats(reported), recorded)
    sources = store.read_provenance(span_sources, producer=written_by(SPAN_SOURCES))
    try:
        metadata = RunMetadata(
            corpus_hash=sources.inputs["corpus"],
            judgments_hash=sources.inputs["judgments"],
            params=reported,
            groundkit_version=__version__,
            external_run=external_run,
            machine_judgments_hash=sources.inputs.get("machine_judgments") if machine else None,
        )
    except (KeyError, TypeError, ValueError):
        raise ArtifactError(span_sources, "lacks the input hashes",
                            fix=f"re-run the {written_by(SPAN_SOURCES)} stage") from None
    ranked = {q: list(map(itemgetter(0), r)) for q, r in rankings.items()}
    metrics = metrics_of(params)
    relevance = Relevance(params.score.min_overlap)
    # A run without scores reads back from the TREC file with -rank in their place: no score to report.
    top_scores = {q: r[0][1] for q, r in rankings.items() if r} if kind.scores else None
    if machine:
        result, qrels = score_two_label_sets(machine, judgments, ranked, by_id, metrics, universe=universe,
                                             relevance=relevance, top_scores=top_scores)
    else:
        result, qrels = score_run(judgments, ranked, by_id, metrics, universe=universe, relevance=relevance,
                                  top_scores=top_scores)
    summary = result.summary()
    sets = LabelSets.from_result(result)
    if sets is not None:
        # The intervals assume the person's labels were drawn from this very machine judgments file.
        asked_judge = {m.query_id for m in machine}
        drawn = all(j.sample is not None and j.sample.of == metadata.machine_judgments_hash
                    for j in judgments if j.query_id in asked_judge)
        block = estimate(sets, drawn=drawn)
        pool_file = machine_spans / MACHINE_POOL_FILE
        judged = None
        if pool_file.is_file():
            pool = store.read_models(pool_file, JudgedPassage, producer=written_by(MACHINE_SPANS))
            ks = sorted({m.cut.value for m in metrics if m.cut is not None and m.cut.kind is Cutoff.RANK}) or \
                [params.retrieve.depth]
            judged = judged_at(machine, {q: [by_id[p] for p in ranked[q]] for q in asked_judge}, pool, ks)
        hole = holes(judged)
        if hole:
            block["warnings"].append(hole)
        metadata = metadata.model_copy(update={"judged": judged})
        summary = {"labels": JUDGE_LABELS, **summary, "judged": judged, "ppi": block}
    bars = _bars(metrics)
    categories = [{"category": name, **{m: block[m] for m in bars}}
                  for name, block in summary["by_category"].items() if name != Category.NO_ANSWER.value]
    with atomic_directory(out_plots) as plots:
        curves = {
            "hit_rate.csv": csv_text(hit_rate_curve(result, params.retrieve.depth), ["k", "recall"]),
            "budget.csv": csv_text(budget_curve(judgments, ranked, by_id, relevance=relevance),
                                   ["budget_chars", "recall"]),
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


JUDGE_LABELS = ("the judge's labels (corpus.machine_judgments): every figure but ppi's is biased by the judge's "
                "errors; ppi holds each directed metric's prediction-powered estimate under the person's labels")
"""detail.json's ``labels`` under two label sets: which labels its figures are under."""


def headline(summary: dict[str, Any], score: ScoreParams) -> dict[str, Any]:
    """The answerable figures metrics.json keeps (``score.headline``); detail.json has every measure.

    Under two label sets, the prediction-powered estimate and interval of each headline metric instead, under
    ``ppi`` (groundkit/scoring/two_labels.py): never an answerable-only figure under the judge's labels.
    """
    if "ppi" in summary:
        return ppi_headline(summary["ppi"], list(score.headline))
    answerable = summary["answerable"]
    return {name: answerable[name] for name in score.headline}


def _bars(metrics: Sequence[Metric]) -> list[str]:
    """The per-category plot's bars: hit rate at the smallest and the deepest k, nDCG at the deepest k (those
    computed)."""
    def ranked(name: str) -> list[str]:
        return [m.name for m in sorted((m for m in metrics if m.measure.name == name and m.cut is not None
                                        and m.cut.kind is Cutoff.RANK), key=lambda m: m.cut.value)]

    recall, ndcg = ranked("recall"), ranked("ndcg")
    return list(dict.fromkeys([*recall[:1], *recall[-1:], *ndcg[-1:]])) or [metrics[0].name]


def _by_query(queries: Sequence[QueryResult], metric: str) -> list[dict[str, object]]:
    """Answerable queries best first by ``metric`` (ties by query id), numbered: the per-query plot's line."""
    ranked = sorted((q for q in queries if q.answerable), key=lambda q: (-q.metrics[metric], q.query_id))
    return [{"position": i, metric: q.metrics[metric], "query_id": q.query_id} for i, q in enumerate(ranked, 1)]


RECORDED_BY: dict[str, Artifact] = {"chunk": CHUNKING, "bm25": INDEX, "tokenize": INDEX, "dense": EMBEDDINGS,
                                    "retrieve": PASSAGES, "hybrid": PASSAGES}
"""Where the value of each params section run.json reports was recorded by the stage that used it: the stage
to run again when params.yaml no longer agrees (the retrieve stage checked the index's and the embeddings' own
records against the params it copied into its record)."""


def _section(record: Provenance, name: str, path: Path) -> object:
    if name not in record.params:
        raise ArtifactError(path, f"does not record the {name} params; it was edited by hand",
                            fix=f"re-run the {record.stage} stage")
    return record.params[name]


def _check_params(params: Params, reported: dict[str, Any], recorded: dict[str, Any]) -> None:
    """Refuse to report a params value other than the one the run was computed with (see :data:`RECORDED_BY`)."""
    for section, values in reported.items():
        if section == "score":
            continue  # this stage's own
        used = recorded.get(section)
        for key in sorted(values) if isinstance(values, dict) and isinstance(used, dict) else [None]:
            now, then = (values, used) if key is None else (values[key], used.get(key))
            if now == then:
                continue
            name = section if key is None else f"{section}.{key}"
            stage = written_by(RECORDED_BY[section])
            raise ParamsError(params.source, f"is {now!r}, but the run was computed with {then!r} (as {stage} "
                              f"recorded it): params.yaml changed while the pipeline ran, and run.json would credit "
                              "the numbers to a setting that did not make them", key=name,
                              fix=f"compute it again from that stage on: dvc repro -f -s {stage} && dvc repro "
                                  "(with groundkit run: run it again)")


def _external_run_file(path: Path, recorded: Provenance, record: Path) -> ExternalRunFile:
    """Name and SHA-256 of the external run the retrieve stage read: run.json says which file it measured.

    Refused when the file there now holds other bytes: DVC records the file as it is now, so the run would
    stand for a file it was not read from.
    """
    if len(recorded.inputs) != 1:
        raise ArtifactError(record, "does not record the external run's SHA-256",
                            fix=f"re-run the {written_by(PASSAGES)} stage")
    ((name, sha256),) = recorded.inputs.items()
    ranked = ExternalRunFile(name=name, sha256=sha256)
    try:
        digest = file_sha256(path)
    except OSError as exc:
        raise RunFileError(path, f"cannot be read to check its SHA-256 ({exc.strerror})",
                           fix="keep the run file (retrieve.run) in place until scoring is done") from None
    if digest != ranked.sha256 or path.name != ranked.name:
        stage = written_by(PASSAGES)
        raise RunFileError(path, f"changed while the pipeline ran: the {stage} stage read {ranked.name} with SHA-256 "
                           f"{ranked.sha256[:12]}..., it now holds {digest[:12]}...",
                           fix=f"read it again and go on: dvc repro -f -s {stage} && dvc repro (with groundkit run: "
                               "run it again)")
    return ranked


def summary(metrics: dict[str, object], params: Params) -> str:
    """What the stage found: the counts, the headline and every other figure, aligned within 100 columns
    (groundkit/scoring/readout.py), and a warning when the run left answerable queries without a result."""
    from groundkit.scoring.cautions import PREFIX, two_labels, unanswered, unreachable
    from groundkit.scoring.readout import WIDTH, headline_names, readout

    # In metrics.json's order, as `dvc metrics show` and `groundkit run` show the headline.
    lines = readout(metrics, sorted(headline_names(headline(metrics, params.score))), width=WIDTH - 2)
    warnings = [w for w in (unanswered(metrics), unreachable(metrics, params.score.min_overlap),
                            *two_labels(metrics)) if w]
    return "\n".join(["score:", *(f"  {line}" for line in lines), *(PREFIX + w for w in warnings)])
