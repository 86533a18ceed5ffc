"""Ranking metrics: pure functions over one query's ranking and its gold set.

Names follow ir_measures, so every number here can be checked against
trec_eval: groundkit's ``recall@k`` is *hit rate* (ir_measures ``Success@k``),
``mrr`` is ``RR`` over the retrieved depth, ``ndcg@k`` is ``nDCG@k`` with
binary gain. An answerable query that retrieved nothing scores 0 on all of
them; it is never dropped from the mean.
"""

from __future__ import annotations

import math
from collections.abc import Sequence, Set

from groundkit.corpus.passage import Passage


def first_gold_rank(ranking: Sequence[str], gold: Set[str]) -> int | None:
    """1-based rank of the first gold id in ``ranking``, or None if there is none."""
    for rank, item in enumerate(ranking, start=1):
        if item in gold:
            return rank
    return None


def recall_at_k(ranking: Sequence[str], gold: Set[str], k: int) -> float:
    """Hit rate at k: 1.0 if any of the top ``k`` ids is gold, else 0.0.

    This is not set recall (|top k ∩ gold| / |gold|): a query whose answer
    straddles two chunks must not score half for retrieving one of them.
    Equals ir_measures ``Success@k``.
    """
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    return 1.0 if any(item in gold for item in ranking[:k]) else 0.0


def mrr(ranking: Sequence[str], gold: Set[str]) -> float:
    """Reciprocal rank of the first gold id, 1/r, or 0.0 if none was retrieved.

    Averaged over queries this is the mean reciprocal rank; the cut-off is the
    retrieval depth. Equals ir_measures ``RR`` on a run truncated to that depth.
    """
    rank = first_gold_rank(ranking, gold)
    return 0.0 if rank is None else 1.0 / rank


def ndcg_at_k(ranking: Sequence[str], gold: Set[str], k: int, *, ideal_count: int | None = None) -> float:
    """Normalised discounted cumulative gain at k with binary gain.

    DCG@k = sum over ranks r <= k with a gold id of 1 / log2(r + 1);
    IDCG@k = sum over r = 1 .. min(|gold|, k) of 1 / log2(r + 1);
    nDCG@k = DCG@k / IDCG@k (Järvelin and Kekäläinen, 2002).

    ``gold`` holds chunk ids, so a quote straddling two chunks puts two ids in
    it and raises IDCG; see KNOWN_LIMITATIONS.md. Equals ir_measures ``nDCG@k``
    with relevance 1 for every gold id.

    ``ideal_count`` replaces ``len(gold)`` in IDCG when the gold set is not
    known in full, as for an external run's passages (see retrieval/external.py).
    """
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    count = len(gold) if ideal_count is None else ideal_count
    if count <= 0:
        raise ValueError("nDCG is undefined for a query without gold ids")
    dcg = sum(1.0 / math.log2(rank + 1) for rank, item in enumerate(ranking[:k], start=1) if item in gold)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(count, k) + 1))
    return dcg / ideal


def context_chars_at_k(passages: Sequence[Passage], k: int) -> int:
    """Characters of context the top ``k`` passages put in front of a reader: the sum of their lengths.

    Two rankings with the same hit rate are not equally good if one needs four times the text to get
    there; this is the cost side of ``recall@k``.
    """
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    return sum(passage.length for passage in passages[:k])


def budget_hit(passages: Sequence[Passage], gold: Sequence[Passage], budget: int) -> float:
    """Hit rate at a context budget: 1.0 if the first ``budget`` characters of context reach a gold span.

    The ranking is read as a reader with a ``budget``-character context window would receive it:
    passages concatenated in rank order and cut at ``budget`` characters. It is a hit if the part of
    some passage inside the budget overlaps a gold span of the same document by at least one
    character, the same overlap rule that makes a chunk relevant. A passage cut by the budget counts
    only for its visible prefix, so a large chunk cannot win by the text it carries past the budget.
    """
    if budget <= 0:
        raise ValueError(f"budget must be positive, got {budget}")
    used = 0
    for passage in passages:
        visible = passage.head(budget - used)
        if any(visible.overlaps(span) for span in gold):
            return 1.0
        used += passage.length
        if used >= budget:
            break
    return 0.0
