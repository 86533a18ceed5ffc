"""ndcg: normalised discounted cumulative gain at k, with each relevant passage's grade as its gain.

DCG@k = sum over ranks r <= k of grade(id at r) / log2(r + 1), a non-relevant id adding 0;
IDCG@k = the same sum over the relevant ids sorted by grade, best first;
nDCG@k = DCG@k / IDCG@k (Järvelin and Kekäläinen, 2002).

The gain is the grade itself, as trec_eval's and ir_measures' ``nDCG@k`` use it. The relevant ids are
chunk ids, so a quote straddling two chunks puts two ids in the ideal (see KNOWN_LIMITATIONS.md); an
external run's qrels also hold placeholder ids for gold it did not retrieve (groundkit/scoring/score.py).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence, Set

from groundkit.scoring.measures import Cut, Cutoff, Measure, QueryRun


def ndcg_at_k(ranking: Sequence[str], gold: Set[str] | Mapping[str, int], k: int) -> float:
    """nDCG@k; ``gold`` maps each relevant id to its grade (a set means grade 1 for each: binary gain)."""
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    grades = gold if isinstance(gold, Mapping) else dict.fromkeys(gold, 1)
    if not grades:
        raise ValueError("nDCG is undefined for a query without gold ids")
    dcg = sum(grades[item] / math.log2(rank + 1) for rank, item in enumerate(ranking[:k], start=1) if item in grades)
    best = heapq.nlargest(k, grades.values())
    ideal = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(best, start=1))
    return dcg / ideal


def _ndcg(run: QueryRun, cut: Cut | None) -> float:
    assert cut is not None
    if not run.gold:
        return 0.0  # no passage is relevant (score.min_overlap above what any chunk holds): nothing was found
    return ndcg_at_k(run.ranking, run.gold if run.grades is None else run.grades, cut.value)


MEASURE = Measure("ndcg", frozenset({Cutoff.RANK}), "nDCG at k, the relevance grade as gain (ir_measures nDCG@k)",
                  _ndcg)
