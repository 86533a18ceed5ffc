"""Scoring a run: derive chunk-level qrels from gold spans, then apply the metrics."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence

from groundkit.corpus.judgments import Category
from groundkit.corpus.passage import Chunk, content_id
from groundkit.corpus.spans import ResolvedJudgment, ResolvedSpan, chunk_overlaps_span, relevant_chunk_ids
from groundkit.scoring.measures import MEASURES, Passage, QueryRun, budget_hit, first_gold_rank
from groundkit.scoring.schema import QueryResult, StageResult

BUDGET_CURVE = tuple(range(100, 4001, 100))
"""Context budgets (characters) at which the budget plot samples hit rate."""


def score_rankings(
    resolved: Sequence[ResolvedJudgment],
    chunks: Sequence[Chunk],
    rankings: Mapping[str, Sequence[str]],
    ks: Sequence[int],
    budgets: Sequence[int] = (),
) -> tuple[StageResult, dict[str, set[str]]]:
    """Score every judgment's ranking (chunk ids, best first).

    Returns the result and the derived qrels (answerable queries only).
    """
    qrels = relevant_chunk_ids((j for j in resolved if j.category is not Category.NO_ANSWER), chunks)
    located = {c.chunk_id: _passage(c) for c in chunks}
    reach = _Reach(ks, budgets)
    results = []
    for judgment in resolved:
        ranking = list(rankings.get(judgment.query_id, ()))
        if judgment.category is Category.NO_ANSWER:
            results.append(_no_answer_result(judgment, len(ranking)))
        else:
            gold = qrels[judgment.query_id]
            results.append(_query_result(judgment, ranking, gold, reach.prefix(ranking, located), ks, budgets))
    return StageResult(ks=list(ks), budgets=list(budgets), queries=results), qrels


def _no_answer_result(judgment: ResolvedJudgment, retrieved: int) -> QueryResult:
    return QueryResult(query_id=judgment.query_id, query=judgment.query, category=judgment.category,
                       retrieved=retrieved, gold_chunks=0, first_gold_rank=None, metrics={})


def _query_result(
    judgment: ResolvedJudgment,
    ranking: Sequence[str],
    gold: set[str],
    passages: Sequence[Passage],
    ks: Sequence[int],
    budgets: Sequence[int],
    *,
    ideal_count: int | None = None,
) -> QueryResult:
    """Every metric of one answerable query: ``passages`` locates (at least) the head of ``ranking``."""
    spans = [(s.document, s.start, s.end) for s in judgment.spans]
    run = QueryRun(ranking=ranking, gold=gold, passages=passages, spans=spans, ideal_count=ideal_count)
    metrics = MEASURES.score(run, ks, budgets)
    return QueryResult(query_id=judgment.query_id, query=judgment.query, category=judgment.category,
                       retrieved=len(ranking), gold_chunks=len(gold) if ideal_count is None else ideal_count,
                       first_gold_rank=first_gold_rank(ranking, gold), metrics=metrics)


def _passage(chunk: Chunk) -> Passage:
    return (chunk.document, chunk.start_offset, chunk.end_offset)


class _Reach:
    """How much of a ranking the cost-side metrics read: the top max(ks), and enough to fill the largest budget.

    Locating all ``depth`` passages of every query would dominate scoring time; chars@k and the
    budget walk never look further than this prefix.
    """

    def __init__(self, ks: Sequence[int], budgets: Sequence[int]) -> None:
        self.k = max(ks, default=0)
        self.budget = max(budgets, default=0)

    def prefix(self, ranking: Sequence[str], located: Mapping[str, Passage]) -> list[Passage]:
        out: list[Passage] = []
        used = 0
        for rank, chunk_id in enumerate(ranking, start=1):
            if rank > self.k and used >= self.budget:
                break
            passage = located[chunk_id]
            out.append(passage)
            used += passage[2] - passage[1]
        return out


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
    ranked: Mapping[str, Sequence[Chunk]],
    budgets: Sequence[int] = BUDGET_CURVE,
) -> list[dict[str, object]]:
    """Answerable hit rate at each context budget: one row per budget, for the budget plot."""
    answerable = [j for j in resolved if j.category is not Category.NO_ANSWER]
    if not answerable:
        return []
    walks = [([_passage(c) for c in ranked.get(j.query_id, ())],
              [(s.document, s.start, s.end) for s in j.spans]) for j in answerable]
    return [{"budget_chars": b, "recall": sum(budget_hit(p, g, b) for p, g in walks) / len(walks)}
            for b in budgets]


UNRETRIEVED_PREFIX = "gold-"
"""Starts the qrels id of a gold span no retrieved passage stands for; passage ids are bare hex, so never clash."""


def unretrieved_gold_id(span: ResolvedSpan) -> str:
    """The qrels id standing for a gold span in an external run's qrels: ``gold-`` + content_id of the span."""
    return UNRETRIEVED_PREFIX + content_id(span.document, span.start, span.end)


def score_passages(
    resolved: Sequence[ResolvedJudgment],
    rankings: Mapping[str, Sequence[Chunk]],
    ks: Sequence[int],
    budgets: Sequence[int] = (),
) -> tuple[StageResult, dict[str, set[str]]]:
    """Score an external run: ranked passages that need not be groundkit's chunks.

    A passage is relevant when it overlaps a gold span of its query, as a chunk
    is. The set of all relevant passages of another system is unknown, so
    nDCG's ideal DCG counts max(distinct gold spans, relevant passages
    retrieved) positions: one passage per span is ideal, and retrieving more
    relevant passages than spans can never push nDCG above 1. Hit rate and MRR
    need no such count and equal what a chunk run with the same passages scores.

    The qrels returned hold, per answerable query, the relevant passages
    retrieved and, up to that ideal count, one placeholder id per gold span
    (:func:`unretrieved_gold_id`), taking first the spans no retrieved passage
    overlaps. No run holds a placeholder, so trec_eval and ir_measures compute
    the same ideal DCG as groundkit, and a query whose gold was never retrieved
    (or that the run left out) still counts, as a 0.
    """
    results = []
    qrels: dict[str, set[str]] = {}
    for judgment in resolved:
        passages = list(rankings.get(judgment.query_id, ()))
        ranking = [p.chunk_id for p in passages]
        if judgment.category is Category.NO_ANSWER:
            results.append(_no_answer_result(judgment, len(ranking)))
            continue
        gold = {p.chunk_id for p in passages if any(chunk_overlaps_span(p, s) for s in judgment.spans)}
        spans = {(s.document, s.start, s.end): s for s in judgment.spans}
        ideal = max(len(spans), len(gold))
        # Spans the run missed come first (False sorts before True), then offset order: stable across runs.
        by_coverage = sorted(spans.values(), key=lambda s: (any(chunk_overlaps_span(p, s) for p in passages),
                                                              s.document, s.start, s.end))
        qrels[judgment.query_id] = gold | {unretrieved_gold_id(s) for s in by_coverage[:ideal - len(gold)]}
        located = [_passage(p) for p in passages]
        results.append(_query_result(judgment, ranking, gold, located, ks, budgets, ideal_count=ideal))
    return StageResult(ks=list(ks), budgets=list(budgets), queries=results), qrels
