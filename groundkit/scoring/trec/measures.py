"""Document-level measures of a TREC run against qrels, for every query at once.

The measures are groundkit's, under groundkit's names (groundkit/scoring/measures/): ``recall@k`` is hit
rate (ir_measures ``Success@k``), ``mrr`` the reciprocal rank of the first relevant document anywhere in the
run (``RR``), ``ndcg@k`` takes the grades as gains (``nDCG@k``), and ``set_recall@k`` the share of a query's
relevant documents found in its top k (``R@k``, trec_eval's ``recall_k``). Those that read passages'
characters (a measure declared ``reads_characters``, or any at a budget) have nothing to read here. A
document is relevant when its grade is above 0.

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

Everything is computed with numpy over the rows of the run: one sort, then the relevant rows go to the
vectorised provider (groundkit/scoring/providers/vectorised.py), the same functions ``groundkit run``'s
scoring uses; a measure a package adds that reads ids alone goes to its per-query function. The per-query
function of each measure (its module's in groundkit/scoring/measures/) is its definition, which the tests
hold these arrays to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from groundkit.errors import MeasureError
from groundkit.scoring.measures import MEASURES, Metric
from groundkit.scoring.providers import Labels, Retrieved
from groundkit.scoring.providers.per_query import PER_QUERY
from groundkit.scoring.providers.vectorised import VECTORISED, Ranked
from groundkit.scoring.trec.files import Table

REPORT_ORDER = ("recall", "mrr", "ndcg", "set_recall")
"""The order of the document-level measures in the result (a measure a package adds comes after them, by name)."""

DEFAULT_SET_RECALL = "set_recall@100"
"""What score-trec adds to the document-level measures of score.measures when they hold no set recall."""


def default_measures(names: Sequence[str]) -> list[str]:
    """The document-level measures among ``names`` (``score.measures``), and set recall at 100 if none is."""
    chosen = [name for name in names if not MEASURES.parse(name).reads_characters]
    if not any(MEASURES.parse(name).measure.name == "set_recall" for name in chosen):
        chosen.append(DEFAULT_SET_RECALL)
    return chosen


def parse_measures(names: Sequence[str]) -> list[tuple[str, Metric]]:
    """Each name with its metric, once each, in report order (measure by measure, cut-offs rising).

    What a document-level run can be scored on is decided by meaning: a measure that reads passages'
    characters (coverage, precision, IoU, chars, span recall, any measure at a budget of characters) has
    nothing to read in a run of document ids, and is refused with that reason.

    Raises:
        MeasureError: A name no measure writes, or one of a measure that reads characters.
    """
    if not names:
        raise MeasureError("no measure was named; name at least one, e.g. ndcg@10")
    parsed: dict[str, Metric] = {}
    for name in names:
        metric = MEASURES.parse(name)
        if metric.reads_characters:
            shown = ", ".join(m.pattern.split("|")[0] for m in MEASURES if not m.reads_characters)
            raise MeasureError(f"{name!r} is not a measure of a document-level run: it reads passages' characters "
                               "(their offsets, a budget of characters or the gold spans), which a TREC run does not "
                               f"have; the measures of a document-level run are {shown}")
        parsed[name] = metric
    order = {measure: i for i, measure in enumerate(REPORT_ORDER)}
    return sorted(parsed.items(), key=lambda item: (order.get(item[1].measure.name, len(order)), item[1].measure.name,
                                                    item[1].cut.value if item[1].cut else 0))


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
    empty = relevant == 0
    answerable = ~empty if empty_qrels_as_no_answer else np.ones(n, dtype=bool)
    hit = grade > 0
    ranked = Ranked.of(n, query[hit], rank[hit], grade[hit], qrel_query[positive], qrels.values[positive])
    fast = [metric for _, metric in plan if VECTORISED.supports_ranked(metric)]
    values = VECTORISED.ranked(fast, ranked)
    slow = [metric for _, metric in plan if not VECTORISED.supports_ranked(metric)]
    if slow:  # a measure a package adds: its per-query function, over the rankings in trec_eval's order
        documents = run.document_ids[rows_document[order]]
        rankings = [part.tolist() for part in np.split(documents, np.cumsum(retrieved)[:-1])]
        graded: list[dict[str, int]] = [{} for _ in range(n)]
        for q, document, value in zip(qrel_query[positive].tolist(), qrels.document_ids[qrels.document_codes[positive]],
                                      qrels.values[positive].tolist(), strict=True):
            graded[q][document] = value
        values.update(PER_QUERY.compute(slow, Retrieved(rankings), Labels(graded)))
    metrics = {name: np.where(answerable, values[metric.name], np.nan) for name, metric in plan}
    return Scores(query_ids=query_ids, answerable=answerable, retrieved=retrieved, relevant=relevant,
                  first_relevant=ranked.first, metrics=metrics,
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
