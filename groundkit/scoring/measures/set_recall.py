"""set_recall: the share of the relevant ids found in the top k: |top k ∩ gold| / |gold| (ir_measures ``R@k``).

Unlike ``recall@k`` (hit rate), finding two of four relevant ids scores 0.5. For a run over a corpus the
ids are passages, so a quote that straddles two chunks counts twice, the reason the design record made
hit rate groundkit's recall; set recall is the measure of document-level runs (``groundkit score-trec``,
trec_eval's ``recall_k``), where each relevant document is one thing to find.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set

from groundkit.scoring.measures import Cut, Cutoff, Measure, QueryRun


def set_recall_at_k(ranking: Sequence[str], gold: Set[str] | Mapping[str, int], k: int) -> float:
    """|top ``k`` ∩ gold| / |gold|: ir_measures ``R@k``, trec_eval's ``recall_k``."""
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    if not gold:
        raise ValueError("set recall is undefined for a query without gold ids")
    return sum(1 for item in ranking[:k] if item in gold) / len(gold)


def _set_recall(run: QueryRun, cut: Cut | None) -> float:
    assert cut is not None
    if not run.gold:
        return 0.0  # no passage is relevant under the run's rule: nothing to find, nothing found
    return set_recall_at_k(run.ranking, run.gold, cut.value)


MEASURE = Measure("set_recall", frozenset({Cutoff.RANK}),
                  "share of the relevant ids in the top k (ir_measures R@k; not hit rate)", _set_recall)
