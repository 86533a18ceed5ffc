"""span_recall: the share of a query's gold spans that some passage of the top k is relevant to.

A multi-passage query has several spans; hit rate counts one found as a hit, span_recall counts how many.
Where hit rate saturates (MS MARCO reaches 1.0 by k = 3) it still tells rankings apart. Relevance is the
run's rule (``score.min_overlap``); a span quoted twice counts once.
"""

from __future__ import annotations

from groundkit.scoring.measures import Cut, Cutoff, Measure, QueryRun


def span_recall(run: QueryRun, cut: Cut | None) -> float:
    assert cut is not None
    spans = {(s.document, s.start, s.end): s for s in run.spans}.values()
    if not spans:
        return 0.0
    top = run.passages[:cut.value]
    found = sum(1 for span in spans if any(run.relevance.holds(p, span) for p in top))
    return found / len(spans)


MEASURE = Measure("span_recall", frozenset({Cutoff.RANK}),
                  "share of the gold spans a passage of the top k is relevant to", span_recall,
                  reads_characters=True)
