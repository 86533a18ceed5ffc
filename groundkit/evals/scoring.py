"""Scoring a run: derive chunk-level qrels from gold spans, then apply the metrics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from groundkit.contracts import Chunk
from groundkit.evals.corpus import Category
from groundkit.evals.metrics import first_gold_rank, mrr, ndcg_at_k, recall_at_k
from groundkit.evals.schema import QueryResult, StageResult
from groundkit.evals.spans import ResolvedJudgment, chunk_overlaps_span, relevant_chunk_ids


def score_rankings(
    resolved: Sequence[ResolvedJudgment],
    chunks: Sequence[Chunk],
    rankings: Mapping[str, Sequence[str]],
    ks: Sequence[int],
) -> tuple[StageResult, dict[str, set[str]]]:
    """Score every judgment's ranking (chunk ids, best first).

    Returns the result and the derived qrels (answerable queries only).
    """
    qrels = relevant_chunk_ids((j for j in resolved if j.category is not Category.NO_ANSWER), chunks)
    results = []
    for judgment in resolved:
        ranking = list(rankings.get(judgment.query_id, ()))
        if judgment.category is Category.NO_ANSWER:
            results.append(QueryResult(query_id=judgment.query_id, category=judgment.category,
                                       retrieved=len(ranking), gold_chunks=0, first_gold_rank=None, metrics={}))
            continue
        gold = qrels[judgment.query_id]
        metrics = {f"recall@{k}": recall_at_k(ranking, gold, k) for k in ks}
        metrics["mrr"] = mrr(ranking, gold)
        metrics.update({f"ndcg@{k}": ndcg_at_k(ranking, gold, k) for k in ks})
        results.append(QueryResult(query_id=judgment.query_id, category=judgment.category,
                                   retrieved=len(ranking), gold_chunks=len(gold),
                                   first_gold_rank=first_gold_rank(ranking, gold), metrics=metrics))
    return StageResult(ks=list(ks), queries=results), qrels


def score_passages(
    resolved: Sequence[ResolvedJudgment],
    rankings: Mapping[str, Sequence[Chunk]],
    ks: Sequence[int],
) -> tuple[StageResult, dict[str, set[str]]]:
    """Score an external run: ranked passages that need not be groundkit's chunks.

    A passage is relevant when it overlaps a gold span of its query, as a chunk
    is. The set of all relevant passages of another system is unknown, so
    nDCG's ideal DCG counts max(distinct gold spans, relevant passages
    retrieved) positions: one passage per span is ideal, and retrieving more
    relevant passages than spans can never push nDCG above 1. Hit rate and MRR
    need no such count and equal what a chunk run with the same passages scores.

    Returns the result and the qrels (relevant retrieved passage ids per answerable query).
    """
    results = []
    qrels: dict[str, set[str]] = {}
    for judgment in resolved:
        passages = list(rankings.get(judgment.query_id, ()))
        ranking = [p.chunk_id for p in passages]
        if judgment.category is Category.NO_ANSWER:
            results.append(QueryResult(query_id=judgment.query_id, category=judgment.category,
                                       retrieved=len(ranking), gold_chunks=0, first_gold_rank=None, metrics={}))
            continue
        gold = {p.chunk_id for p in passages if any(chunk_overlaps_span(p, s) for s in judgment.spans)}
        ideal = max(len({(s.document, s.start, s.end) for s in judgment.spans}), len(gold))
        qrels[judgment.query_id] = gold
        metrics = {f"recall@{k}": recall_at_k(ranking, gold, k) for k in ks}
        metrics["mrr"] = mrr(ranking, gold)
        metrics.update({f"ndcg@{k}": ndcg_at_k(ranking, gold, k, ideal_count=ideal) for k in ks})
        results.append(QueryResult(query_id=judgment.query_id, category=judgment.category,
                                   retrieved=len(ranking), gold_chunks=ideal,
                                   first_gold_rank=first_gold_rank(ranking, gold), metrics=metrics))
    return StageResult(ks=list(ks), queries=results), qrels
