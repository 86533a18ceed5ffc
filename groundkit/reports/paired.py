"""One metric over paired queries: the statistics of a candidate against the baseline, and their numbers as text.

Both runs score the same judgments, so every query yields one paired difference; :func:`paired_rows` turns
(metrics, queries) arrays into one :class:`Stat` per metric and candidate, through the statistics of
groundkit/reports/stats.py. A leaf below the comparison (groundkit/reports/compare.py) and its verdict
(groundkit/reports/verdict.py), so that both name the same type. A row is marked significant exactly when its
deciding interval (groundkit/reports/inference.py: the sign-flip test inverted, at the level its correction gives)
excludes 0; :func:`decide_rows` gives a family of rows those intervals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from groundkit.reports.inference import TOO_FEW, TOO_FEW_LABELLED, Decided, Null, decide_family, paired_tests
from groundkit.reports.stats import adjust_p_values, effect_size, wins_ties_losses
from groundkit.scoring.measures import MEASURES


@dataclass(frozen=True)
class Stat:
    """One metric over one set of paired queries; interval, p-value and d_z are None below two queries.

    ``ci_low``/``ci_high`` are the raw 95% percentile-bootstrap interval (shown as "raw 95% CI"); ``null`` is what
    the deciding interval is read from (None below MIN_QUERIES queries), ``decided`` that interval once the row's
    family is decided (:func:`decide_rows`), ``sd`` the standard deviation of the paired differences.

    ``by_person`` marks a PPI row (two label sets, groundkit/reports/compare_ppi.py): its estimate is over every
    machine-judged query, but its test rests on the queries a person labelled, so ``queries`` counts those (n), the
    count every rule on too few queries reads, and ``sd`` is PPI's standard error times sqrt(n), the spread an
    estimate from n labelled queries has.
    """

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
    null: Null | None = field(default=None, repr=False, compare=False)
    decided: Decided | None = None
    sd: float | None = None
    by_person: bool = False

    @property
    def significant(self) -> bool:
        """The deciding interval (groundkit/reports/inference.py) excludes 0; never below MIN_QUERIES queries."""
        return self.decided is not None and self.decided.significant

    def as_dict(self) -> dict[str, Any]:
        raw = None if self.ci_low is None else [self.ci_low, self.ci_high]
        d = self.decided
        ci = None if d is None else [None if math.isinf(d.low) else d.low, None if math.isinf(d.high) else d.high]
        return {"metric": self.metric, "queries": self.queries, "baseline": self.baseline,
                "candidate": self.candidate, "delta": self.delta, "ci95": raw, "p_value": self.p_value,
                "ci": ci, "ci_level": None if d is None else 1 - d.level, "ci_bounds": None if d is None else d.bounds,
                "significant": self.significant,
                "effect_size_dz": self.effect_size, "wins": self.wins, "ties": self.ties, "losses": self.losses}


def paired_rows(metrics: list[str], before: np.ndarray, afters: list[np.ndarray]) -> list[list[Stat]]:
    """One Stat per metric for each candidate; ``before`` and each of ``afters`` are (metrics, queries).

    All candidates go through the resampling together, so they share its random draws: a candidate
    gets the same interval and p-value here as compared alone.
    """
    queries = before.shape[1]
    tests = paired_tests(np.tile(before, (len(afters), 1)), np.concatenate(afters)) if afters else []
    result = []
    for c, after in enumerate(afters):
        stats = []
        for j, metric in enumerate(metrics):
            low, high, p_value, null = tests[c * len(metrics) + j]
            d = after[j] - before[j]
            means = (float(before[j].mean()), float(after[j].mean()), float(d.mean())) if queries else (None,) * 3
            stats.append(Stat(metric, queries, *means, ci_low=low, ci_high=high, p_value=p_value,
                              effect_size=effect_size(d), null=null, sd=float(d.std(ddof=1)) if queries > 1 else None,
                              **dict(zip(("wins", "ties", "losses"), wins_ties_losses(d), strict=True))))
        result.append(stats)
    return result


def decide_rows(stats: Sequence[Stat], alpha: float, correction: str = "none") -> tuple[list[Stat], list[float | None]]:
    """``stats``, tested together under ``correction``, each with its deciding interval; and their p-values adjusted
    the same way (None: no test). Rows below MIN_QUERIES queries get no interval and no mark (their p-values are
    still adjusted and shown)."""
    decided = decide_family([s.null for s in stats], [s.delta for s in stats], alpha, correction)
    return ([replace(s, decided=d) for s, d in zip(stats, decided, strict=True)],
            adjust_p_values([s.p_value for s in stats], correction))


def untested_reason(stat: Stat) -> str:
    """Why a row has no deciding interval."""
    if stat.p_value is None:
        return f"{count_text(stat.queries, stat.by_person)}; a paired test needs at least two"
    return f"{count_text(stat.queries, stat.by_person)}; {TOO_FEW_LABELLED if stat.by_person else TOO_FEW}"


def count_text(queries: int, by_person: bool = False) -> str:
    """The queries a test rests on, in words: ``21 answerable queries``, or for a PPI row (``by_person``) ``12
    queries labelled by a person``."""
    noun = "query" if queries == 1 else "queries"
    return f"{queries} {noun} labelled by a person" if by_person else f"{queries} answerable {noun}"


def number_text(value: float | None, metric: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{MEASURES.parse(metric).measure.decimals}f}"


def signed_text(value: float | None, metric: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{MEASURES.parse(metric).measure.decimals}f}"
