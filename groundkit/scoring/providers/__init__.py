"""Providers: who computes the metrics of every query of a run, given what it retrieved and what is relevant.

A measure (groundkit/scoring/measures/) is a declaration: its name, its cut-offs, its direction, its
decimals, whether it reads passages' characters, and its per-query function, which is its definition. A
provider computes metrics for many queries at once and says which it :meth:`~Provider.supports`, as
ir_measures' providers do:

* :data:`~groundkit.scoring.providers.vectorised.VECTORISED` computes every groundkit measure for all queries
  in a few numpy operations: the rank measures from the rows of the relevant passages each ranking holds,
  the span measures from the elementary segments of the gold and of the passages read.
* :data:`~groundkit.scoring.providers.per_query.PER_QUERY` calls each measure's per-query function, query by
  query: the reference the other is tested against (tests/scoring/test_providers.py, to 1e-12), and the
  fallback for a measure no other provider knows (one a package adds through an entry point).

:func:`compute` takes the relevance as an argument (:class:`Labels`: the qrels with their grades, the gold
spans and the ``score.min_overlap`` rule), so the same retrieved passages are scored under two label sets by
two calls that differ in their labels alone::

    human = compute(metrics, retrieved, Labels(qrels=human_qrels, spans=human_spans, relevance=rule))
    machine = compute(metrics, retrieved, Labels(qrels=machine_qrels, spans=machine_spans, relevance=rule))

Each returns one array per metric, one value per query in the order of ``retrieved``: per-query values,
never means. Only answerable queries are given; what to do with the others is the caller's business.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from groundkit.scoring.measures import Metric
from groundkit.scoring.providers.inputs import Labels, Provider, Retrieved, head, reach
from groundkit.scoring.providers.per_query import PER_QUERY
from groundkit.scoring.providers.vectorised import VECTORISED

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PER_QUERY", "VECTORISED", "Labels", "Provider", "Retrieved", "compute", "head", "providers", "reach"]


def providers() -> tuple[Provider, ...]:
    """The providers in the order they are asked: the vectorised one, then the per-query reference."""
    return (VECTORISED, PER_QUERY)


def compute(metrics: Sequence[Metric], retrieved: Retrieved, labels: Labels,
            using: Sequence[Provider] | None = None) -> dict[str, np.ndarray]:
    """Every metric of every query of ``retrieved`` under ``labels``, each by the first provider of ``using`` (by
    default :func:`providers`) that supports it: per metric name, in the order of ``metrics``, one value per query.

    Raises:
        ValueError: ``labels`` does not hold one entry per query of ``retrieved``, or no provider supports a metric.
    """
    if len(labels.qrels) != len(retrieved) or (labels.spans and len(labels.spans) != len(retrieved)):
        raise ValueError(f"labels for {len(labels.qrels)} queries given with {len(retrieved)} rankings")
    chosen: dict[int, tuple[Provider, list[Metric]]] = {}
    for metric in metrics:
        provider = next((p for p in (using or providers()) if p.supports(metric)), None)
        if provider is None:
            raise ValueError(f"no provider computes {metric.name}")
        chosen.setdefault(id(provider), (provider, []))[1].append(metric)
    values: dict[str, np.ndarray] = {}
    for provider, assigned in chosen.values():
        values.update(provider.compute(assigned, retrieved, labels))
    return {metric.name: values[metric.name] for metric in metrics}
