"""recall: hit rate. At the top k, 1 if any of the top k passages is relevant; at a budget, 1 if the first N
characters of the ranking reach a gold span.

It is not set recall (|top k ∩ gold| / |gold|): a query whose answer straddles two chunks must not score
half for retrieving one of them (the design record's decision). ``recall@k`` equals ir_measures
``Success@k``. At a budget the ranking is read as a reader with an N-character context window receives
it: passages concatenated in rank order and cut at N, the one the budget cuts counting only for its
visible part, so a large chunk cannot win by the text it carries past the budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set

from groundkit.corpus.passage import Passage
from groundkit.scoring.measures import ANY_OVERLAP, Cut, Cutoff, Measure, QueryRun, Relevance


def recall_at_k(ranking: Sequence[str], gold: Set[str] | Mapping[str, int], k: int) -> float:
    """Hit rate at k: 1.0 if any of the top ``k`` ids is gold, else 0.0 (ir_measures ``Success@k``)."""
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    return 1.0 if any(item in gold for item in ranking[:k]) else 0.0


def budget_hit(passages: Sequence[Passage], gold: Sequence[Passage], budget: int,
               relevance: Relevance = ANY_OVERLAP) -> float:
    """Hit rate at a context budget: 1.0 if the first ``budget`` characters of context reach a gold span."""
    if budget <= 0:
        raise ValueError(f"budget must be positive, got {budget}")
    used = 0
    for passage in passages:
        visible = budget - used - passage.prefix_length  # its own characters past a context prefix
        for span in gold:  # a plain loop: a generator per passage was a fifth of scoring's time
            if visible > 0 and relevance.holds(passage, span, within=visible):
                return 1.0
        used += passage.read_length
        if used >= budget:
            break
    return 0.0


def budget_needed(passages: Sequence[Passage], gold: Sequence[Passage],
                  relevance: Relevance = ANY_OVERLAP) -> int | None:
    """The smallest budget at which :func:`budget_hit` is 1.0 for these passages (None: none of them reach gold).

    ``budget_hit(passages, gold, b) == 1.0`` exactly when ``b >= budget_needed(passages, gold)``: passage i,
    after ``used`` characters, shows enough of a span within ``w`` characters, ``w`` being the first of its
    characters at which the visible overlap reaches what the rule needs, so it hits from budget ``used + w``
    on. One walk answers every budget of a curve, where asking :func:`budget_hit` walks the ranking once
    per budget.
    """
    needed: int | None = None
    used = 0
    for passage in passages:
        if needed is not None and used >= needed:
            break
        for span in gold:
            if relevance.holds(passage, span):
                # The visible prefix must reach `relevance.needed(span)` characters of the span.
                at = used + passage.prefix_length + max(span.start - passage.start, 0) + relevance.needed(span)
                needed = at if needed is None else min(needed, at)
        used += passage.read_length
    return needed


def _recall(run: QueryRun, cut: Cut | None) -> float:
    assert cut is not None
    if cut.kind is Cutoff.RANK:
        return recall_at_k(run.ranking, run.gold, cut.value)
    return budget_hit(run.passages, run.spans, cut.value, run.relevance)


MEASURE = Measure("recall", frozenset({Cutoff.RANK, Cutoff.BUDGET}),
                  "hit rate: 1 if the top k (or the first N characters) reach gold, else 0 (ir_measures "
                  "Success@k)", _recall)
