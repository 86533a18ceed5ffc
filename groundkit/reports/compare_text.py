"""A comparison as text: the Markdown report (a pull request's comment) and the JSON document."""

from __future__ import annotations

import math
from typing import Any

from groundkit.reports.compare import ALL, Comparison, Detectable, Stat, short_hash
from groundkit.reports.stats import POWER, RESAMPLES, SEED
from groundkit.scoring.measures import MEASURES
from groundkit.scoring.separability import NAME as SEPARABILITY


def number_text(value: float | None, metric: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{MEASURES.parse(metric).measure.decimals}f}"


def signed_text(value: float | None, metric: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{MEASURES.parse(metric).measure.decimals}f}"


def separability_text(figure: dict[str, Any], arrow: str = "→") -> str:
    """The sentence compare prints about no_answer.separability (from ``Comparison.no_answer``)."""
    if "note" in figure:
        return f"No-answer separability (top-1 score, answerable above no-answer): {figure['note']}."
    low, high = figure["ci95"]
    return (f"No-answer separability (AUC of the top-1 score, answerable above no-answer; no threshold): "
            f"{figure['baseline']:.4f} {arrow} {figure['candidate']:.4f}, {figure['delta']:+.4f} "
            f"[{low:+.4f}, {high:+.4f}], p {figure['p_value']:.4f} (paired bootstrap over the queries; not gated).")


def effect_text(stat: Stat) -> str:
    return "n/a" if stat.effect_size is None else f"{stat.effect_size:+.2f}"


def counts_text(stat: Stat) -> str:
    return f"{stat.wins}/{stat.ties}/{stat.losses}"


def _bound(value: float, metric: str) -> str:
    return ("-inf" if value < 0 else "+inf") if math.isinf(value) else signed_text(value, metric)


def decided_text(stat: Stat) -> str:
    """The interval that decides the row, with its level: ``[+0.0238, +0.4521] 97.5%``; ``(0, +0.45]`` when only
    its direction is claimed (Holm's rejected rows); without one, why."""
    d, m = stat.decided, stat.metric
    if d is None:
        few = stat.p_value is not None
        return f"n/a ({stat.queries} {'query' if stat.queries == 1 else 'queries'}{'; < 10' if few else ''})"
    low = "0" if d.open_low else _bound(d.low, m)
    high = "0" if d.open_high else _bound(d.high, m)
    return f"{d.bounds[0]}{low}, {high}{d.bounds[1]} {level_text(1 - d.level)}"


def level_text(level: float) -> str:
    """A confidence level as a percentage, to as many decimals as it needs: 95%, 97.5%, 99.773%."""
    text = f"{100 * level:.3f}".rstrip("0").rstrip(".")
    return f"{text}%"


def raw_text(stat: Stat) -> str:
    """The raw 95% percentile-bootstrap interval (``ci95``): shown beside the deciding one, never deciding."""
    if stat.ci_low is None:
        return "n/a"
    return f"[{signed_text(stat.ci_low, stat.metric)}, {signed_text(stat.ci_high, stat.metric)}]"


def interval_cells(stat: Stat) -> tuple[str, str, str]:
    """The deciding interval, the raw bootstrap interval and the p-value cells; without a test they say why."""
    p = "n/a" if stat.p_value is None else f"{stat.p_value:.4f}"
    return decided_text(stat), raw_text(stat), p


def mark(stat: Stat) -> str:
    """`` *`` exactly when the row's deciding interval excludes 0."""
    return " *" if stat.significant else ""


def _row(stat: Stat) -> str:
    m = stat.metric
    interval, raw, p_value = interval_cells(stat)
    return (f"| {m} | {number_text(stat.baseline, m)} | {number_text(stat.candidate, m)} | "
            f"{signed_text(stat.delta, m)}{mark(stat)} | {interval} | {raw} | {p_value} | {effect_text(stat)} "
            f"| {counts_text(stat)} |")


def _rank_text(rank: int | None) -> str:
    return "not retrieved" if rank is None else str(rank)


def correction_text(correction: str, tests: int) -> str:
    """How the gated p-values were corrected, for a sentence: "Holm-corrected over 3 tests"."""
    if correction == "none":
        return "not corrected for multiple tests (`--correction none`)"
    name = {"holm": "Holm", "bh": "Benjamini-Hochberg"}[correction]
    return f"{name}-corrected over {tests} {'test' if tests == 1 else 'tests'}"


EFFECT_LEGEND = ("d_z: mean delta / SD of the per-query deltas (Cohen's d_z); W/T/L: queries where the "
                 "candidate scores higher / the same / lower (wins, ties, losses; for chars@k higher is more to read).")


def cost_text(stat: Stat) -> str:
    """A cost's change in words: ``chars@10 7774.2 -> 15548.4 (2.00x)``."""
    m = stat.metric
    ratio = "" if not stat.baseline or stat.candidate is None else f" ({stat.candidate / stat.baseline:.2f}x)"
    return f"{m} {number_text(stat.baseline, m)} -> {number_text(stat.candidate, m)}{ratio}"


def verdict_reason(gate: list[str], stats: dict[str, Stat], p_adjusted: dict[str, float | None], alpha: float,
                   traded: dict[str, str], costs: dict[str, Stat]) -> str:
    """Why the verdict is what it is, in a clause: which gated metrics rose or fell, and which of them only traded
    quality for context (compare.py's VERDICTS)."""
    parts = []
    for m in gate:
        s = stats.get(m)
        if s is None or not s.significant or not s.delta:
            continue
        if m in traded:
            more = "more" if s.delta > 0 else "less"
            parts.append(f"{m} {'rose' if s.delta > 0 else 'fell'} only with {more} context read "
                         f"({cost_text(costs[m])})")
        else:
            parts.append(f"{m} {'rose' if s.delta > 0 else 'fell'}")
    return "; ".join(parts) if parts else "no gated metric moved significantly"


def moved_costs(gate: list[str], costs: dict[str, Stat]) -> list[tuple[str, Stat]]:
    """The gated metrics whose context (chars@k) moved, each with its cost's stat: shown beside the quality."""
    return [(m, costs[m]) for m in gate if m in costs and costs[m].delta]


def detectable_lines(rows: list[Detectable], alpha: float) -> list[str]:
    """The section on minimum detectable effects, ending with one sentence per gated metric."""
    lines = ["### What these judgments can detect", "",
             f"Minimum detectable effect (MDE): the true change the randomization test finds with {POWER:.0%} power "
             f"at alpha = {alpha} (two-sided), from the baseline's per-query SD, taking a candidate's per-query "
             "deltas to vary sqrt(2) times as much (cautious: runs that share most of their ranking vary less). "
             "The correction for several tests lowers the first threshold and raises these figures.", "",
             "| metric | category | n | baseline | SD | MDE |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for d in rows:
        mde = number_text(d.mde, d.metric) if d.mde is not None else f"n/a ({d.note})"
        lines.append(f"| {d.metric} | {d.category} | {d.queries} | {number_text(d.baseline, d.metric)} | "
                     f"{number_text(d.sd, d.metric)} | {mde} |")
    summary = [f"about {number_text(d.mde, d.metric)} in {d.metric}" for d in rows
               if d.category == ALL and d.mde is not None]
    if summary:
        n = next(d.queries for d in rows if d.category == ALL)
        lines += ["", f"With {n} answerable queries these judgments can detect a change of {', '.join(summary)}; "
                  "a smaller true change is likely to be missed, and writing more judgments is how to see it."]
    return [*lines, ""]


def render_markdown(result: Comparison, *, top: int = 15) -> str:
    """The report as Markdown, ready to paste into a pull request comment."""
    b, c = result.baseline, result.candidate
    answerable = result.overall[0].queries if result.overall else 0
    tests = sum(1 for p in result.p_adjusted.values() if p is not None)
    lines = [
        f"## groundkit compare: `{b.label}` → `{c.label}`",
        "",
        f"Paired over {answerable} answerable queries (same judgments, hash "
        f"`{short_hash(b.metadata['judgments_hash'])}`). {CI_LEGEND} p: paired randomization "
        f"test; {RESAMPLES:,} resamples each, seed {SEED}.",
        f"{EFFECT_LEGEND} The gated metrics ({', '.join(result.gate)}) are decided together, "
        f"{correction_text(result.correction, tests)}; every other row, and every category, alone at {result.alpha}, "
        "and their p-values are uncorrected.",
        "",
    ]
    if result.corpus_change:
        lines += [f"**Corpus changed** (`--allow-corpus-change`): corpus_hash `{result.corpus_change['baseline']}` "
                  f"→ `{result.corpus_change['candidate']}`; the same judgments were scored over other documents.",
                  ""]
    if result.params_changed:
        def shown(value: Any) -> str:
            return "(not used)" if value is None else str(value)

        changed = ", ".join(f"`{k}` {shown(v[0])} → {shown(v[1])}" for k, v in result.params_changed.items())
        lines += [f"Parameters changed: {changed}.", ""]
    sides = [f"`{m}` ({side} only)" for side in ("baseline", "candidate") for m in result.one_sided.get(side, [])]
    if sides:
        lines += [f"Not compared, reported by one run only: {', '.join(sides)}.", ""]
    header = ["| metric | baseline | candidate | delta | CI (decides) | raw 95% CI | p | d_z | W/T/L |",
              "| --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |"]
    lines += header + [_row(s) for s in result.overall]
    lines += ["", "### Per category", "",
              "| category | n | metric | baseline | candidate | delta | CI (decides) | raw 95% CI | p | d_z | W/T/L |",
              "| --- | ---: | --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |"]
    for category, stats in result.by_category.items():
        for s in stats:
            lines.append(f"| {category} | {s.queries} " + _row(s))
    na = result.no_answer
    lines += ["", f"No-answer queries abstained (returned nothing): {na['abstained_baseline']}/{na['queries']} → "
              f"{na['abstained_candidate']}/{na['queries']}. {separability_text(na[SEPARABILITY])}", ""]
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
    lines += detectable_lines(result.detectable, result.alpha)
    gated = {s.metric: s for s in result.overall if s.metric in result.gate}

    def detail(m: str, s: Stat) -> str:
        if s.decided is None:
            return f"{m} {signed_text(s.delta, m)}, no test: {result.untested[m]}"
        corrected = "" if result.correction == "none" else f", corrected p = {result.p_adjusted[m]:.4f}"
        return f"{m} {signed_text(s.delta, m)} {decided_text(s)}, p = {s.p_value:.4f}{corrected}"

    details = "; ".join(detail(m, s) for m, s in gated.items())
    reason = verdict_reason(result.gate, gated, result.p_adjusted, result.alpha, result.traded, result.costs)
    lines.append(f"**Verdict: {result.verdict}**: {reason}. At alpha = {result.alpha} on {', '.join(result.gate)}, "
                 f"{correction_text(result.correction, tests)} ({details}).")
    for m, cost in moved_costs(result.gate, result.costs):
        lines.append(f"Context read for {m}: {cost_text(cost)}, delta {signed_text(cost.delta, cost.metric)}.")
    lines += [f"{'Passed' if g.passed else '**Failed**'}: {g.metric}, rule {g.rule}: {g.text}."
              for g in result.gate_lines]
    lines += [f"Note: {note}." for note in result.gate_notes]
    return "\n".join(lines) + "\n"


CI_LEGEND = ("CI (decides): the shifts the paired sign-flip test does not reject, at the row's level (gated rows: "
             "corrected, Holm by Strassburger & Bretz 2008, BH by Benjamini & Yekutieli 2005); `*` marks a row whose "
             "CI excludes 0, and only those; `(0, x]`: only the direction is claimed. raw 95% CI: percentile "
             "bootstrap, shown, never deciding.")

METHOD = {"ci": "the paired sign-flip test inverted, at ci_level (gated rows: Holm compatible intervals, Strassburger "
          "& Bretz 2008; BH false-coverage-rate intervals, Benjamini & Yekutieli 2005); a row is significant exactly "
          "when ci excludes 0; none below 10 paired queries",
          "ci95": "raw: paired percentile bootstrap, 95%, never deciding",
          "test": "paired randomization (sign flip), two-sided",
          "effect_size": "Cohen's d_z: mean difference / standard deviation of the differences (ddof 1)",
          "mde": f"two-sided randomization test, {POWER:.0%} power, differences' SD taken as sqrt(2) x the "
          "baseline's per-query SD", "resamples": RESAMPLES, "seed": SEED}


def to_json(result: Comparison) -> dict[str, Any]:
    """The report as plain data for machines."""
    tests = sum(1 for p in result.p_adjusted.values() if p is not None)
    return {
        "baseline": result.baseline.label,
        "candidate": result.candidate.label,
        "judgments_hash": result.baseline.metadata["judgments_hash"],
        "corpus_change": result.corpus_change,
        "method": METHOD,
        "params_changed": result.params_changed,
        "one_sided_metrics": result.one_sided,
        "overall": [s.as_dict() for s in result.overall],
        "by_category": {c: [s.as_dict() for s in stats] for c, stats in result.by_category.items()},
        "no_answer": result.no_answer,
        "worse": result.worse,
        "better": result.better,
        "gate": {"metrics": result.gate, "alpha": result.alpha, "max_drop": result.max_drop,
                 "untested": result.untested, "correction": result.correction, "tests": tests,
                 "p_adjusted": result.p_adjusted, "notes": result.gate_notes,
                 "non_inferiority": result.non_inferiority,
                 "lines": [{"metric": g.metric, "rule": g.rule, "passed": g.passed, "text": g.text}
                           for g in result.gate_lines]},
        "detectable": [d.as_dict() for d in result.detectable],
        "verdict": result.verdict,
        "regressions": result.regressions,
        "context": {m: {"metric": cost.metric, **{k: v for k, v in cost.as_dict().items() if k != "metric"},
                        "traded": m in result.traded} for m, cost in result.costs.items()},
    }
