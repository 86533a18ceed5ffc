"""Scoring a run: derive passage-level qrels from gold spans, then apply the metrics."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence

import numpy as np

from groundkit.artifacts.models import assembled
from groundkit.corpus.judgments import Category
from groundkit.corpus.passage import Excerpt, Passage, PassageLocator, content_id
from groundkit.corpus.spans import ResolvedJudgment, ResolvedSpan
from groundkit.scoring.measures import ANY_OVERLAP, MEASURES, Metric, Relevance
from groundkit.scoring.measures.recall import budget_needed
from groundkit.scoring.providers import Labels, Retrieved, compute, head
from groundkit.scoring.providers.vectorised import first_relevant
from groundkit.scoring.schema import QueryResult, StageResult

BUDGET_CURVE = tuple(range(100, 4001, 100))
"""Context budgets (characters) at which the budget plot samples hit rate."""


def score_run(
    resolved: Sequence[ResolvedJudgment],
    rankings: Mapping[str, Sequence[str]],
    passages: Mapping[str, Excerpt],
    metrics: Sequence[Metric | str],
    *,
    universe: Sequence[Excerpt] | None,
    relevance: Relevance = ANY_OVERLAP,
    top_scores: Mapping[str, float] | None = None,
) -> tuple[StageResult, dict[str, dict[str, int]]]:
    """Score a run: every judgment's ranked passage ids, best first; ``passages`` maps each id to its passage.

    ``metrics`` are the metrics to compute, in order (names, as ``score.measures`` lists them, or parsed).
    A passage is relevant when ``relevance`` holds between it and a gold span of its query (by default any
    overlap), with the highest grade of the spans it is relevant to. Which relevant passages there are
    (the qrels, from which nDCG takes its ideal ranking) depends on what the
    retriever chose from:

    - ``universe`` given (groundkit's chunks): every relevant passage is known,
      so the qrels are all passages of the universe that overlap a gold span.
    - ``universe`` None (an external run's own passages): the relevant passages
      the run did not retrieve are unknown. One passage per span is ideal, so
      the qrels hold the relevant passages retrieved, a placeholder id
      (:func:`unretrieved_gold_id`, with its span's grade) for every span no
      retrieved passage overlaps, and placeholders for covered spans until
      there are as many ids as distinct spans: max(distinct gold spans,
      relevant passages retrieved + spans missed) ids in all. A run that
      retrieves one span as two passages and misses another is then short of
      the ideal, and retrieving more relevant passages than spans can never
      push nDCG above 1. No run holds a
      placeholder, so trec_eval and ir_measures compute the same ideal DCG as
      groundkit, and a query whose gold was never retrieved (or that the run
      left out) still counts, as a 0.

    Hit rate, MRR and the cost measures do not read the ideal ranking: the same
    passages score the same either way.

    ``top_scores`` holds each query's first result's score, from which the summary computes
    no_answer.separability (groundkit/scoring/separability.py); without it that figure is not available.

    Returns the result and the graded qrels (answerable queries only).
    """
    metrics = [MEASURES.parse(m) if isinstance(m, str) else m for m in metrics]
    answerable = [j for j in resolved if j.category is not Category.NO_ANSWER]
    known = iter(graded_in(universe, [j.spans for j in answerable], relevance)) if universe is not None else None
    results: list[QueryResult | None] = []
    qrels: dict[str, dict[str, int]] = {}
    scored: list[tuple[int, ResolvedJudgment, Sequence[str], float | None]] = []
    for judgment in resolved:
        ranking = rankings.get(judgment.query_id, ())
        top = top_scores.get(judgment.query_id) if top_scores is not None and ranking else None
        if judgment.category is Category.NO_ANSWER:
            results.append(_no_answer_result(judgment, len(ranking), top))
            continue
        if known is not None:
            gold = next(known)
        else:
            gold = _unknown_universe_qrels(judgment, [passages[passage_id] for passage_id in ranking], relevance)
        qrels[judgment.query_id] = gold
        scored.append((len(results), judgment, ranking, top))
        results.append(None)
    retrieved = Retrieved([ranking for _, _, ranking, _ in scored], passages)
    labels = Labels(list(qrels.values()), [judgment.spans for _, judgment, _, _ in scored], relevance)
    values = compute(metrics, retrieved, labels)
    names = [metric.name for metric in metrics]
    rows = np.column_stack([values[name] for name in names]).tolist() if names else [[] for _ in scored]
    firsts = first_relevant(retrieved, labels)
    for (at, judgment, ranking, top), gold, row, first in zip(scored, labels.qrels, rows, firsts, strict=True):
        results[at] = assembled(QueryResult, {
            "query_id": judgment.query_id, "query": judgment.query, "category": judgment.category,
            "retrieved": len(ranking), "gold_chunks": len(gold), "first_gold_rank": first,
            "metrics": dict(zip(names, row, strict=True)), "top_score": top})
    return StageResult(measures=names, queries=results), qrels


def graded_in(universe: Sequence[Excerpt], spans: Sequence[Sequence[ResolvedSpan]],
              relevance: Relevance) -> list[dict[str, int]]:
    """:func:`_graded` of every query's ``spans`` over one universe of passages, for all queries at once.

    The pairs of a span and a passage of its document that may overlap it are found with numpy (passages
    sorted by document and start; one starting more than the document's longest passage before the span
    cannot reach it), the rule is applied to them as arrays, and only the relevant pairs are visited in
    Python, in the order :func:`_graded` visits them (spans in order, passages by offset), so each query's
    grades are the same dict, keys in the same order. tests/scoring/test_score.py holds the two equal.
    """
    codes: dict[str, int] = {}
    u_doc = np.array([codes.setdefault(p.document, len(codes)) for p in universe], dtype=np.int64)
    u_start = np.array([p.start for p in universe], dtype=np.int64)
    u_end = np.array([p.end for p in universe], dtype=np.int64)
    counts = [len(group) for group in spans]
    flat = [span for group in spans for span in group]
    s_doc = np.array([codes.get(s.document, -1) for s in flat], dtype=np.int64)
    s_start = np.array([s.start for s in flat], dtype=np.int64)
    s_end = np.array([s.end for s in flat], dtype=np.int64)
    s_grade = np.array([s.grade for s in flat], dtype=np.int64)
    out: list[dict[str, int]] = [{} for _ in spans]
    if not len(flat) or not len(universe):
        return out
    order = np.lexsort((u_end, u_start, u_doc))
    scale = int(max(u_end.max(), s_end.max())) + 1
    keys = u_doc[order] * scale + u_start[order]
    longest = np.zeros(len(codes), dtype=np.int64)
    np.maximum.at(longest, u_doc, u_end - u_start)
    known = s_doc >= 0
    reach = np.where(known, longest[np.maximum(s_doc, 0)], 0)
    lo = np.searchsorted(keys, s_doc * scale + np.maximum(s_start - reach, 0))
    hi = np.where(known, np.searchsorted(keys, s_doc * scale + s_end), lo)
    width = hi - lo
    span = np.repeat(np.arange(len(flat)), width)
    passage = order[lo[span] + np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)]
    need = np.maximum(1, np.ceil(relevance.min_overlap * (s_end - s_start) - 1e-9)).astype(np.int64)[span]
    holds = np.minimum(u_end[passage], s_end[span]) - np.maximum(u_start[passage], s_start[span]) >= need
    query = np.repeat(np.arange(len(spans)), counts)
    for q, p, grade in zip(query[span[holds]].tolist(), passage[holds].tolist(), s_grade[span[holds]].tolist(),
                           strict=True):
        grades = out[q]
        passage_id = universe[p].passage_id
        if grade > grades.get(passage_id, 0):
            grades[passage_id] = grade
    return out


def score_two_label_sets(
    machine: Sequence[ResolvedJudgment],
    human: Sequence[ResolvedJudgment],
    rankings: Mapping[str, Sequence[str]],
    passages: Mapping[str, Excerpt],
    metrics: Sequence[Metric | str],
    *,
    universe: Sequence[Excerpt] | None,
    relevance: Relevance = ANY_OVERLAP,
    top_scores: Mapping[str, float] | None = None,
) -> tuple[StageResult, dict[str, dict[str, int]]]:
    """Score a run under a judge's labels (``machine``) and, where a person labelled the same query, theirs.

    Every machine-judged query is a row, scored as :func:`score_run` scores it under the judge's labels. A
    query of ``human`` with the same ``query_id`` also gets ``human_metrics``: its directed metrics under the
    person's labels, from the same ranking. A query for which the person found nothing relevant (``no_answer``)
    scores 0 on every one of them, as trec_eval scores a query without relevant documents, so that every
    labelled query has a value and the mean over queries is a plain mean (the estimand of
    groundkit/scoring/two_labels.py). A person's judgment of a query the judge never saw is not scored: the
    estimate is over the machine-judged queries.

    Passages nobody judged count as not relevant under both label sets; PPI corrects the judge's errors,
    not the pool's holes.

    Returns the result (``human_measures`` set, so per_query.csv has its ``human.`` columns) and the judge's
    graded qrels.
    """
    metrics = [MEASURES.parse(m) if isinstance(m, str) else m for m in metrics]
    directed = [m for m in metrics if m.measure.directed]
    result, qrels = score_run(machine, rankings, passages, metrics, universe=universe, relevance=relevance,
                              top_scores=top_scores)
    judged = {j.query_id for j in machine}
    labelled = [j for j in human if j.query_id in judged]
    scored, _ = score_run(labelled, rankings, passages, directed, universe=universe, relevance=relevance)
    by_person = {q.query_id: {m.name: q.metrics[m.name] if q.answerable else 0.0 for m in directed}
                 for q in scored.queries}
    queries = [q.model_copy(update={"human_metrics": by_person.get(q.query_id)}) for q in result.queries]
    return StageResult(measures=result.measures, queries=queries, human_measures=[m.name for m in directed]), qrels


def _graded(spans: Sequence[ResolvedSpan], locator: PassageLocator, relevance: Relevance) -> dict[str, int]:
    """The relevant passages among the locator's and their grades: the highest grade of a span each is relevant to."""
    grades: dict[str, int] = {}
    for span in spans:
        for passage in locator.overlapping(span):
            if span.grade > grades.get(passage.passage_id, 0) and relevance.holds(passage, span):
                grades[passage.passage_id] = span.grade
    return grades


def _unknown_universe_qrels(judgment: ResolvedJudgment, retrieved: Sequence[Excerpt],
                            relevance: Relevance) -> dict[str, int]:
    """The graded qrels of a query whose relevant passages are known only where retrieved."""
    gold = _graded(judgment.spans, PassageLocator(retrieved), relevance)
    spans: dict[tuple[str, int, int], ResolvedSpan] = {}
    for span in judgment.spans:
        # The same text quoted twice is one span; it keeps its highest grade.
        key = (span.document, span.start, span.end)
        if key not in spans or span.grade > spans[key].grade:
            spans[key] = span
    # Offset order: the same placeholders in every run.
    ordered = sorted(spans.values(), key=lambda s: (s.document, s.start, s.end))
    missed = [s for s in ordered if not any(relevance.holds(p, s) for p in retrieved)]
    covered = [s for s in ordered if any(relevance.holds(p, s) for p in retrieved)]
    # Every span no retrieved passage overlaps stands in the ideal ranking, with its grade, however many passages
    # the covered spans brought; covered spans stand in only as far as the ideal needs one id per span.
    extra = max(len(spans) - len(gold) - len(missed), 0)
    return gold | {unretrieved_gold_id(s): s.grade for s in missed + covered[:extra]}


def _no_answer_result(judgment: ResolvedJudgment, retrieved: int, top_score: float | None) -> QueryResult:
    return QueryResult(query_id=judgment.query_id, query=judgment.query, category=judgment.category,
                       retrieved=retrieved, gold_chunks=0, first_gold_rank=None, metrics={}, top_score=top_score)


CURVE_EVERY_K = 100
"""The hit-rate plot has a row for every k up to this one, and log-spaced rows beyond it."""

_R20 = (100, 112, 125, 140, 160, 180, 200, 224, 250, 280, 315, 355, 400, 450, 500, 560, 630, 710, 800, 900)
"""Renard's R20 preferred numbers: 20 steps per decade, each about 12% above the last."""


def hit_rate_ks(depth: int) -> list[int]:
    """The k at which the hit-rate plot samples a ranking of ``depth`` results.

    Every k from 1 to 100, then the R20 numbers times a power of ten (112, 125, ... 900, 1000,
    1120, ...) below ``depth``, then ``depth`` itself: at most 20 rows per decade past 100, so a
    depth of 100,000 gives 160 rows, not 100,000. Integers from a table, not rounded logarithms,
    so the rows are the same on every machine.
    """
    ks = list(range(1, min(depth, CURVE_EVERY_K) + 1))
    scale = 1
    while CURVE_EVERY_K * scale < depth:
        ks.extend(k for k in (n * scale for n in _R20) if ks[-1] < k < depth)
        scale *= 10
    if ks[-1] != depth:
        ks.append(depth)
    return ks


def hit_rate_curve(result: StageResult, depth: int) -> list[dict[str, object]]:
    """Answerable hit rate at each k of ``hit_rate_ks(depth)``: one row per k, for the hit-rate plot."""
    ranks = [q.first_gold_rank for q in result.queries if q.answerable]
    if not ranks:
        return []
    found = sorted(r for r in ranks if r is not None)
    return [{"k": k, "recall": bisect_right(found, k) / len(ranks)} for k in hit_rate_ks(depth)]


def budget_curve(
    resolved: Sequence[ResolvedJudgment],
    rankings: Mapping[str, Sequence[str]],
    passages: Mapping[str, Passage],
    budgets: Sequence[int] = BUDGET_CURVE,
    relevance: Relevance = ANY_OVERLAP,
) -> list[dict[str, object]]:
    """Answerable hit rate at each context budget: one row per budget, for the budget plot."""
    answerable = [j for j in resolved if j.category is not Category.NO_ANSWER]
    if not answerable:
        return []
    budget = max(budgets, default=0)
    heads = (head(rankings.get(j.query_id, ()), passages, 0, budget) for j in answerable)
    needed = sorted(n for n in (budget_needed(passages_read, j.spans, relevance)
                                for passages_read, j in zip(heads, answerable, strict=True)) if n is not None)
    return [{"budget_chars": b, "recall": bisect_right(needed, b) / len(answerable)} for b in budgets]


UNRETRIEVED_PREFIX = "gold-"
"""Starts the qrels id of a gold span no retrieved passage stands for; passage ids are bare hex, so never clash."""


def unretrieved_gold_id(span: ResolvedSpan) -> str:
    """The qrels id standing for a gold span when the universe of passages is unknown: ``gold-`` + its content_id."""
    return UNRETRIEVED_PREFIX + content_id(span.document, span.start, span.end)
