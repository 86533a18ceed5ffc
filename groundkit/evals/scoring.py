"""Scoring a run: derive chunk-level qrels from gold spans, then apply the metrics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from groundkit.contracts import Chunk
from groundkit.evals.corpus import Category
from groundkit.evals.metrics import first_gold_rank, mrr, ndcg_at_k, recall_at_k
from groundkit.evals.schema import QueryResult, StageResult
from groundkit.evals.spans import ResolvedJudgment, relevant_chunk_ids


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
