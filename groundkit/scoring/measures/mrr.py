"""mrr: the reciprocal rank of the first relevant passage over the retrieved depth, 0 if none was retrieved.

Averaged over queries it is the mean reciprocal rank; it equals ir_measures ``RR`` on a run truncated
to that depth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set

from groundkit.scoring.measures import Cut, Measure, QueryRun


def first_gold_rank(ranking: Sequence[str], gold: Set[str] | Mapping[str, int]) -> int | None:
    """1-based rank of the first gold id in ``ranking``, or None if there is none."""
    for rank, item in enumerate(ranking, start=1):
        if item in gold:
            return rank
    return None


def mrr(ranking: Sequence[str], gold: Set[str] | Mapping[str, int]) -> float:
    """Reciprocal rank of the first gold id, 1/r, or 0.0 if none was retrieved."""
    rank = first_gold_rank(ranking, gold)
    return 0.0 if rank is None else 1.0 / rank


def _mrr(run: QueryRun, cut: Cut | None) -> float:
    return mrr(run.ranking, run.gold)


MEASURE = Measure("mrr", frozenset(), "reciprocal rank of the first gold passage over the retrieved depth "
                  "(ir_measures RR)", _mrr)
