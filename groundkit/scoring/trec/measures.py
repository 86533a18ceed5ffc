"""Document-level measures of a TREC run against qrels, for every query at once.

The measures are groundkit's, under groundkit's names (groundkit/scoring/measures/): ``recall@k`` is hit
rate (ir_measures ``Success@k``), ``mrr`` the reciprocal rank of the first relevant document anywhere in the
run (``RR``), ``ndcg@k`` takes the grades as gains (``nDCG@k``), and ``set_recall@k`` the share of a query's
relevant documents found in its top k (``R@k``, trec_eval's ``recall_k``). Those that read passages
(characters, budgets, spans) have nothing to read here. A document is relevant when its grade is above 0.

Queries. Every query of the qrels is scored, as ``trec_eval -c`` scores it: one the run lacks scores 0 on every
measure, and so does one whose qrels grade no document above 0 (nothing to find, so nothing found); both count in
every mean. Asked for (``empty_qrels_as_no_answer``), the latter is read as groundkit reads a query without an
answer instead: a ``no_answer`` query, kept out of the means. A query of the run that the qrels lack is left out.
Each is counted.

Order. A query's documents are ranked as trec_eval ranks them, so that every value equals trec_eval's (and so
pytrec_eval's and ir_measures'): by score, descending, compared as trec_eval keeps a score, in single precision
(float32; two scores that differ only past the seventh significant digit tie); then, between equal scores, by
document id, descending, in code-point order (which is the byte order of UTF-8, as ``strcmp`` compares them).
The rank column is never read. Tied pairs are counted, because a tool that keeps scores in double precision or
breaks ties otherwise (ranx) can rank them otherwise.

Everything is computed with numpy over the rows of the run: one sort, then sums per query (``np.bincount``).
The per-query function of each measure (its module's in groundkit/scoring/measures/) is its definition,
which the tests hold these arrays to.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from groundkit.errors import MeasureError
from groundkit.scoring.measures import MEASURES, Cutoff, Metric
from groundkit.scoring.trec.files import Table

DOCUMENT_MEASURES = ("recall", "mrr", "ndcg", "set_recall")
"""The measures a document-level run is scored on, in report order: those of groundkit's that read ids alone."""

DEFAULT_SET_RECALL = "set_recall@100"
"""What score-trec adds to the document-level measures of score.measures when they hold no set recall."""


def default_measures(names: Sequence[str]) -> list[str]:
    """The document-level measures among ``names`` (``score.measures``), and set recall at 100 if none is."""
    chosen = [name for name in names if _document_level(MEASURES.parse(name))]
    if not any(MEASURES.parse(name).measure.name == "set_recall" for name in chosen):
        chosen.append(DEFAULT_SET_RECALL)
    return chosen


def _document_level(metric: Metric) -> bool:
    return metric.measure.name in DOCUMENT_MEASURES and (metric.cut is None or metric.cut.kind is Cutoff.RANK)


def parse_measures(names: Sequence[str]) -> list[tuple[str, Metric]]:
    """Each name with its metric, once each, in report order (measure by measure, cut-offs rising).

    Raises:
        MeasureError: A name no document-level measure writes (``chars@k`` and ``recall@Nchars`` need passages).
    """
    if not names:
        raise MeasureError("no measure was named; name at least one, e.g. ndcg@10")
    parsed: dict[str, Metric] = {}
    for name in names:
        try:
            metric = MEASURES.parse(name)
        except MeasureError:
            metric = None
        if metric is None or not _document_level(metric):
            shown = ", ".join(MEASURES[m].pattern.split("|")[0] for m in DOCUMENT_MEASURES)
            raise MeasureError(f"{name!r} is not a measure of a document-level run; those are {shown} (the "
                               "others read passages, characters or spans, which a TREC run does not have)")
        parsed[name] = metric
    ranked = sorted(parsed.items(), key=lambda item: (DOCUMENT_MEASURES.index(item[1].measure.name),
                                                      item[1].cut.value if item[1].cut else 0))
    return ranked


@dataclass(frozen=True)
class Scores:
    """Every measure of every query of the qrels, as arrays in the order of ``query_ids``.

    Attributes:
        query_ids: The queries of the qrels, in plain string order.
        answerable: Whether the query is scored and counted in the means: every query, unless
            ``empty_qrels_as_no_answer``, which makes those whose qrels grade no document above 0 ``no_answer``.
        retrieved: Documents the run ranks for the query.
        relevant: Documents the qrels grade above 0 for it.
        first_relevant: Rank of its first relevant document in the run; 0 for none.
        metrics: Per measure name, each query's value; NaN for ``no_answer`` queries.
        depth: The most documents the run ranks for one query (all its queries).
        unjudged: Queries of the run that the qrels lack, left out.
        absent: Queries of the qrels that the run lacks, scored 0 (or abstained, if ``no_answer``).
        tied_pairs: Pairs of documents of one query with equal scores (in single precision), ranked by id.
        tied_queries: Queries holding such a pair.
        single_precision_ties: Those of ``tied_pairs`` whose scores differ as read (in double precision).
        empty_qrels: Queries whose qrels grade no document above 0.
        empty_qrels_as_no_answer: Whether those were made ``no_answer`` (else scored 0 and counted, trec_eval -c).
    """

    query_ids: list[str]
    answerable: np.ndarray
    retrieved: np.ndarray
    relevant: np.ndarray
    first_relevant: np.ndarray
    metrics: dict[str, np.ndarray]
    depth: int
    unjudged: int
    absent: int
    tied_pairs: int
    tied_queries: int
    single_precision_ties: int
    empty_qrels: int = 0
    empty_qrels_as_no_answer: bool = False


@dataclass(frozen=True)
class _Ranked:
    """The run's judged rows in trec_eval's order: per row its query, rank and grade; and the qrels' ideal order."""

    query: np.ndarray
    rank: np.ndarray
    grade: np.ndarray
    ideal_query: np.ndarray
    ideal_rank: np.ndarray
    ideal_grade: np.ndarray
    first: np.ndarray
    relevant: np.ndarray

    def top(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Query, rank and grade of the relevant rows ranked within the top ``k``."""
        keep = (self.grade > 0) & (self.rank <= k)
        return self.query[keep], self.rank[keep], self.grade[keep]


def _hit_rate(r: _Ranked, k: int, n: int) -> np.ndarray:
    return ((r.first > 0) & (r.first <= k)).astype(np.float64)


def _reciprocal_rank(r: _Ranked, k: int, n: int) -> np.ndarray:
    return np.divide(1.0, r.first, out=np.zeros(n), where=r.first > 0)


def _ndcg(r: _Ranked, k: int, n: int) -> np.ndarray:
    query, rank, grade = r.top(k)
    dcg = np.bincount(query, weights=grade / np.log2(rank + 1.0), minlength=n)
    within = r.ideal_rank <= k
    ideal = np.bincount(r.ideal_query[within], weights=r.ideal_grade[within] / np.log2(r.ideal_rank[within] + 1.0),
                        minlength=n)
    return np.divide(dcg, ideal, out=np.zeros(n), where=ideal > 0)


def _set_recall(r: _Ranked, k: int, n: int) -> np.ndarray:
    found = np.bincount(r.top(k)[0], minlength=n)
    return np.divide(found, r.relevant, out=np.zeros(n), where=r.relevant > 0)


VECTORISED: dict[str, Callable[[_Ranked, int, int], np.ndarray]] = {
    "recall": _hit_rate, "mrr": _reciprocal_rank, "ndcg": _ndcg, "set_recall": _set_recall}
"""Each measure of :data:`DOCUMENT_MEASURES` (by name), for every query at once: (ranked rows, cut-off (0 for
none), queries) -> one value per query."""


def score(run: Table, qrels: Table, measures: Sequence[str], *, empty_qrels_as_no_answer: bool = False) -> Scores:
    """Score ``run`` against ``qrels`` on ``measures`` (names, see :func:`parse_measures`); a query whose qrels grade
    nothing above 0 scores 0, or, with ``empty_qrels_as_no_answer``, is ``no_answer`` (the module docstring)."""
    plan = parse_measures(measures)
    query_ids = sorted(qrels.query_ids.tolist())
    queries = pd.Index(query_ids, dtype=object)
    n = len(query_ids)
    # The qrels: each row's query in the output order, and each query's relevant documents by grade.
    qrel_query = queries.get_indexer(qrels.query_ids)[qrels.query_codes]
    positive = qrels.values > 0
    relevant = np.bincount(qrel_query[positive], minlength=n)
    # The run: its rows of judged queries, each row's grade, then trec_eval's order.
    run_query = queries.get_indexer(run.query_ids)
    judged = run_query[run.query_codes] >= 0 if run.rows else np.zeros(0, dtype=bool)
    rows_query = run_query[run.query_codes][judged]
    rows_document = run.document_codes[judged]
    grade = _grades(run, qrels, qrel_query, rows_query, rows_document)
    order, ties = _trec_order(rows_query, run.values[judged], rows_document, run.document_ids)
    retrieved = np.bincount(rows_query, minlength=n)
    starts = np.concatenate(([0], np.cumsum(retrieved)[:-1]))
    query = rows_query[order]
    rank = np.arange(len(order)) - starts[query] + 1
    grade = grade[order]
    first = np.zeros(n, dtype=np.int64)
    hits = np.flatnonzero(grade > 0)
    if len(hits):
        opening = np.concatenate(([True], query[hits][1:] != query[hits][:-1]))
        first[query[hits][opening]] = rank[hits][opening]
    ideal_query, ideal_rank, ideal_grade = _ideal(qrel_query[positive], qrels.values[positive], relevant)
    empty = relevant == 0
    answerable = ~empty if empty_qrels_as_no_answer else np.ones(n, dtype=bool)
    ranked = _Ranked(query, rank, grade.astype(np.float64), ideal_query, ideal_rank, ideal_grade.astype(np.float64),
                     first, relevant)
    metrics = {}
    for name, metric in plan:
        values = VECTORISED[metric.measure.name](ranked, metric.cut.value if metric.cut else 0, n)
        metrics[name] = np.where(answerable, values, np.nan)
    return Scores(query_ids=query_ids, answerable=answerable, retrieved=retrieved, relevant=relevant,
                  first_relevant=first, metrics=metrics,
                  depth=int(np.bincount(run.query_codes).max()) if run.rows else 0,
                  unjudged=int((run_query < 0).sum()), absent=int((retrieved == 0).sum()), **ties,
                  empty_qrels=int(empty.sum()), empty_qrels_as_no_answer=empty_qrels_as_no_answer)


def _grades(run: Table, qrels: Table, qrel_query: np.ndarray, rows_query: np.ndarray,
            rows_document: np.ndarray) -> np.ndarray:
    """The grade of each judged run row (0 where the qrels do not grade its document above 0)."""
    positive = qrels.values > 0
    documents = pd.Index(qrels.document_ids, dtype=object)
    n_documents = max(len(documents), 1)
    keys = qrel_query[positive].astype(np.int64) * n_documents + qrels.document_codes[positive]
    if not len(keys):
        return np.zeros(len(rows_query), dtype=np.int64)
    by_key = np.argsort(keys)
    keys, grades = keys[by_key], qrels.values[positive][by_key]
    row_document = documents.get_indexer(run.document_ids)[rows_document]  # -1: a document the qrels never name
    wanted = rows_query.astype(np.int64) * n_documents + row_document
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where((row_document >= 0) & (keys[at] == wanted), grades[at], 0)


def _ideal(query: np.ndarray, grade: np.ndarray, relevant: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The relevant qrels of each query best grade first, as (query, rank, grade): nDCG's ideal ranking."""
    order = np.lexsort((-grade, query))
    query, grade = query[order], grade[order]
    starts = np.concatenate(([0], np.cumsum(relevant)[:-1]))
    return query, np.arange(len(query)) - starts[query] + 1, grade


def _trec_order(query: np.ndarray, score: np.ndarray, document: np.ndarray,
                document_ids: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
    """The rows in trec_eval's order (see the module docstring), and the count of tied pairs."""
    single = score.astype(np.float32) + np.float32(0.0)  # -0.0 and 0.0 compare equal in trec_eval: one key
    bits = single.view(np.uint32)
    ascending = np.where(bits & np.uint32(0x80000000), ~bits, bits | np.uint32(0x80000000))
    key = (query.astype(np.uint64) << np.uint64(32)) | (~ascending).astype(np.uint64)
    order = np.argsort(key)
    ordered = key[order]
    same = ordered[1:] == ordered[:-1]
    ties = {"tied_pairs": 0, "tied_queries": 0, "single_precision_ties": 0}
    if not bool(same.any()):
        return order, ties
    member = np.zeros(len(order), dtype=bool)
    member[1:] |= same
    member[:-1] |= same
    at = np.flatnonzero(member)
    rows = order[at]
    # Only tied rows need the documents' string order: rank their distinct ids by code point.
    distinct, inverse = np.unique(document[rows], return_inverse=True)
    names = document_ids[distinct]
    by_name = np.empty(len(distinct), dtype=np.int64)
    by_name[sorted(range(len(distinct)), key=names.__getitem__)] = np.arange(len(distinct))
    order[at] = rows[np.lexsort((-by_name[inverse], ordered[at]))]
    ties["tied_pairs"] = _pairs(ordered[at])
    ties["tied_queries"] = len(np.unique(query[rows]))
    exact = np.lexsort((score[rows], ordered[at]))
    ties["single_precision_ties"] = ties["tied_pairs"] - _pairs(ordered[at][exact], score[rows][exact])
    return order, ties


def _pairs(*keys: np.ndarray) -> int:
    """Pairs of equal neighbours in rows sorted by ``keys`` (equal in every key): n(n-1)/2 summed over runs."""
    changes = np.zeros(len(keys[0]) - 1, dtype=bool)
    for column in keys:
        changes |= column[1:] != column[:-1]
    starts = np.flatnonzero(np.concatenate(([True], changes)))
    sizes = np.diff(np.append(starts, len(keys[0])))
    return int((sizes * (sizes - 1) // 2).sum())
