"""iou: the overlap of what a reader reads with the gold, over their union.

iou = I / (|G| + C - I), with G the gold's characters, C the characters read (duplicates included) and I
the gold characters read (``_read``); 0 when nothing is read. It is 1 only when exactly the gold is read.
"""

from __future__ import annotations

from groundkit.scoring.measures import Cut, Cutoff, Measure, QueryRun
from groundkit.scoring.measures._read import held_at


def iou(run: QueryRun, cut: Cut | None) -> float:
    assert cut is not None
    covered, gold, chars = held_at(run, cut)
    return covered / (gold + chars - covered) if chars else 0.0


MEASURE = Measure("iou", frozenset({Cutoff.RANK, Cutoff.BUDGET}),
                  "gold read over gold and read together: I / (|G| + C - I)", iou,
                  reads_characters=True)
