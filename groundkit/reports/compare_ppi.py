"""compare with two label sets: PPI++ on the per-query paired differences of each directed metric.

When both sides were scored under a judge's labels and a person's (per_query.csv's ``human.`` columns), each
machine-judged query gives a difference ``candidate - baseline`` under the judge's labels, and the queries the
person labelled give one under theirs too. PPI++ (groundkit/scoring/ppi.py) estimates the mean difference under
the person's labels over every machine-judged query, with a 95% interval and a two-sided p-value; lambda is
tuned for the differences themselves. These replace the bootstrap figures of the directed metrics in the
overall table, so the corrections (Holm, BH) and the gate work on the PPI p-values, and the verdict is read
from them. The minimum detectable effect comes from the PPI standard error of the differences:
``(z(1 - alpha/2) + z(0.8)) * se``.

A query a label set finds nothing relevant for scores 0 under it (its machine values are the no_answer row's,
empty in per_query.csv), so the estimand is a plain mean over all machine-judged queries, not the
answerable-only mean the rest of the report shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from groundkit.errors import CompareError
from groundkit.reports.sides import Side
from groundkit.scoring.ppi import POWER, MeanEstimates, classical_mean, minimum_detectable_effect, ppi_mean

METHOD = ("PPI++ (Angelopoulos et al. 2023) on the per-query paired differences: the person's labels on a sample, "
          "the judge's on every query; lambda tuned for power, clipped to [0, 1]; normal 95% interval and "
          "two-sided p-value, as ppi_py 0.2.3 computes them")


@dataclass(frozen=True)
class TwoLabelComparison:
    """The PPI figures of each directed metric both sides report under both label sets."""

    metrics: list[str]
    n: int
    N: int
    baseline: MeanEstimates
    candidate: MeanEstimates
    delta: MeanEstimates
    human_only: MeanEstimates
    machine_only: np.ndarray
    labelled_differences: np.ndarray

    def stat(self, j: int) -> dict[str, Any]:
        """Row ``j`` as compare's Stat fields: PPI's means, delta, interval and p-value over the n + N queries;
        wins, ties and losses over the n differences under the person's labels.

        ``queries`` is n, not n + N: the interval's width comes from the person's sample, so n is what the rule on
        too few queries and the non-inferiority sample size count, and ``sd`` is the standard error times sqrt(n)
        (the SD that n queries of a plain mean would need for the same interval).
        """
        delta, d = self.delta.row(j), self.labelled_differences[j]
        wins, losses = int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0))
        return {"metric": self.metrics[j], "queries": self.n, "baseline": float(self.baseline.estimate[j]),
                "candidate": float(self.candidate.estimate[j]), "delta": delta.estimate, "ci_low": delta.ci_low,
                "ci_high": delta.ci_high, "p_value": delta.p_value, "effect_size": None, "wins": wins,
                "ties": d.size - wins - losses, "losses": losses, "sd": delta.std_error * math.sqrt(self.n),
                "by_person": True}

    def mde(self, j: int, alpha: float) -> float:
        return minimum_detectable_effect(float(self.delta.std_error[j]), alpha=alpha, power=POWER)

    def as_dict(self, alpha: float) -> dict[str, Any]:
        out: dict[str, Any] = {"method": METHOD, "n": self.n, "N": self.N, "metrics": {}}
        for j, name in enumerate(self.metrics):
            delta, person = self.delta.row(j), self.human_only.row(j)
            out["metrics"][name] = {
                "delta": delta.estimate, "ci95": [delta.ci_low, delta.ci_high], "p_value": delta.p_value,
                "lambda": delta.lam, "std_error": delta.std_error, "mde": self.mde(j, alpha),
                "baseline": float(self.baseline.estimate[j]), "candidate": float(self.candidate.estimate[j]),
                "human_only": {"delta": person.estimate, "ci95": [person.ci_low, person.ci_high],
                               "p_value": person.p_value},
                "machine_only": {"delta": float(self.machine_only[j]), "biased": True},
                "width_ratio": delta.width / person.width if person.width > 0 else None,
            }
        return out


def _columns(side: Side, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(queries, metrics) of the judge's values (0 on a no_answer row) and the person's (NaN: not labelled)."""
    table = side.per_query
    human_values = table.human_values if table.human_values is not None else np.empty((len(table.position), 0))
    machine = np.nan_to_num(side.per_query.values[:, [side.per_query.metric_names.index(m) for m in names]], nan=0.0)
    human = human_values[:, [side.per_query.human_names.index(m) for m in names]]
    return machine, human


def two_label_comparison(baseline: Side, candidate: Side, metrics: list[str]) -> TwoLabelComparison | None:
    """The PPI figures when both sides carry ``human.`` columns; None when neither does.

    Refused: one side scored under two label sets and the other not, or the person's labels on other queries.
    """
    if baseline.per_query.human_values is None and candidate.per_query.human_values is None:
        return None
    for side, other in ((baseline, candidate), (candidate, baseline)):
        if side.per_query.human_values is None:
            raise CompareError(side.csv_path, f"was scored under one label set, {other.label} under two (a judge's "
                               "and a person's): their figures estimate different things",
                               fix="score both sides with the same corpus.machine_judgments (or neither)")
    names = [m for m in metrics if m in baseline.per_query.human_names and m in candidate.per_query.human_names]
    ids = sorted(baseline.per_query.position)
    before, after = ([side.per_query.position[q] for q in ids] for side in (baseline, candidate))
    b_machine, b_human = (a[before] for a in _columns(baseline, names))
    c_machine, c_human = (a[after] for a in _columns(candidate, names))
    labelled = ~np.isnan(b_human[:, 0]) if names else np.zeros(len(ids), dtype=bool)
    other = ~np.isnan(c_human[:, 0]) if names else labelled
    if not np.array_equal(labelled, other):
        query = ids[int(np.flatnonzero(labelled != other)[0])]
        raise CompareError(candidate.csv_path, f"has a person's labels on other queries than the baseline (query "
                           f"{query!r} is labelled on one side only)",
                           fix="score both sides with the same corpus.judgments and corpus.machine_judgments")
    n, N = int(labelled.sum()), int((~labelled).sum())
    if not names or n < 2:
        why = ("no directed metric has a person's column on both sides" if not names else
               f"{n} queries labelled by a person (an interval needs at least 2)")
        raise CompareError(baseline.csv_path, f"cannot be compared under two label sets: {why}",
                           fix="label a sample of the machine-judged queries with groundkit judgments sample")

    def ppi(machine: np.ndarray, human: np.ndarray) -> MeanEstimates:
        if not N:  # every query labelled: the person's mean is the estimand itself
            return classical_mean(human.T)
        return ppi_mean(human[labelled].T, machine[labelled].T, machine[~labelled].T)

    d_machine, d_human = c_machine - b_machine, c_human - b_human
    return TwoLabelComparison(
        metrics=names, n=n, N=N, baseline=ppi(b_machine, b_human), candidate=ppi(c_machine, c_human),
        delta=ppi(d_machine, d_human), human_only=classical_mean(d_human[labelled].T),
        machine_only=d_machine.mean(axis=0), labelled_differences=d_human[labelled].T)
