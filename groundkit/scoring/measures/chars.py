"""chars: the characters of context the top k passages put in front of a reader (the sum of their lengths).

Two rankings with the same hit rate are not equally good if one needs four times the text to get there:
this is the cost side of ``recall@k`` and ``ndcg@k``. A cost is neither better nor worse by itself, so no
verdict is gated on it; compare shows its change beside the quality measures at the same k.
"""

from __future__ import annotations

from collections.abc import Sequence

from groundkit.corpus.passage import Passage
from groundkit.scoring.measures import Cut, Cutoff, Measure, QueryRun


def context_chars_at_k(passages: Sequence[Passage], k: int) -> int:
    """Characters of context in the top ``k`` passages."""
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    return sum(passage.read_length for passage in passages[:k])


def _chars(run: QueryRun, cut: Cut | None) -> float:
    assert cut is not None
    return float(context_chars_at_k(run.passages, cut.value))


MEASURE = Measure("chars", frozenset({Cutoff.RANK}), "characters of context in the top k passages", _chars,
                  decimals=1, directed=False, reads_characters=True)
