"""Comparing two runs query by query: paired confidence intervals, a paired test and a verdict.

``dvc metrics diff`` says that a mean moved; it cannot say whether the move is larger than what
reshuffling the same queries would give. Both runs score the same judgments, so every query yields
one paired difference, and the statistics below are over those differences:

* the 95% confidence interval of the mean difference is a paired percentile bootstrap (queries
  resampled with replacement, ``RESAMPLES`` times, fixed seed);
* the p-value is a paired randomization test (under the null hypothesis each query's two results are
  exchangeable, so the sign of its difference is flipped at random, ``RESAMPLES`` times, fixed seed;
  scipy enumerates every sign pattern exactly when there are fewer than that).

Both come from scipy with a seeded generator, so the same two runs always give the same report.
A side is a git revision or DVC experiment (its committed ``metrics/``), or a directory holding
``per_query.csv`` and ``run.json`` (the output of ``groundkit run`` or a workspace's ``metrics/``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from groundkit.errors import InputError

RESAMPLES = 10_000
SEED = 20261202
NO_ANSWER = "no_answer"


class CompareError(InputError):
    """A side cannot be read, or the two sides are not comparable."""


@dataclass(frozen=True)
class Side:
    """One run's per-query rows and metadata, as read from disk or git."""

    label: str
    rows: dict[str, dict[str, str]]
    metadata: dict[str, Any]
    metric_names: list[str]


@dataclass
class Stat:
    metric: str
    queries: int
    baseline: float
    candidate: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "queries": self.queries, "baseline": self.baseline,
                "candidate": self.candidate, "delta": self.delta, "ci95": [self.ci_low, self.ci_high],
                "p_value": self.p_value}


@dataclass
class Comparison:
    baseline: Side
    candidate: Side
    overall: list[Stat]
    by_category: dict[str, list[Stat]]
    worse: list[dict[str, Any]]
    better: list[dict[str, Any]]
    no_answer: dict[str, Any]
    params_changed: dict[str, list[Any]]
    gate: list[str]
    alpha: float
    max_drop: float
    verdict: str = ""
    regressions: list[str] = field(default_factory=list)


# --- reading a side ----------------------------------------------------------------------------


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def _resolve_revision(spec: str, cwd: Path) -> str | None:
    """A commit for ``spec``: any git revision, else a DVC experiment name (refs/exps/.../NAME)."""
    found = _git(["rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}"], cwd)
    if found.returncode == 0:
        return found.stdout.strip()
    refs = _git(["for-each-ref", "--format=%(refname) %(objectname)", "refs/exps"], cwd)
    matches = sorted({line.split()[1] for line in refs.stdout.splitlines()
                      if line.split()[0].rsplit("/", 1)[-1] == spec})
    if len(matches) > 1:
        raise CompareError(spec, f"names {len(matches)} DVC experiments",
                           fix="use the experiment's commit from `dvc exp show` instead of its name")
    return matches[0] if matches else None


def read_side(spec: str, *, cwd: Path, metrics_dir: str = "metrics") -> Side:
    """Read one side of a comparison: a results directory, a git revision, or a DVC experiment name."""
    directory = Path(spec)
    if directory.is_dir():
        if not (directory / "per_query.csv").is_file() and (directory / metrics_dir / "per_query.csv").is_file():
            directory = directory / metrics_dir
        texts = {}
        for name in ("per_query.csv", "run.json"):
            if not (directory / name).is_file():
                raise CompareError(directory, f"holds no {name}",
                                   fix="point at the --out folder of `groundkit run` or at a metrics/ folder")
            texts[name] = (directory / name).read_text(encoding="utf-8")
    else:
        commit = _resolve_revision(spec, cwd)
        if commit is None:
            raise CompareError(spec, "is neither a directory, a git revision nor a DVC experiment name",
                               fix="give a folder written by `groundkit run`, a branch/tag/commit, or a name "
                               "listed by `dvc exp list`")
        texts = {}
        for name in ("per_query.csv", "run.json"):
            shown = _git(["show", f"{commit}:./{metrics_dir}/{name}"], cwd)
            if shown.returncode != 0:
                raise CompareError(f"{spec}:{metrics_dir}/{name}", "is not in that revision",
                                   fix="compare revisions whose `dvc repro` results were committed "
                                   "(metrics/ is tracked by git)")
            texts[name] = shown.stdout
    try:
        metadata = json.loads(texts["run.json"])
        judgments_hash = metadata["judgments_hash"]
    except (ValueError, KeyError, TypeError):
        raise CompareError(f"{spec}: run.json", "is not run metadata with a judgments_hash",
                           fix="re-run the score stage") from None
    if not isinstance(judgments_hash, str):
        raise CompareError(f"{spec}: run.json", "has no judgments_hash", fix="re-run the score stage")
    reader = csv.DictReader(io.StringIO(texts["per_query.csv"]))
    fields = reader.fieldnames or []
    required = {"query_id", "category", "first_gold_rank"}
    if not required <= set(fields):
        raise CompareError(f"{spec}: per_query.csv", f"lacks the columns {sorted(required - set(fields))}",
                           fix="re-run the score stage with this version of groundkit")
    rows = {row["query_id"]: row for row in reader}
    start = fields.index("abstained") + 1 if "abstained" in fields else len(fields)
    return Side(label=spec, rows=rows, metadata=metadata, metric_names=fields[start:])


# --- statistics --------------------------------------------------------------------------------


def paired_stats(baseline: np.ndarray, candidate: np.ndarray, *, seed: int = SEED,
                 resamples: int = RESAMPLES) -> tuple[float, float, float]:
    """Return ``(ci_low, ci_high, p_value)`` for the mean of ``candidate - baseline``.

    A percentile bootstrap over queries for the 95% interval, and a two-sided paired randomization
    (sign-flip) test for the p-value; both seeded, so deterministic.
    """
    from scipy import stats

    differences = candidate - baseline
    if differences.size == 0:
        return math.nan, math.nan, math.nan
    if not np.any(differences):
        return 0.0, 0.0, 1.0
    interval = stats.bootstrap(
        (differences,), np.mean, n_resamples=resamples, confidence_level=0.95, method="percentile",
        vectorized=True, rng=np.random.default_rng(seed),
    ).confidence_interval
    test = stats.permutation_test(
        (candidate, baseline), lambda c, b, axis: np.mean(c - b, axis=axis), permutation_type="samples",
        vectorized=True, n_resamples=resamples, alternative="two-sided", rng=np.random.default_rng(seed),
    )
    return float(interval.low), float(interval.high), float(test.pvalue)


def _stat(metric: str, ids: list[str], baseline: Side, candidate: Side) -> Stat:
    before = np.array([float(baseline.rows[q][metric]) for q in ids])
    after = np.array([float(candidate.rows[q][metric]) for q in ids])
    low, high, p_value = paired_stats(before, after)
    return Stat(metric=metric, queries=len(ids), baseline=float(before.mean()), candidate=float(after.mean()),
                delta=float((after - before).mean()), ci_low=low, ci_high=high, p_value=p_value)


def _rank(row: dict[str, str]) -> float:
    return float(row["first_gold_rank"]) if row["first_gold_rank"] else math.inf


def _flatten(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def compare(
    baseline: Side, candidate: Side, *, gate: list[str] | None = None, alpha: float = 0.05, max_drop: float = 0.0
) -> Comparison:
    """Pair the two sides query by query and compute every statistic of the report."""
    if baseline.metadata["judgments_hash"] != candidate.metadata["judgments_hash"]:
        raise CompareError(
            candidate.label,
            "was scored on different judgments than the baseline (judgments_hash "
            f"{baseline.metadata['judgments_hash'][:12]} vs {candidate.metadata['judgments_hash'][:12]}); "
            "a paired test needs the same queries with the same gold",
            fix="re-run both sides on the same judgments file, or compare their metrics.json by eye",
        )
    if set(baseline.rows) != set(candidate.rows):
        raise CompareError(candidate.label, "does not score the same query ids as the baseline",
                           fix="re-run the score stage on both sides")
    metrics = [m for m in baseline.metric_names if m in candidate.metric_names]
    gate = gate or ["ndcg@10"]
    unknown = [m for m in gate if m not in metrics]
    if unknown:
        raise CompareError("--metric", f"{unknown} is not reported by both runs", fix=f"use one of {metrics}")
    ids = sorted(baseline.rows)
    answerable = [q for q in ids if baseline.rows[q]["category"] != NO_ANSWER]
    overall = [_stat(m, answerable, baseline, candidate) for m in metrics]

    categories = sorted({baseline.rows[q]["category"] for q in answerable})
    ndcg = [m for m in metrics if m.startswith("ndcg@")]
    per_category_metrics = [m for m in metrics if m.startswith("recall@")] + ndcg[-1:]
    by_category = {
        c: [_stat(m, [q for q in answerable if baseline.rows[q]["category"] == c], baseline, candidate)
            for m in per_category_metrics]
        for c in categories
    }

    moved = []
    for q in answerable:
        before, after = _rank(baseline.rows[q]), _rank(candidate.rows[q])
        if before != after:
            moved.append({"query_id": q, "category": baseline.rows[q]["category"],
                          "query": baseline.rows[q].get("query", ""),
                          "rank_before": None if math.isinf(before) else int(before),
                          "rank_after": None if math.isinf(after) else int(after), "_key": (before, after)})

    def change(row: dict[str, Any]) -> float:
        before, after = row.pop("_key")
        return (1 / before if before else 0) - (1 / after if after else 0)  # drop in reciprocal rank

    for row in moved:
        row["rr_drop"] = change(row)
    worse = sorted((r for r in moved if r["rr_drop"] > 0), key=lambda r: (-r["rr_drop"], r["query_id"]))
    better = sorted((r for r in moved if r["rr_drop"] < 0), key=lambda r: (r["rr_drop"], r["query_id"]))
    for row in moved:
        del row["rr_drop"]

    unanswerable = [q for q in ids if baseline.rows[q]["category"] == NO_ANSWER]
    no_answer = {
        "queries": len(unanswerable),
        "abstained_baseline": sum(1 for q in unanswerable if baseline.rows[q].get("abstained") == "1"),
        "abstained_candidate": sum(1 for q in unanswerable if candidate.rows[q].get("abstained") == "1"),
    }
    before_params = _flatten(baseline.metadata.get("params", {}))
    after_params = _flatten(candidate.metadata.get("params", {}))
    params_changed = {k: [before_params.get(k), after_params.get(k)]
                      for k in sorted(set(before_params) | set(after_params))
                      if before_params.get(k) != after_params.get(k)}

    result = Comparison(baseline=baseline, candidate=candidate, overall=overall, by_category=by_category,
                        worse=worse, better=better, no_answer=no_answer, params_changed=params_changed,
                        gate=gate, alpha=alpha, max_drop=max_drop)
    gated = [s for s in overall if s.metric in gate]
    significant = [s for s in gated if s.p_value < alpha]
    result.regressions = [s.metric for s in significant if s.delta < -max_drop]
    if any(s.delta < 0 for s in significant):
        result.verdict = "worse"
    elif any(s.delta > 0 for s in significant):
        result.verdict = "better"
    else:
        result.verdict = "no significant change"
    return result


# --- rendering ---------------------------------------------------------------------------------


def _number(value: float, metric: str) -> str:
    return f"{value:.1f}" if metric.startswith("chars@") else f"{value:.4f}"


def _signed(value: float, metric: str) -> str:
    return f"{value:+.1f}" if metric.startswith("chars@") else f"{value:+.4f}"


def _row(stat: Stat, significant: bool) -> str:
    m = stat.metric
    mark = " *" if significant else ""
    return (f"| {m} | {_number(stat.baseline, m)} | {_number(stat.candidate, m)} | {_signed(stat.delta, m)}{mark} "
            f"| [{_signed(stat.ci_low, m)}, {_signed(stat.ci_high, m)}] | {stat.p_value:.4f} |")


def _rank_text(rank: int | None) -> str:
    return "not retrieved" if rank is None else str(rank)


def render_markdown(result: Comparison, *, top: int = 15) -> str:
    """The report as Markdown, ready to paste into a pull request comment."""
    b, c = result.baseline, result.candidate
    answerable = result.overall[0].queries if result.overall else 0
    lines = [
        f"## groundkit compare: `{b.label}` → `{c.label}`",
        "",
        f"Paired over {answerable} answerable queries (same judgments, hash "
        f"`{b.metadata['judgments_hash'][:12]}`). 95% CI: paired bootstrap; p: paired randomization "
        f"test; {RESAMPLES:,} resamples each, seed {SEED}. `*` marks p < {result.alpha}.",
        "",
    ]
    if result.params_changed:
        def shown(value: Any) -> str:
            return "(not used)" if value is None else str(value)

        changed = ", ".join(f"`{k}` {shown(v[0])} → {shown(v[1])}" for k, v in result.params_changed.items())
        lines += [f"Parameters changed: {changed}.", ""]
    header = ["| metric | baseline | candidate | delta | 95% CI | p |", "| --- | ---: | ---: | ---: | --- | ---: |"]
    lines += header + [_row(s, s.p_value < result.alpha) for s in result.overall]
    lines += ["", "### Per category", "",
              "| category | n | metric | baseline | candidate | delta | 95% CI | p |",
              "| --- | ---: | --- | ---: | ---: | ---: | --- | ---: |"]
    for category, stats in result.by_category.items():
        for s in stats:
            lines.append(f"| {category} | {s.queries} " + _row(s, s.p_value < result.alpha))
    na = result.no_answer
    lines += ["", f"No-answer queries abstained (returned nothing): {na['abstained_baseline']}/{na['queries']} → "
              f"{na['abstained_candidate']}/{na['queries']}.", ""]
    for title, rows in (("got worse", result.worse), ("got better", result.better)):
        lines.append(f"### Queries that {title}: {len(rows)}")
        if rows:
            lines += ["", "| query_id | category | query | first gold rank |", "| --- | --- | --- | --- |"]
            for row in rows[:top]:
                query = row["query"].replace("|", "\\|")
                lines.append(f"| {row['query_id']} | {row['category']} | {query} | "
                             f"{_rank_text(row['rank_before'])} → {_rank_text(row['rank_after'])} |")
            if len(rows) > top:
                lines.append(f"| … | | {len(rows) - top} more (`--top N` or `--json` lists them) | |")
        lines.append("")
    gated = {s.metric: s for s in result.overall if s.metric in result.gate}
    detail = "; ".join(f"{m} {_signed(s.delta, m)}, p = {s.p_value:.4f}" for m, s in gated.items())
    lines.append(f"**Verdict: {result.verdict}** at alpha = {result.alpha} on {', '.join(result.gate)} ({detail}).")
    if result.regressions:
        lines.append(f"Regression beyond the allowed drop of {result.max_drop}: {', '.join(result.regressions)}.")
    return "\n".join(lines) + "\n"


def to_json(result: Comparison) -> dict[str, Any]:
    """The report as plain data for machines."""
    return {
        "baseline": result.baseline.label,
        "candidate": result.candidate.label,
        "judgments_hash": result.baseline.metadata["judgments_hash"],
        "method": {"ci": "paired percentile bootstrap, 95%", "test": "paired randomization (sign flip), two-sided",
                   "resamples": RESAMPLES, "seed": SEED},
        "params_changed": result.params_changed,
        "overall": [s.as_dict() for s in result.overall],
        "by_category": {c: [s.as_dict() for s in stats] for c, stats in result.by_category.items()},
        "no_answer": result.no_answer,
        "worse": result.worse,
        "better": result.better,
        "gate": {"metrics": result.gate, "alpha": result.alpha, "max_drop": result.max_drop},
        "verdict": result.verdict,
        "regressions": result.regressions,
    }
