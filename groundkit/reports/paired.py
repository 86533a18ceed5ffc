"""One metric over paired queries: the statistics of a candidate against the baseline, and their numbers as text.

Both runs score the same judgments, so every query yields one paired difference; :func:`paired_rows` turns
(metrics, queries) arrays into one :class:`Stat` per metric and candidate, through the statistics of
groundkit/reports/stats.py. A leaf below the comparison (groundkit/reports/compare.py) and its verdict
(groundkit/reports/verdict.py), so that both name the same type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from groundkit.reports.stats import effect_size, paired_stats_many, wins_ties_losses
from groundkit.scoring.measures import MEASURES


@dataclass(frozen=True)
class Stat:
    """One metric over one set of paired queries; interval, p-value and d_z are None below two queries."""

    metric: str
    queries: int
    baseline: float | None
    candidate: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    effect_size: float | None = None
    wins: int = 0
    ties: int = 0
    losses: int = 0

    def as_dict(self) -> dict[str, Any]:
        ci = None if self.ci_low is None else [self.ci_low, self.ci_high]
        return {"metric": self.metric, "queries": self.queries, "baseline": self.baseline,
                "candidate": self.candidate, "delta": self.delta, "ci95": ci, "p_value": self.p_value,
                "effect_size_dz": self.effect_size, "wins": self.wins, "ties": self.ties, "losses": self.losses}


def paired_rows(metrics: list[str], before: np.ndarray, afters: list[np.ndarray]) -> list[list[Stat]]:
    """One Stat per metric for each candidate; ``before`` and each of ``afters`` are (metrics, queries).

    All candidates go through the resampling together, so they share its random draws: a candidate
    gets the same interval and p-value here as compared alone.
    """
    queries = before.shape[1]
    tests = paired_stats_many(np.tile(before, (len(afters), 1)), np.concatenate(afters)) if afters else []
    result = []
    for c, after in enumerate(afters):
        stats = []
        for j, metric in enumerate(metrics):
            low, high, p_value = tests[c * len(metrics) + j]
            d = after[j] - before[j]
            means = (float(before[j].mean()), float(after[j].mean()), float(d.mean())) if queries else (None,) * 3
            stats.append(Stat(metric, queries, *means, ci_low=low, ci_high=high, p_value=p_value,
                              effect_size=effect_size(d), **dict(zip(("wins", "ties", "losses"),
                                                                     wins_ties_losses(d), strict=True))))
        result.append(stats)
    return result


def count_text(queries: int) -> str:
    return f"{queries} answerable {'query' if queries == 1 else 'queries'}"


def number_text(value: float | None, metric: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{MEASURES.parse(metric).measure.decimals}f}"


def signed_text(value: float | None, metric: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{MEASURES.parse(metric).measure.decimals}f}"
