"""A comparison as text: the Markdown report (a pull request's comment) and the JSON document.

One candidate gets the full page (every metric, per category, the queries that moved); several get one table
of the gated metrics. Both are read from the same :class:`~groundkit.reports.compare.Comparison`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from groundkit.inputs.text import markdown_code, markdown_text
from groundkit.reports.compare import ALL, CandidateResult, Comparison, Detectable, short_hash
from groundkit.reports.inference import MIN_QUERIES
from groundkit.reports.paired import Stat, number_text, signed_text
from groundkit.reports.stats import POWER, RESAMPLES, SEED
from groundkit.reports.verdict import cost_text, moved_costs, verdict_reason
from groundkit.scoring.separability import NAME as SEPARABILITY


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
        # A PPI row counts the queries a person labelled (the page's two-label line says so), in a narrow cell.
        counted = "labelled" if stat.by_person else ("query" if stat.queries == 1 else "queries")
        return f"n/a ({stat.queries} {counted}{f'; < {MIN_QUERIES}' if few else ''})"
    low = "0" if d.open_low else _bound(d.low, m)
    high = "0" if d.open_high else _bound(d.high, m)
    return f"{d.bounds[0]}{low}, {high}{d.bounds[1]} {level_text(1 - d.level)}"


def two_label_text(ppi: dict[str, Any]) -> str:
    """What a PPI row is (two label sets), in words: every format's page says it once, above the rows."""
    return (f"{ppi['n']} queries labelled by a person, {ppi['N']} by the judge alone. The overall rows of "
            f"{', '.join(ppi['metrics'])} are PPI++ over all {ppi['n'] + ppi['N']} machine-judged queries (a query "
            "with nothing relevant scores 0): delta, CI and p on the paired differences, normal approximation (the CI "
            f"that decides is that same normal interval at the row's level); W/T/L over the person's {ppi['n']}, and "
            f"with fewer than {MIN_QUERIES} of them no test. The gate and the MDE read them. Per category: the judge's "
            "labels alone.")


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


CI_LEGEND = ("CI (decides): the shifts the paired sign-flip test does not reject, at the row's level (gated rows: "
             "corrected, Holm by Strassburger & Bretz 2008, BH by Benjamini & Yekutieli 2005); `*` marks a row whose "
             "CI excludes 0, and only those; `(0, x]`: only the direction is claimed. raw 95% CI: percentile "
             "bootstrap, shown, never deciding.")

EFFECT_LEGEND = ("d_z: mean delta / SD of the per-query deltas (Cohen's d_z); W/T/L: queries where the "
                 "candidate scores higher / the same / lower (wins, ties, losses; for chars@k higher is more to read).")


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
        counted = next(d for d in rows if d.category == ALL).count_text()
        lines += ["", f"With {counted} these judgments can detect a change of {', '.join(summary)}; "
                  "a smaller true change is likely to be missed, and writing more judgments is how to see it."]
    return [*lines, ""]


def render_markdown(result: Comparison, *, top: int = 15) -> str:
    """The report as Markdown, ready to paste into a pull request comment."""
    if len(result.candidates) == 1:
        return _page_markdown(result, result.candidates[0], top=top)
    return _table_markdown(result)


def _page_markdown(result: Comparison, r: CandidateResult, *, top: int) -> str:
    """One candidate's full page."""
    b, c = result.baseline, r.side
    tests = result.tests
    lines = [
        f"## groundkit compare: {markdown_code(b.label)} → {markdown_code(c.label)}",
        "",
        f"Paired over {result.queries} answerable queries (same judgments, hash "
        f"`{short_hash(b.metadata['judgments_hash'])}`). {CI_LEGEND} p: paired randomization "
        f"test; {RESAMPLES:,} resamples each, seed {SEED}.",
        f"{EFFECT_LEGEND} The gated metrics ({', '.join(result.gate)}) are decided together, "
        f"{correction_text(result.correction, tests)}; every other row, and every category, alone at {result.alpha}, "
        "and their p-values are uncorrected.",
        "",
    ]
    if r.ppi is not None:
        lines += [f"**Two label sets**: {two_label_text(r.ppi)}", ""]
    if r.corpus_change:
        lines += [f"**Corpus changed** (`--allow-corpus-change`): corpus_hash `{r.corpus_change['baseline']}` "
                  f"→ `{r.corpus_change['candidate']}`; the same judgments were scored over other documents.",
                  ""]
    if r.params_changed:
        def shown(value: Any) -> str:
            return "(not used)" if value is None else markdown_text(str(value))

        changed = ", ".join(f"{markdown_code(k)} {shown(v[0])} → {shown(v[1])}" for k, v in r.params_changed.items())
        lines += [f"Parameters changed: {changed}.", ""]
    sides = [f"`{m}` ({side} only)" for side in ("baseline", "candidate") for m in r.one_sided.get(side, [])]
    if sides:
        lines += [f"Not compared, reported by one run only: {', '.join(sides)}.", ""]
    header = ["| metric | baseline | candidate | delta | CI (decides) | raw 95% CI | p | d_z | W/T/L |",
              "| --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |"]
    lines += header + [_row(s) for s in r.overall]
    lines += ["", "### Per category", "",
              "| category | n | metric | baseline | candidate | delta | CI (decides) | raw 95% CI | p | d_z | W/T/L |",
              "| --- | ---: | --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |"]
    for category, stats in r.categories(r.category_metrics).items():
        for s in stats:
            lines.append(f"| {category} | {s.queries} " + _row(s))
    na = r.no_answer
    lines += ["", f"No-answer queries abstained (returned nothing): {na['abstained_baseline']}/{na['queries']} → "
              f"{na['abstained_candidate']}/{na['queries']}. {separability_text(na[SEPARABILITY])}", ""]
    for title, rows in (("got worse", r.worse), ("got better", r.better)):
        lines.append(f"### Queries that {title}: {len(rows)}")
        if rows:
            lines += ["", "| query_id | category | query | first gold rank |", "| --- | --- | --- | --- |"]
            for row in rows[:top]:
                # Query text and ids come from imported datasets as often as from the team: data, never markup.
                lines.append(f"| {markdown_text(row['query_id'])} | {markdown_text(row['category'])} | "
                             f"{markdown_text(row['query'])} | "
                             f"{_rank_text(row['rank_before'])} → {_rank_text(row['rank_after'])} |")
            if len(rows) > top:
                lines.append(f"| … | | {len(rows) - top} more (`--top N` or `--json` lists them) | |")
        lines.append("")
    lines += detectable_lines(result.detectable, result.alpha)
    gated = {s.metric: s for s in r.overall if s.metric in result.gate}

    def detail(m: str, s: Stat) -> str:
        if s.decided is None:
            return f"{m} {signed_text(s.delta, m)}, no test: {r.untested[m]}"
        corrected = "" if result.correction == "none" else f", corrected p = {r.p_adjusted[m]:.4f}"
        return f"{m} {signed_text(s.delta, m)} {decided_text(s)}, p = {s.p_value:.4f}{corrected}"

    details = "; ".join(detail(m, s) for m, s in gated.items())
    reason = verdict_reason(result.gate, gated, r.traded, r.costs)
    lines.append(f"**Verdict: {r.verdict}**: {reason}. At alpha = {result.alpha} on {', '.join(result.gate)}, "
                 f"{correction_text(result.correction, tests)} ({details}).")
    for m, cost in moved_costs(result.gate, r.costs):
        lines.append(f"Context read for {m}: {cost_text(cost)}, delta {signed_text(cost.delta, cost.metric)}.")
    lines += [f"{'Passed' if g.passed else '**Failed**'}: {g.metric}, rule {g.rule}: {g.text}."
              for g in r.gate_lines]
    lines += [f"Note: {note}." for note in result.gate_notes]
    return "\n".join(lines) + "\n"


METHOD = {"ci": "the paired sign-flip test inverted, at ci_level (gated rows: Holm compatible intervals, Strassburger "
          "& Bretz 2008; BH false-coverage-rate intervals, Benjamini & Yekutieli 2005; with two label sets, PPI's "
          "normal interval at that level); a row is significant exactly when ci excludes 0; none below "
          f"{MIN_QUERIES} paired queries",
          "ci95": "raw: paired percentile bootstrap, 95%, never deciding",
          "test": "paired randomization (sign flip), two-sided",
          "effect_size": "Cohen's d_z: mean difference / standard deviation of the differences (ddof 1)",
          "mde": f"two-sided randomization test, {POWER:.0%} power, differences' SD taken as sqrt(2) x the "
          "baseline's per-query SD", "resamples": RESAMPLES, "seed": SEED}


def to_json(result: Comparison) -> dict[str, Any]:
    """The report as plain data for machines."""
    if len(result.candidates) == 1:
        return _page_json(result, result.candidates[0])
    return _table_json(result)


def _gate_lines(r: CandidateResult) -> list[dict[str, Any]]:
    return [{"metric": g.metric, "rule": g.rule, "passed": g.passed, "text": g.text} for g in r.gate_lines]


def tie_lines(result: Comparison, name: Callable[[str], str]) -> list[str]:
    """Per gated metric, the runs tied with the best (the baseline among them), then what the design can detect;
    ``name`` writes a run's label for the medium (escaped: labels come from outside)."""
    if not result.ties:
        return []
    labels = [result.baseline.label, *(r.side.label for r in result.candidates)]
    lines = [f"Tied with the best (Hsu's multiple comparison with the best, over the baseline and every candidate, "
             f"alpha {result.alpha}; none of them significantly below another):"]
    for metric, t in result.ties.items():
        names = [name(labels[i]) for i in t.tied]
        if result.queries < MIN_QUERIES:
            lines.append(f"- {metric}: no claim below {MIN_QUERIES} paired queries.")
        elif len(names) == len(labels):
            lines.append(f"- {metric}: all {len(names)} tied; these queries cannot tell them apart.")
        elif len(names) == 1:
            lines.append(f"- {metric}: {names[0]} alone is best, significantly above every other.")
        else:
            lines.append(f"- {metric}: {', '.join(names)} ({len(names)} of {len(labels)}).")
    found = [(m, t.detectable) for m, t in result.ties.items() if t.detectable is not None]
    if found:
        metric, x = found[0]
        lines.append(f"With {len(labels)} runs over {result.queries} queries, a difference smaller than about "
                     f"{x:.4f} in {metric} between two of them is unlikely to be detected (80% power) once every pair "
                     "is compared: compare fewer candidates, use `--correction bh` where a false discovery rate will "
                     "do, or label more queries (an LLM's labels, checked by a person).")
    return lines


def _context(r: CandidateResult) -> dict[str, Any]:
    return {m: {"metric": cost.metric, **{k: v for k, v in cost.as_dict().items() if k != "metric"},
                "traded": m in r.traded} for m, cost in r.costs.items()}


def _page_json(result: Comparison, r: CandidateResult) -> dict[str, Any]:
    tests = result.tests
    return {
        "baseline": result.baseline.label,
        "candidate": r.side.label,
        "judgments_hash": result.baseline.metadata["judgments_hash"],
        "corpus_change": r.corpus_change,
        "method": METHOD,
        "params_changed": r.params_changed,
        "one_sided_metrics": r.one_sided,
        "overall": [s.as_dict() for s in r.overall],
        "by_category": {c: [s.as_dict() for s in stats] for c, stats in r.categories(r.category_metrics).items()},
        "no_answer": r.no_answer,
        "worse": r.worse,
        "better": r.better,
        "gate": {"metrics": result.gate, "alpha": result.alpha, "max_drop": result.max_drop,
                 "untested": r.untested, "correction": result.correction, "tests": tests,
                 "p_adjusted": r.p_adjusted, "notes": result.gate_notes,
                 "non_inferiority": result.non_inferiority, "lines": _gate_lines(r)},
        "detectable": [d.as_dict() for d in result.detectable],
        "verdict": r.verdict,
        "regressions": r.regressions,
        "context": _context(r),
        **({"two_label_sets": r.ppi} if r.ppi is not None else {}),
    }


def _changes(result: CandidateResult) -> str:
    if not result.params_changed:
        return "(none)"
    return ", ".join(f"{k}={'(not set)' if v[1] is None else v[1]}" for k, v in result.params_changed.items())


def _reason(r: CandidateResult, result: Comparison) -> str:
    return verdict_reason(result.gate, {s.metric: s for s in r.overall}, r.traded, r.costs)


def _adjusted(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.4f}"


def _table_markdown(result: Comparison) -> str:
    """Several candidates as Markdown: one row per candidate and gated metric, then categories and power."""
    b = result.baseline
    corrected = correction_text(result.correction, result.tests)
    lines = [
        f"## groundkit compare: {markdown_code(b.label)} against {len(result.candidates)} candidates",
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
        shown = markdown_text(", ".join(f"{k}={'(not set)' if v is None else v}"
                                        for k, v in sorted(baseline_values.items())))
        lines += [f"Baseline parameters that candidates change: {shown}.", ""]
    changed_corpus = [markdown_code(r.side.label) for r in result.candidates if r.corpus_change]
    if changed_corpus:
        lines += [f"**Corpus changed** (`--allow-corpus-change`) for {', '.join(changed_corpus)}: the same "
                  "judgments were scored over other documents.", ""]
    lines += ["| candidate | changes | metric | baseline | candidate | delta | CI (decides) | raw 95% CI | p "
              "| corrected p | d_z | W/T/L |",
              "| --- | --- | --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: |"]
    for r in result.candidates:
        for s in (r.stat(m) for m in result.gate):
            m = s.metric
            interval, raw, p = interval_cells(s)
            lines.append(f"| {markdown_code(r.side.label)} | {markdown_text(_changes(r))} | {m} | "
                         f"{number_text(s.baseline, m)} | "
                         f"{number_text(s.candidate, m)} | {signed_text(s.delta, m)}{mark(s)} | {interval} | {raw} | "
                         f"{p} | {_adjusted(r.p_adjusted[m])} | {effect_text(s)} | {counts_text(s)} |")
    lines += ["", "### Per category", "",
              f"Each row here is one test at {result.alpha}, uncorrected: they point at where a change comes from, "
              "they do not decide.", "",
              "| candidate | category | n | metric | delta | CI (decides) | raw 95% CI | p | d_z | W/T/L |",
              "| --- | --- | ---: | --- | ---: | --- | --- | ---: | ---: | ---: |"]
    for r in result.candidates:
        for category, stats in r.categories(result.gate).items():
            for s in stats:
                interval, raw, p = interval_cells(s)
                lines.append(f"| {markdown_code(r.side.label)} | {markdown_text(category)} | {s.queries} | "
                             f"{s.metric} | "
                             f"{signed_text(s.delta, s.metric)}{mark(s)} | {interval} | {raw} | {p} | "
                             f"{effect_text(s)} | {counts_text(s)} |")
    lines.append("")
    lines += detectable_lines(result.detectable, result.alpha)
    ties = tie_lines(result, markdown_code)
    lines += [*ties, ""] if ties else []
    if result.left_out:
        left_out = "; ".join(f"{markdown_text(name)}: {why}" for name, why in result.left_out)
        lines += [f"Left out of `--experiments`: {left_out}.", ""]
    lines.append(f"**Verdicts: {result.verdict}** at alpha = {result.alpha} on {', '.join(result.gate)}, "
                 f"{corrected}:")
    lines.append("")
    for r in result.candidates:
        lines.append(f"- {markdown_code(r.side.label)} ({markdown_text(_changes(r))}): **{r.verdict}**, "
                     f"{_reason(r, result)}.")
    lines += [f"{'Passed' if g.passed else '**Failed**'}: {g.metric} ({markdown_code(r.side.label)}), rule {g.rule}: "
              f"{g.text}." for r in result.candidates for g in r.gate_lines]
    lines += [f"Note: {note}." for note in result.gate_notes]
    return "\n".join(lines) + "\n"


def _table_json(result: Comparison) -> dict[str, Any]:
    labels = [result.baseline.label, *(r.side.label for r in result.candidates)]
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
            "overall": [{**r.stat(m).as_dict(), "p_adjusted": r.p_adjusted[m]} for m in result.gate],
            "by_category": {c: [s.as_dict() for s in stats] for c, stats in r.categories(result.gate).items()},
            "verdict": r.verdict,
            "regressions": r.regressions,
            "untested": r.untested,
            "gate_lines": _gate_lines(r),
            "context": _context(r),
            **({"two_label_sets": r.ppi} if r.ppi is not None else {}),
        } for r in result.candidates],
        "detectable": [d.as_dict() for d in result.detectable],
        "left_out": [{"experiment": name, "reason": why} for name, why in result.left_out],
        "tied_with_best": {m: {"best": labels[t.best], "tied": [labels[i] for i in t.tied],
                               "constant": None if math.isinf(t.constant) else t.constant,
                               "detectable": t.detectable} for m, t in result.ties.items()},
        "verdict": result.verdict,
    }
