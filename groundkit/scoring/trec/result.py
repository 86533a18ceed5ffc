"""The result folder of ``groundkit score-trec``: what ``groundkit run`` writes, for a document-level run.

``metrics.json`` (the headline), ``detail.json`` (every measure, overall and per category), ``per_query.csv``
and ``run.json`` mean what they mean for a run over a corpus (scoring/schema.py), so ``groundkit compare``,
``groundkit report``, the Python API and the pull-request gate read them unchanged. What differs, because a
TREC run and its qrels hold less than a corpus and judgments:

* per_query.csv: ``query`` is empty (qrels carry no query text); ``category`` is ``factoid`` for every query
  (TREC has no categories; ``import-beir`` labels BEIR's queries the same), a query whose qrels grade nothing
  above 0 included: it scores 0, as ``trec_eval -c`` scores it. With ``--empty-qrels-as-no-answer`` such a query
  is ``no_answer`` instead, kept out of the means. ``gold_chunks`` counts the relevant documents.
  Its metric columns are the measures groundkit's registry names (groundkit/scoring/measures/), which compare pairs
  and the report draws, ``set_recall@k`` among them. ``top_score`` is empty: score-trec does not compute
  ``no_answer.separability``.
* detail.json has a ``trec`` block: the queries of the qrels the run lacks, the queries of the run the qrels
  lack, those whose qrels grade nothing above 0 and how they were read, and the tied pairs
  (scoring/trec/measures.py says how each is treated).
* run.json: ``judgments_hash`` is the qrels' SHA-256, ``external_run`` names the run file and its SHA-256,
  ``corpus_hash`` is :data:`~groundkit.scoring.schema.DOCUMENT_LEVEL` (no corpus is read), and ``params`` are
  the measures and the run's depth (and ``empty_qrels_as_no_answer: true`` when that reading was asked for).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundkit._version import __version__
from groundkit.artifacts.atomic import atomic_write_text
from groundkit.artifacts.lines import dumps_json
from groundkit.artifacts.outputs import output_folder
from groundkit.console.progress import bar
from groundkit.corpus.judgments import Category
from groundkit.errors import JudgmentsError, RunFileError
from groundkit.scoring.schema import DOCUMENT_LEVEL, PER_QUERY_FIELDS, ExternalRunFile, RunMetadata
from groundkit.scoring.trec.files import Table, read_qrels, read_run
from groundkit.scoring.trec.measures import Scores, parse_measures, score

ARTIFACTS = ("metrics.json", "detail.json", "per_query.csv", "run.json")
ANSWERABLE = Category.FACTOID
"""The category of every query with a relevant document: TREC qrels have no categories."""


@dataclass(frozen=True)
class Scored:
    """What ``score-trec`` computed and wrote: the scores, detail.json's document and the headline."""

    scores: Scores
    detail: dict[str, Any]
    headline: dict[str, float]
    measures: list[str]


def score_trec(run_file: str | Path, qrels_file: str | Path, out: str | Path, *, measures: Sequence[str],
               headline_names: Sequence[str] = (), force: bool = False,
               empty_qrels_as_no_answer: bool = False) -> Scored:
    """Read ``run_file`` and ``qrels_file``, score the run on ``measures`` and write the result folder ``out``, its
    metrics.json holding those of ``headline_names`` computed (see :func:`headline`). A query whose qrels grade
    nothing above 0 scores 0 and counts in the means (``trec_eval -c``), or is ``no_answer`` with
    ``empty_qrels_as_no_answer``.

    ``out`` is checked before anything is read, and written in one step when everything succeeded
    (groundkit/artifacts/outputs.py).

    Raises:
        RunFileError, JudgmentsError: a bad line of the run or the qrels (or qrels that judge nothing relevant).
        MeasureError: a name that is no document-level measure.
        OutputError: an ``out`` groundkit may not write.
    """
    names = [name for name, _ in parse_measures(measures)]
    inputs = {"the run file": run_file, "the qrels file": qrels_file}
    with output_folder(out, command="score-trec", artifacts=ARTIFACTS, inputs=inputs, force=force) as scratch, \
            bar(total=3, desc="score-trec", unit="step") as progress:
        run = read_run(run_file)
        progress.update(1)
        qrels = read_qrels(qrels_file)
        if not bool((qrels.values > 0).any()):
            raise JudgmentsError(qrels.path, "grades no document above 0, so no query has anything to find",
                                 fix="point at the qrels of this run's queries; a grade above 0 marks a document "
                                     "relevant")
        shared = set(run.query_ids.tolist()) & set(qrels.query_ids.tolist())
        if not shared:
            raise RunFileError(run.path, f"names none of the {len(qrels.query_ids)} queries of {qrels.path} (it ranks "
                               f"for {run.query_ids[0]!r}, the qrels judge {qrels.query_ids[0]!r}, ...): every query "
                               "would score 0", fix="score a run against the qrels of its own queries")
        progress.update(1)
        scores = score(run, qrels, names, empty_qrels_as_no_answer=empty_qrels_as_no_answer)
        progress.update(1)
        detail = summary(scores, names)
        head = headline(detail, names, headline_names)
        atomic_write_text(scratch / "per_query.csv", per_query_csv(scores, names))
        atomic_write_text(scratch / "detail.json", dumps_json(detail))
        atomic_write_text(scratch / "metrics.json", dumps_json(head))
        atomic_write_text(scratch / "run.json", dumps_json(metadata(run, qrels, scores, names).document()))
    return Scored(scores, detail, head, names)


def metadata(run: Table, qrels: Table, scores: Scores, names: Sequence[str]) -> RunMetadata:
    """run.json: what the result was computed from (the module docstring says what each field holds)."""
    scoring: dict[str, Any] = {"measures": list(names)}
    if scores.empty_qrels_as_no_answer:
        scoring["empty_qrels_as_no_answer"] = True
    return RunMetadata(corpus_hash=DOCUMENT_LEVEL, judgments_hash=qrels.sha256,
                       params={"retrieve": {"depth": scores.depth}, "score": scoring},
                       groundkit_version=__version__, external_run=ExternalRunFile(name=run.path.name,
                                                                                   sha256=run.sha256))


def _answerable_block(scores: Scores, names: Sequence[str]) -> dict[str, Any]:
    rows = scores.answerable
    block: dict[str, Any] = {"queries": int(rows.sum())}
    if rows.any():
        block.update({name: float(scores.metrics[name][rows].mean()) for name in names})
    block["false_abstentions"] = int((rows & (scores.retrieved == 0)).sum())
    return block


def _no_answer_block(scores: Scores) -> dict[str, Any]:
    rows = ~scores.answerable
    abstained = int((rows & (scores.retrieved == 0)).sum())
    block: dict[str, Any] = {"queries": int(rows.sum()), "abstained": abstained}
    if rows.any():
        block["abstention_rate"] = abstained / int(rows.sum())
    return block


def summary(scores: Scores, names: Sequence[str]) -> dict[str, Any]:
    """detail.json: the blocks of a run over a corpus (scoring/schema.py's ``StageResult.summary``), and ``trec``."""
    answerable, no_answer = _answerable_block(scores, names), _no_answer_block(scores)
    by_category = {}
    if answerable["queries"]:
        by_category[ANSWERABLE.value] = answerable
    if no_answer["queries"]:
        by_category[Category.NO_ANSWER.value] = no_answer
    return {"answerable": answerable, "no_answer": no_answer, "by_category": by_category, "trec": {
        "queries": len(scores.query_ids), "queries_not_in_run": scores.absent,
        "run_queries_not_in_qrels": scores.unjudged, "queries_without_relevant": scores.empty_qrels,
        "empty_qrels_as": "no_answer" if scores.empty_qrels_as_no_answer else "0 (trec_eval -c)",
        "depth": scores.depth, "tied_pairs": scores.tied_pairs,
        "tied_queries": scores.tied_queries, "single_precision_ties": scores.single_precision_ties}}


def headline(detail: dict[str, Any], names: Sequence[str], wanted: Sequence[str] = ()) -> dict[str, float]:
    """metrics.json: the ``wanted`` names (``score.headline``) that were computed; without any, nDCG and hit rate at
    their deepest cut-off, MRR, and set recall at its deepest, of those named."""
    parsed = parse_measures(names)
    chosen = [name for name in wanted if name in names]
    if not chosen:
        for stem in ("ndcg", "recall", "mrr", "set_recall"):
            chosen += [name for name, metric in parsed if metric.measure.name == stem][-1:]
    wanted = chosen
    answerable = detail["answerable"]
    return {name: answerable[name] for name in wanted if name in answerable}


def per_query_csv(scores: Scores, names: Sequence[str]) -> str:
    """One row per query of the qrels, in query id order, as scoring/schema.py's ``StageResult`` writes them."""
    columns = [[f"{value:.6f}" for value in scores.metrics[name].tolist()] for name in names]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*PER_QUERY_FIELDS, *names])
    answerable = scores.answerable.tolist()
    retrieved, relevant, first = (a.tolist() for a in (scores.retrieved, scores.relevant, scores.first_relevant))
    for i, query_id in enumerate(scores.query_ids):
        if answerable[i]:
            writer.writerow([query_id, "", ANSWERABLE.value, retrieved[i], relevant[i], first[i] or "", "", "",
                             *(column[i] for column in columns)])
        else:  # top_score is left empty: score-trec does not compute no_answer.separability (KNOWN_LIMITATIONS.md)
            writer.writerow([query_id, "", Category.NO_ANSWER.value, retrieved[i], 0, "", int(retrieved[i] == 0), "",
                             *([""] * len(columns))])
    return out.getvalue()


def counts(scores: Scores) -> list[str]:
    """What was scored, left out and tied, in lines for the command's output."""
    lines = [f"{_queries(len(scores.query_ids))} of the qrels scored, {scores.absent} of them missing from the run "
             f"(scored 0, as trec_eval -c scores them); {_queries(scores.unjudged)} of the run not in the qrels "
             "(left out)"]
    if scores.empty_qrels and scores.empty_qrels_as_no_answer:
        lines.append(f"{_queries(scores.empty_qrels)} of the qrels with no document graded above 0: no_answer "
                     "(--empty-qrels-as-no-answer), left out of the means (trec_eval -c averages them in as 0)")
    elif scores.empty_qrels:
        lines.append(f"{_queries(scores.empty_qrels)} of the qrels with no document graded above 0: scored 0 and "
                     "counted in the means, as trec_eval -c does (--empty-qrels-as-no-answer leaves them out)")
    return lines


def _queries(count: int) -> str:
    return f"{count} {'query' if count == 1 else 'queries'}"


def tie_warning(scores: Scores) -> str | None:
    """The warning about tied scores, or None when no query has two documents with equal scores."""
    if not scores.tied_pairs:
        return None
    single = (f" ({scores.single_precision_ties} of them equal only in single precision, as trec_eval reads "
              "scores)" if scores.single_precision_ties else "")
    return (f"{scores.tied_pairs} pairs of documents in {scores.tied_queries} queries have equal scores{single}; "
            "they are ranked by document id, descending, as trec_eval ranks them, and a tool that breaks ties "
            "otherwise can score them otherwise")
