"""``groundkit compare BASELINE CANDIDATE --self-test``: the gate run on comparisons where nothing changed.

The observed comparison is turned into null replications: each metric's paired differences are re-centred
at zero (a candidate equal to the baseline on average, with the comparison's own spread and ties), and
the queries are resampled with replacement, the baseline's values travelling with their differences. Each
replication goes through the whole gate as the CLI runs it: the deciding intervals, the correction over
the gated metrics, the trade rule with each metric's context, the drop rule and any non-inferiority margin.
What it reports:

* the default gate's false-alarm rate: the share of replications it fails (expected at most alpha);
* each metric's two-sided test rate alone at alpha (expected near alpha; flagged outside alpha +- 0.01
  for a metric with continuous values, where the discrete test cannot explain the gap);
* the power at the minimum detectable effect: each gated metric's differences shifted down by the MDE
  the report shows, the share of replications where the gate catches it.

Non-inferiority margins are left out of the false-alarm rate (a truly equal candidate *should* fail them
when the queries are too few) and reported as the share of null replications that pass them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from groundkit.reports.compare import ALL, Comparison, answerable_ids, metric_matrix, rows_of
from groundkit.reports.inference import MIN_QUERIES, flip_nulls
from groundkit.reports.paired import Stat, decide_rows
from groundkit.reports.stats import SEED, exact_differences
from groundkit.reports.verdict import decide, non_inferiority_lines

REPLICATIONS = 1000
"""Null replications: a rate near 0.05 is known to about +- 0.007 (one standard error)."""

CHUNK = 100
"""Replications resampled at once: their draws' sums stay near 100 MiB at a handful of metrics."""

TOLERANCE = 0.01
"""How far a continuous metric's two-sided rate may stray from alpha before it is flagged."""


@dataclass
class SelfTest:
    queries: int
    replications: int
    alpha: float
    gate: list[str]
    correction: str
    false_alarm: float
    rates: dict[str, float]
    continuous: dict[str, bool]
    power: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    non_inferiority: dict[str, float] = field(default_factory=dict)


def _continuous(differences: np.ndarray) -> bool:
    """Values that are not a handful of levels: at least 20 distinct differences and under half of them 0."""
    return len(np.unique(differences)) >= 20 and np.count_nonzero(differences == 0) < differences.size / 2


def self_test(result: Comparison, *, replications: int = REPLICATIONS, seed: int = SEED) -> SelfTest:
    """Replicate ``result``'s comparison (one candidate) under the null and run its gate on each (module docstring)."""
    (candidate,) = result.candidates
    gate, alpha, correction = result.gate, result.alpha, result.correction
    costs = {m: s.metric for m, s in candidate.costs.items()}
    margins = dict(result.non_inferiority)
    metrics = list(dict.fromkeys([*gate, *costs.values(), *margins]))
    ids = answerable_ids(result.baseline)
    before = metric_matrix(result.baseline, rows_of(result.baseline, ids), metrics)
    after = metric_matrix(candidate.side, rows_of(candidate.side, ids), metrics)
    n = len(ids)
    differences = after - before
    centred = differences - differences.mean(axis=1, keepdims=True)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, (replications, n))
    mde = {d.metric: d.mde for d in result.detectable if d.category == ALL}
    shift = np.array([[mde.get(m) or 0.0] if m in gate else [0.0] for m in metrics])

    def run(shifted: bool) -> list[tuple[bool, dict[str, bool], dict[str, bool]]]:
        d = centred - shift if shifted else centred
        out = []
        for start in range(0, replications, CHUNK):
            chunk = picks[start:start + CHUNK]
            rows_before = np.concatenate([before[:, p] for p in chunk])
            rows_d = np.concatenate([d[:, p] for p in chunk])
            numerators, scales = exact_differences(np.zeros_like(rows_d), rows_d)
            nulls = flip_nulls(numerators, scales) if n >= MIN_QUERIES else [None] * len(rows_d)
            for r in range(len(chunk)):
                stats = []
                for j, metric in enumerate(metrics):
                    k = r * len(metrics) + j
                    row_d = rows_d[k]
                    sd = float(row_d.std(ddof=1)) if n > 1 else None
                    stats.append(Stat(metric, n, float(rows_before[k].mean()), float((rows_before[k] + row_d).mean()),
                                      float(row_d.mean()), None, None, p_value=None if nulls[k] is None else 0.0,
                                      null=nulls[k], sd=sd))
                out.append(gate_fails(stats))
        return out

    def gate_fails(stats: list[Stat]) -> tuple[bool, dict[str, bool], dict[str, bool]]:
        # each alone at alpha: the two-sided rate, and the costs as decide reads them
        by_metric = {s.metric: s for s in decide_rows(stats, alpha)[0]}
        alone = {m: s.significant for m, s in by_metric.items()}
        gated = decide_rows([by_metric[m] for m in gate], alpha, correction)[0]
        decision = decide(gated, {}, result.max_drop, {m: by_metric[c] for m, c in costs.items()})
        caught = {m: m in decision.regressions for m in gate}
        passed_ni = {line.metric: line.passed for line in non_inferiority_lines(by_metric, margins, alpha)}
        return bool(decision.regressions), {**alone, **{f"ni:{m}": v for m, v in passed_ni.items()}}, caught

    null_runs = run(False)
    shifted_runs = run(True) if any(mde.get(m) for m in gate) else []
    rates = {m: sum(r[1][m] for r in null_runs) / replications for m in metrics}
    power = {m: (mde.get(m), sum(r[2][m] for r in shifted_runs) / replications if mde.get(m) else None)
             for m in gate}
    return SelfTest(queries=n, replications=replications, alpha=alpha, gate=list(gate), correction=correction,
                    false_alarm=sum(r[0] for r in null_runs) / replications, rates=rates,
                    continuous={m: _continuous(differences[j]) for j, m in enumerate(metrics)}, power=power,
                    non_inferiority={m: sum(r[1][f"ni:{m}"] for r in null_runs) / replications for m in margins})


def render(test: SelfTest, labels: Mapping[str, str]) -> str:
    """The self-test as plain text within 100 columns."""
    a = test.alpha
    lines = ["groundkit compare --self-test", f"baseline: {labels['baseline']}", f"candidate: {labels['candidate']}",
             f"{test.replications} null replications over {test.queries} queries (each metric's paired differences "
             "re-centred at 0,",
             "queries resampled with replacement), each run through the whole gate:",
             f"{test.correction} over {', '.join(test.gate) or 'no gated metric'}, the trade rule and the drop rule.",
             ""]
    verdict = "ok" if test.false_alarm <= a else "ABOVE ALPHA"
    lines.append(f"default gate false-alarm rate: {test.false_alarm:.3f} (expected at most alpha {a}): {verdict}")
    lines += ["", f"two-sided test rate, each metric alone at alpha {a} (expected near {a}):"]
    width = max((len(m) for m in test.rates), default=0)
    for m, rate in test.rates.items():
        if test.continuous[m]:
            flag = "ok" if abs(rate - a) <= TOLERANCE else f"FLAGGED: outside {a} +- {TOLERANCE}"
        else:
            flag = "few distinct values: a discrete test may stay below alpha"
        lines.append(f"  {m:<{width}}  {rate:.3f}  {flag}")
    lines += ["", "power at the MDE (the gated metric's differences shifted down by the MDE the report shows):"]
    for m, (mde, power) in test.power.items():
        shown = "n/a (no MDE: too few queries)" if mde is None or power is None else \
            f"{power:.3f} at a drop of {mde:.4f} (the MDE is sized for 0.80 power)"
        lines.append(f"  {m:<{width}}  {shown}")
    if test.non_inferiority:
        lines += ["", "non-inferiority, share of null replications (a truly equal candidate) that pass:"]
        lines += [f"  {m:<{width}}  {share:.3f}" for m, share in test.non_inferiority.items()]
    return "\n".join(lines) + "\n"
