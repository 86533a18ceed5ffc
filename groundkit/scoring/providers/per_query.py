"""The per-query provider: each measure's own function, query by query.

It computes every measure, so it is the fallback for one no faster provider knows, and it is the
reference: a measure's per-query function is its definition, checked by hand and against
ir_measures/pytrec_eval, and the vectorised provider is tested equal to it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from groundkit.scoring.measures import Metric, QueryRun
from groundkit.scoring.providers.inputs import Labels, Retrieved, head, reach


class PerQueryProvider:
    """Calls ``metric.measure.per_query`` for every query and metric."""

    name = "per-query"

    def supports(self, metric: Metric) -> bool:
        return True

    def compute(self, metrics: Sequence[Metric], retrieved: Retrieved, labels: Labels) -> dict[str, np.ndarray]:
        k, budget = reach(metrics)
        values = np.zeros((len(metrics), len(retrieved)))
        for i, (ranking, qrels) in enumerate(zip(retrieved.rankings, labels.qrels, strict=True)):
            passages = head(ranking, retrieved.passages, k, budget) if retrieved.passages is not None else ()
            run = QueryRun(ranking=ranking, gold=qrels.keys(), passages=passages,
                           spans=labels.spans[i] if labels.spans else (), grades=qrels, relevance=labels.relevance)
            for j, metric in enumerate(metrics):
                values[j, i] = metric.measure.per_query(run, metric.cut)
        return {metric.name: values[j] for j, metric in enumerate(metrics)}


PER_QUERY = PerQueryProvider()
