"""coverage: the share of the gold's characters a reader reads at the cut-off.

coverage = I / |G|, where G is the union of the query's gold spans (per document, in characters) and I
the characters of G inside the union of the ranges read (``_read``); 0 when nothing is read. At a budget
(``coverage@1000chars``) it is size-fair: it answers how much of the answer a context window of that
size holds, whatever the chunk size.
"""

from __future__ import annotations

from groundkit.scoring.measures import Cut, Cutoff, Measure, QueryRun
from groundkit.scoring.measures._read import held_at


def coverage(run: QueryRun, cut: Cut | None) -> float:
    assert cut is not None
    covered, gold, chars = held_at(run, cut)
    return covered / gold if chars and gold else 0.0


MEASURE = Measure("coverage", frozenset({Cutoff.RANK, Cutoff.BUDGET}),
                  "share of the gold's characters read at the cut-off: I / |G|", coverage,
                  reads_characters=True)
