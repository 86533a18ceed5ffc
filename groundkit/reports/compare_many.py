"""One baseline against several candidates: the gated metrics in one table, corrected for the number of tests.

A sweep makes many runs, and each comparison of a candidate with the baseline on each gated metric
is one more test: at alpha = 0.05, eight candidates on two metrics give sixteen chances of a false
alarm. So the p-values of every candidate x gated metric are corrected together (Holm by default,
Benjamini-Hochberg or none on request), and each candidate's verdict and ``--fail-on-regression``
use the corrected ones. The candidates share the resampling's random draws, so each row is what a
two-run compare of that candidate would show.

The candidates are named on the command line, or are the experiments of the current commit
(``--experiments``): those ``dvc exp show --json`` lists, less the ones groundkit/reports/sweep.py
leaves out of a sweep (queued, running or failed, scored on other judgments or another corpus, or
repeating the commit); each is read from its committed ``metrics/`` like any revision.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from groundkit.errors import CompareError
from groundkit.reports import verdicts
from groundkit.reports.compare import (
    VERDICTS,
    Decision,
    Detectable,
    Stat,
    answerable_ids,
    check_alpha,
    check_comparable,
    check_correction,
    check_gate,
    check_margins,
    check_max_drop,
    cost_metrics,
    decide,
    decide_rows,
    default_gate,
    detectable,
    metric_matrix,
    paired_metrics,
    paired_rows,
    params_changed,
    rows_of,
    short_hash,
)
from groundkit.reports.compare_text import (
    CI_LEGEND,
    EFFECT_LEGEND,
    METHOD,
    correction_text,
    counts_text,
    detectable_lines,
    effect_text,
    interval_cells,
    mark,
    number_text,
    signed_text,
    verdict_reason,
)
from groundkit.reports.inference import MIN_QUERIES, TOO_FEW, Ties, tied_with_best
from groundkit.reports.sides import Side, read_side, resolve_revision
from groundkit.reports.stats import RESAMPLES, SEED
from groundkit.reports.sweep import dvc_exp_show, experiment_rows, git_run_json


@dataclass
class CandidateResult:
    """One candidate against the baseline on the gated metrics."""

    side: Side
    params_changed: dict[str, list[Any]]
    corpus_change: dict[str, str] | None
    overall: list[Stat]
    by_category: dict[str, list[Stat]]
    p_adjusted: dict[str, float | None] = field(default_factory=dict)
    verdict: str = ""
    regressions: list[str] = field(default_factory=list)
    untested: dict[str, str] = field(default_factory=dict)
    costs: dict[str, Stat] = field(default_factory=dict)
    traded: dict[str, str] = field(default_factory=dict)
    decision: Decision | None = None
    gate_lines: list[verdicts.GateLine] = field(default_factory=list)


@dataclass
class ManyComparison:
    baseline: Side
    candidates: list[CandidateResult]
    gate: list[str]
    alpha: float
    max_drop: float
    correction: str
    tests: int
    detectable: list[Detectable]
    queries: int
    left_out: list[tuple[str, str]] = field(default_factory=list)
    verdict: str = ""
    gate_notes: list[str] = field(default_factory=list)
    non_inferiority: dict[str, float] = field(default_factory=dict)
    ties: dict[str, Ties] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)


def compare_many(
    baseline: Side, candidates: list[Side], *, gate: list[str] | None = None, alpha: float = 0.05,
    max_drop: float = 0.0,
    allow_corpus_change: bool = False, correction: str = "holm", left_out: list[tuple[str, str]] | None = None,
    non_inferiority: Mapping[str, float] | None = None,
) -> ManyComparison:
    """Pair each candidate with the baseline on the gated metrics, and correct their p-values together."""
    check_alpha(alpha)
    check_max_drop(max_drop)
    check_correction(correction)
    gate_notes: list[str] = []
    if gate is None:
        gate, gate_notes = default_gate([baseline, *candidates])
    gate = check_gate(gate)
    changes = [check_comparable(baseline, c, allow_corpus_change) for c in candidates]
    margins = check_margins(non_inferiority or {})
    for candidate in candidates:
        paired_metrics(baseline, candidate, [*gate, *(m for m in margins if m not in gate)])
    shared = [m for m in baseline.metric_names if all(m in c.metric_names for c in candidates)]
    costs = cost_metrics(gate, shared)
    extra = [m for m in dict.fromkeys([*costs.values(), *margins]) if m not in gate]  # a cost is never gated
    measured = [*gate, *extra]
    ids = answerable_ids(baseline)
    before_rows = rows_of(baseline, ids)
    if 2 <= len(ids) < MIN_QUERIES:
        gate_notes.append(f"only {len(ids)} paired queries, {TOO_FEW}")
    after_rows = [rows_of(c, ids) for c in candidates]
    before = metric_matrix(baseline, before_rows, measured)
    stats = paired_rows(measured, before, [metric_matrix(c, r, measured) for c, r in zip(candidates, after_rows,
                                                                                          strict=True)])
    overall = [row[:len(gate)] for row in stats]
    categories = [baseline.categories[i] for i in before_rows]
    by_category: list[dict[str, list[Stat]]] = [{} for _ in candidates]
    for category in sorted(set(categories)):
        mask = np.array([c == category for c in categories], dtype=bool)
        rows = paired_rows(gate, metric_matrix(baseline, before_rows[mask], gate),
                           [metric_matrix(c, r[mask], gate) for c, r in zip(candidates, after_rows, strict=True)])
        for k, row in enumerate(rows):
            by_category[k][category] = row
    for k, row in enumerate(stats):
        decide_rows(row[len(gate):], alpha)  # the costs: each one test, as decide reads them
        for category_stats in by_category[k].values():
            decide_rows(category_stats, alpha)
    adjusted = decide_rows([s for row in overall for s in row], alpha, correction)
    results = []
    for k, candidate in enumerate(candidates):
        mine = adjusted[k * len(gate):(k + 1) * len(gate)]
        by_metric = {s.metric: s for s in stats[k]}
        result = CandidateResult(candidate, params_changed(baseline, candidate), changes[k], overall[k],
                                 by_category[k], p_adjusted=dict(zip(gate, mine, strict=True)),
                                 costs={m: by_metric[cost] for m, cost in costs.items()})
        decision = decide(overall[k], mine, alpha, max_drop, result.costs)
        result.decision = decision
        lines = verdicts.regression_lines(decision, {s.metric: s.delta for s in overall[k]}, max_drop, alpha)
        lines += verdicts.non_inferiority_lines(by_metric, margins, alpha)
        result.gate_lines = [replace(line, candidate=candidate.label) for line in lines]
        result.verdict, result.regressions, result.untested, result.traded = (
            decision.verdict, decision.regressions, decision.untested, decision.traded)
        results.append(result)
    verdict = verdict_summary([r.verdict for r in results])
    # Which of the baseline and the candidates are tied with the best on each gated metric (Hsu's MCB).
    everyone = [before, *(metric_matrix(c, r, measured) for c, r in zip(candidates, after_rows, strict=True))]
    ties = {m: tied_with_best(np.stack([matrix[j] for matrix in everyone]), alpha) for j, m in enumerate(gate)}
    return ManyComparison(baseline=baseline, candidates=results, gate=gate, alpha=alpha, max_drop=max_drop,
                          correction=correction, tests=sum(1 for p in adjusted if p is not None),
                          detectable=detectable(baseline, before_rows, gate, alpha), queries=len(ids),
                          left_out=list(left_out or []), verdict=verdict, gate_notes=gate_notes,
                          non_inferiority=dict(margins), ties=ties,
                          labels=[baseline.label, *(c.label for c in candidates)])


def tie_lines(result: ManyComparison, quote: str = "") -> list[str]:
    """Per gated metric, the runs tied with the best (the baseline among them), then what the design can detect."""
    if not result.ties:
        return []
    lines = [f"Tied with the best (Hsu's multiple comparison with the best, over the baseline and every candidate, "
             f"alpha {result.alpha}; none of them significantly below another):"]
    for metric, t in result.ties.items():
        names = [f"{quote}{result.labels[i]}{quote}" for i in t.tied]
        if result.queries < MIN_QUERIES:
            lines.append(f"- {metric}: no claim below {MIN_QUERIES} paired queries.")
        elif len(names) == len(result.labels):
            lines.append(f"- {metric}: all {len(names)} tied; these queries cannot tell them apart.")
        elif len(names) == 1:
            lines.append(f"- {metric}: {names[0]} alone is best, significantly above every other.")
        else:
            lines.append(f"- {metric}: {', '.join(names)} ({len(names)} of {len(result.labels)}).")
    found = [(m, t.detectable) for m, t in result.ties.items() if t.detectable is not None]
    if found:
        metric, x = found[0]
        lines.append(f"With {len(result.labels)} runs over {result.queries} queries, a difference smaller than about "
                     f"{x:.4f} in {metric} between two of them is unlikely to be detected (80% power) once every pair "
                     "is compared: compare fewer candidates, use `--correction bh` where a false discovery rate will "
                     "do, or label more queries (an LLM's labels, checked by a person).")
    return lines


def verdict_summary(verdicts: list[str]) -> str:
    """The candidates' verdicts counted, in :data:`VERDICTS` order: "2 better, 1 worse"; one verdict when all agree
    ("better" for every candidate). Never one word for candidates that disagree: a sweep with three better
    candidates and one worse is not "worse"."""
    if len(set(verdicts)) == 1:
        return verdicts[0] if len(verdicts) == 1 else f"{verdicts[0]} (all {len(verdicts)})"
    return ", ".join(f"{verdicts.count(v)} {v}" for v in VERDICTS if v in verdicts)


# --- the experiments of the current commit -----------------------------------------------------


def _sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, bool) or value is None:
        return (2, str(value))
    if isinstance(value, int | float):
        return (0, value)
    return (1, str(value))


def experiment_sides(cwd: Path, baseline: Side, baseline_spec: str, *,
                     metrics_dir: str = "metrics") -> tuple[list[Side], list[tuple[str, str]]]:
    """The comparable experiments of the current commit, sorted by the parameters they change.

    Returns the sides and what was left out as ``(name, reason)``. An experiment that is the
    baseline itself is left out too.
    """
    sweep = experiment_rows(dvc_exp_show(cwd, CompareError, "--experiments"), [], git_run_json(cwd))
    left_out = list(sweep.left_out)
    base_rev = None if Path(baseline_spec).is_dir() else resolve_revision(baseline_spec, cwd)
    base_results = _results(base_rev or baseline_spec, cwd, metrics_dir)
    sides = []
    for name, rev in sweep.experiments:
        if rev == base_rev:
            left_out.append((name, "is the baseline"))
            continue
        if base_results is not None and _results(rev, cwd, metrics_dir) == base_results:
            # An experiment that changed only where the work ran (execution.engine) changed no number: as a
            # candidate it would add a test to the correction, and weaken every other candidate's.
            left_out.append((name, f"its results are the baseline's, byte for byte ({' and '.join(RESULTS)}): "
                                   "it changes no number (execution.engine, say)"))
            continue
        sides.append(read_side(rev, cwd=cwd, metrics_dir=metrics_dir, label=name))
    changed = [params_changed(baseline, side) for side in sides]
    keys = sorted({key for change in changed for key in change})
    order = sorted(range(len(sides)), key=lambda i: ([_sort_key(changed[i].get(k, [None, None])[1]) for k in keys],
                                                     sides[i].label))
    return [sides[i] for i in order], left_out


RESULTS = ("per_query.csv", "metrics.json")
"""The files that hold a run's results: two runs with the same bytes in both are the same result."""


def _results(spec: str, cwd: Path, metrics_dir: str) -> tuple[bytes, ...] | None:
    """The bytes of :data:`RESULTS` in a results folder (found as read_side finds it) or a revision, or None."""
    folder = Path(spec)
    if folder.is_dir():
        if not (folder / RESULTS[0]).is_file():
            folder = folder / metrics_dir
        try:
            return tuple((folder / name).read_bytes() for name in RESULTS)
        except OSError:
            return None
    shown = [subprocess.run(["git", "show", f"{spec}:./{metrics_dir}/{name}"], cwd=cwd, capture_output=True,
                            check=False) for name in RESULTS]
    return None if any(s.returncode for s in shown) else tuple(s.stdout for s in shown)


# --- rendering ---------------------------------------------------------------------------------


def _changes(result: CandidateResult) -> str:
    if not result.params_changed:
        return "(none)"
    return ", ".join(f"{k}={'(not set)' if v[1] is None else v[1]}" for k, v in result.params_changed.items())


def _reason(r: CandidateResult, result: ManyComparison) -> str:
    return verdict_reason(result.gate, {s.metric: s for s in r.overall}, r.p_adjusted, result.alpha, r.traded,
                          r.costs)


def _adjusted(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.4f}"


def render_markdown_many(result: ManyComparison) -> str:
    """The N-way report as Markdown: one row per candidate and gated metric, then categories and power."""
    b = result.baseline
    corrected = correction_text(result.correction, result.tests)
    lines = [
        f"## groundkit compare: `{b.label}` against {len(result.candidates)} candidates",
        "",
        f"Paired over {result.queries} answerable queries (same judgments, hash "
        f"`{short_hash(b.metadata['judgments_hash'])}`). {CI_LEGEND} p: paired randomization test; "
        f"{RESAMPLES:,} resamples each, seed {SEED}. Gated metrics: {', '.join(result.gate)}; their p-values and "
        f"CIs are {corrected} ({len(result.candidates)} candidates x {len(result.gate)} "
        f"{'metric' if len(result.gate) == 1 else 'metrics'}).",
        EFFECT_LEGEND,
        "",
    ]
    baseline_values = {k: v[0] for r in result.candidates for k, v in r.params_changed.items()}
    if baseline_values:
        shown = ", ".join(f"{k}={'(not set)' if v is None else v}" for k, v in sorted(baseline_values.items()))
        lines += [f"Baseline parameters that candidates change: {shown}.", ""]
    changed_corpus = [r.side.label for r in result.candidates if r.corpus_change]
    if changed_corpus:
        lines += [f"**Corpus changed** (`--allow-corpus-change`) for {', '.join(changed_corpus)}: the same "
                  "judgments were scored over other documents.", ""]
    lines += ["| candidate | changes | metric | baseline | candidate | delta | CI (decides) | raw 95% CI | p "
              "| corrected p | d_z | W/T/L |",
              "| --- | --- | --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: |"]
    for r in result.candidates:
        for s in r.overall:
            m = s.metric
            interval, raw, p = interval_cells(s)
            lines.append(f"| {r.side.label} | {_changes(r)} | {m} | {number_text(s.baseline, m)} | "
                         f"{number_text(s.candidate, m)} | {signed_text(s.delta, m)}{mark(s)} | {interval} | {raw} | "
                         f"{p} | {_adjusted(r.p_adjusted[m])} | {effect_text(s)} | {counts_text(s)} |")
    lines += ["", "### Per category", "",
              f"Each row here is one test at {result.alpha}, uncorrected: they point at where a change comes from, "
              "they do not decide.", "",
              "| candidate | category | n | metric | delta | CI (decides) | raw 95% CI | p | d_z | W/T/L |",
              "| --- | --- | ---: | --- | ---: | --- | --- | ---: | ---: | ---: |"]
    for r in result.candidates:
        for category, stats in r.by_category.items():
            for s in stats:
                interval, raw, p = interval_cells(s)
                lines.append(f"| {r.side.label} | {category} | {s.queries} | {s.metric} | "
                             f"{signed_text(s.delta, s.metric)}{mark(s)} | {interval} | {raw} | {p} | "
                             f"{effect_text(s)} | {counts_text(s)} |")
    lines.append("")
    lines += detectable_lines(result.detectable, result.alpha)
    ties = tie_lines(result, "`")
    lines += [*ties, ""] if ties else []
    if result.left_out:
        lines += ["Left out of `--experiments`: " + "; ".join(f"{name}: {why}" for name, why in result.left_out)
                  + ".", ""]
    lines.append(f"**Verdicts: {result.verdict}** at alpha = {result.alpha} on {', '.join(result.gate)}, "
                 f"{corrected}:")
    lines.append("")
    for r in result.candidates:
        lines.append(f"- `{r.side.label}` ({_changes(r)}): **{r.verdict}**, {_reason(r, result)}.")
    lines += [f"{'Passed' if g.passed else '**Failed**'}: {g.metric} ({g.candidate}), rule {g.rule}: {g.text}."
              for r in result.candidates for g in r.gate_lines]
    lines += [f"Note: {note}." for note in result.gate_notes]
    return "\n".join(lines) + "\n"


def to_json_many(result: ManyComparison) -> dict[str, Any]:
    """The N-way report as plain data for machines."""
    return {
        "baseline": result.baseline.label,
        "judgments_hash": result.baseline.metadata["judgments_hash"],
        "method": METHOD,
        "gate": {"metrics": result.gate, "alpha": result.alpha, "max_drop": result.max_drop,
                 "correction": result.correction, "tests": result.tests, "notes": result.gate_notes,
                 "non_inferiority": result.non_inferiority},
        "candidates": [{
            "candidate": r.side.label,
            "params_changed": r.params_changed,
            "corpus_change": r.corpus_change,
            "overall": [{**s.as_dict(), "p_adjusted": r.p_adjusted[s.metric]} for s in r.overall],
            "by_category": {c: [s.as_dict() for s in stats] for c, stats in r.by_category.items()},
            "verdict": r.verdict,
            "regressions": r.regressions,
            "untested": r.untested,
            "gate_lines": [{"metric": g.metric, "rule": g.rule, "passed": g.passed, "text": g.text}
                           for g in r.gate_lines],
            "context": {m: {"metric": cost.metric, **{k: v for k, v in cost.as_dict().items() if k != "metric"},
                            "traded": m in r.traded} for m, cost in r.costs.items()},
        } for r in result.candidates],
        "detectable": [d.as_dict() for d in result.detectable],
        "left_out": [{"experiment": name, "reason": why} for name, why in result.left_out],
        "tied_with_best": {m: {"best": result.labels[t.best], "tied": [result.labels[i] for i in t.tied],
                               "constant": None if t.constant == float("inf") else t.constant,
                               "detectable": t.detectable} for m, t in result.ties.items()},
        "verdict": result.verdict,
    }
