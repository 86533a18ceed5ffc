"""precision: the share of what a reader reads at the cut-off that is gold.

precision = I / C, where C is the characters read (a passage read twice counts twice) and I the gold
characters among them (``_read``); 0 when nothing is read. Larger chunks dilute the gold with text the
reader did not need.
"""

from __future__ import annotations

from groundkit.scoring.measures import Cut, Cutoff, Measure, QueryRun
from groundkit.scoring.measures._read import held_at


def precision(run: QueryRun, cut: Cut | None) -> float:
    assert cut is not None
    covered, _, chars = held_at(run, cut)
    return covered / chars if chars else 0.0


MEASURE = Measure("precision", frozenset({Cutoff.RANK, Cutoff.BUDGET}),
                  "share of the characters read at the cut-off that are gold: I / C", precision,
                  reads_characters=True)
