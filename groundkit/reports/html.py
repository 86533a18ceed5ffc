"""The HTML report: one self-contained page that shows why a run scores as it does.

``groundkit report RUN [--baseline BASE] --out report.html`` (and the ``report`` stage, for the
workspace) writes a single file that opens offline, from disk or from a CI artifact: the styles,
the script and the charts (inline SVG drawn here) are inside it, and it loads nothing. It holds

* the headline metrics with their 95% confidence intervals, against the baseline when there is
  one (the paired bootstrap and randomization test of ``groundkit compare``), else of the mean;
* hit rate against k and against the context budget, and nDCG and hit rate per category;
* a table of every query, sortable and filtered by category and by what happened to it (moved up
  or down against the baseline, missed: no gold passage in the top k), in which each query opens
  to its gold quotes highlighted in their documents and the top k passages of each run with the
  gold overlap highlighted, each passage's rank in both runs, and a flag where a chunk boundary
  cuts a quote. The text comes from the run's artifacts (groundkit/reports/evidence.py); where
  they cannot be found the page says so and shows the ranks from per_query.csv alone.

The same inputs give the same bytes: no time, no absolute path the caller did not pass, sorted
JSON, fixed float formats. Every piece of user text (queries, documents, labels) is escaped, and
the script builds the query views with ``textContent`` only, so a ``<script>`` inside a document
shows as text.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from groundkit.errors import CompareError
from groundkit.reports._page import FOOTER, SCRIPT, page
from groundkit.reports.charts import BASE_COLOUR, RUN_COLOUR, bar_chart, escape_html, line_chart
from groundkit.reports.compare import ALL, Comparison, answerable_ids, compare, default_gate, detectable, rows_of
from groundkit.reports.page_data import (
    TOP_K,
    Input,
    answerable_rows,
    category_means,
    headline_names,
    hit_curve,
    page_data,
    read_input,
    stat_rows,
)
from groundkit.reports.sides import NO_ANSWER, Side
from groundkit.reports.stats import POWER
from groundkit.reports.verdict import verdict_reason
from groundkit.scoring.agreement import Agreement
from groundkit.scoring.measures import MEASURES
from groundkit.scoring.ppi import minimum_detectable_effect
from groundkit.scoring.separability import NAME as SEPARABILITY
from groundkit.scoring.separability import separability
from groundkit.scoring.two_labels import LabelSets, estimate

MARKER = '<meta name="generator" content="groundkit report">'
"""In every page this module writes: ``--force`` replaces only a file that holds it."""


def is_report(path: Path) -> bool:
    """Whether ``path`` is a page this module wrote (what ``--force`` may replace)."""
    try:
        with path.open(encoding="utf-8") as handle:
            return MARKER in handle.read(4096)
    except (OSError, UnicodeDecodeError):
        return False


def _number(value: float | None, metric: str, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    decimals = MEASURES.parse(metric).measure.decimals
    return f"{value:+.{decimals}f}" if signed else f"{value:.{decimals}f}"


def _higher_is_better(metric: str) -> bool:
    """Every measure but the context a ranking costs (chars@k), where more is neither better nor worse."""
    return MEASURES.parse(metric).measure.directed


def _delta_class(row: dict[str, Any], traded: set[str]) -> str | None:
    """How a delta is coloured: ``traded`` for a gated metric that moved only with its context (the verdict's note),
    else ``better`` or ``worse`` by its direction where it is significant; None where it says nothing."""
    m = row["metric"]
    if not (row["significant"] and row["delta"] and _higher_is_better(m)):
        return None
    if m in traded:
        return "traded"
    return "better" if row["delta"] > 0 else "worse"


def _metrics_table(rows: list[dict[str, Any]], headline: list[str], has_base: bool, alpha: float,
                   traded: set[str]) -> str:
    head = ("<tr><th>metric</th><th>baseline</th><th>run</th><th>delta</th><th>CI of the delta (decides)</th>"
            "<th>raw 95% CI (bootstrap)</th><th>p</th></tr>" if has_base
            else "<tr><th>metric</th><th>mean</th><th>95% CI of the mean</th></tr>")
    body = []
    for row in rows:
        m = row["metric"]
        ci = "n/a" if row["ci"] is None else \
            f"[{_number(row['ci'][0], m, has_base)}, {_number(row['ci'][1], m, has_base)}]"
        cls = ' class="headline"' if m in headline else ""
        if has_base:
            p = "n/a" if row["p"] is None else f"{row['p']:.4f}"
            colour = _delta_class(row, traded)
            mark = "" if colour is None else f' class="{colour}"'
            star = " *" if row["significant"] else ""
            body.append(f"<tr{cls}><td>{escape_html(m)}</td><td>{_number(row['baseline'], m)}</td>"
                        f"<td>{_number(row['run'], m)}</td><td{mark}>{_number(row['delta'], m, True)}{star}</td>"
                        f"<td>{escape_html(row['decides'])}</td><td>raw {ci}</td><td>{p}</td></tr>")
        else:
            body.append(f"<tr{cls}><td>{escape_html(m)}</td><td>{_number(row['run'], m)}</td><td>{ci}</td></tr>")
    return f'<table class="metrics"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'


def _cards(rows: list[dict[str, Any]], headline: list[str], has_base: bool, alpha: float, traded: set[str]) -> str:
    by_metric = {r["metric"]: r for r in rows}
    cards = []
    for m in headline:
        row = by_metric[m]
        detail = ""
        if has_base:
            ci = f" (CI {escape_html(row['decides'])})"
            p = "" if row["p"] is None else f", p = {row['p']:.4f}"
            colour = _delta_class(row, traded)
            mark = "" if colour is None else f" {colour}"
            detail = f'<div class="delta{mark}">{_number(row["delta"], m, True)} vs baseline{ci}{p}</div>'
        elif row["ci"] is not None:
            detail = f'<div class="delta">95% CI {_number(row["ci"][0], m)} to {_number(row["ci"][1], m)}</div>'
        cards.append(f'<div class="card"><div class="name">{escape_html(m)}</div>'
                     f'<div class="value">{_number(row["run"], m)}</div>{detail}</div>')
    return f'<div class="cards">{"".join(cards)}</div>'


VERDICT_CLASSES = {"better": "better", "worse": "worse", "mixed": "mixed", "traded": "traded"}
"""The verdicts the header colours (the style sheet, groundkit/reports/_page.py, defines each): better green, worse red,
mixed yellow, traded teal (it passes the gate, with a note); the rest are neutral."""


def _verdict(comparison: Comparison | None, side: Side, gate: list[str] | None, alpha: float) -> str:
    """The header's verdict (against the baseline, as ``compare`` gives it) and what the judgments can detect."""
    if comparison is not None:
        (only,) = comparison.candidates
        stats = {s.metric: s for s in only.overall}
        judged = ", ".join(comparison.gate) or "nothing (no gated metric)"
        reason = verdict_reason(comparison.gate, stats, only.traded, only.costs)
        cls = VERDICT_CLASSES.get(only.verdict, "neutral")
        interval = "the paired sign-flip test inverted"
        if only.ppi is not None:
            interval += (f"; for {', '.join(only.ppi['metrics'])}, PPI's normal interval: "
                         f"{only.ppi['n']} queries labelled by a person, {only.ppi['N']} by the judge alone")
        verdict = (f'<p class="verdict {cls}" id="verdict">Verdict: <strong>{escape_html(only.verdict)}'
                   f"</strong>: {escape_html(reason)}.</p><p class=\"method\">Judged by {escape_html(judged)}, "
                   f"p and CIs {escape_html(comparison.correction)}-corrected over them, alpha {alpha}; a row is "
                   f"marked exactly when its CI ({escape_html(interval)}) excludes 0; as "
                   "<code>groundkit compare</code> decides it (<code>--metric</code> and <code>--alpha</code> "
                   "choose).</p>")
        verdict += "".join(f'<p class="note">{escape_html(n)}</p>' for n in comparison.gate_notes)
        rows = comparison.detectable
    else:
        verdict = ('<p class="verdict neutral" id="verdict">No verdict: this page has no baseline '
                   "(<code>groundkit report RUN --baseline BASE</code> gives one).</p>")
        metrics = [m for m in (gate if gate else default_gate([side])[0]) if m in side.per_query.metric_names]
        sets = LabelSets.from_per_query(side.per_query)
        if sets is not None:
            return verdict + _ppi_detectable(sets, metrics, alpha)
        rows = detectable(side, rows_of(side, answerable_ids(side)), metrics, alpha)
    overall = [d for d in rows if d.category == ALL]
    found = [f"{_number(d.mde, d.metric)} in {escape_html(d.metric)}" for d in overall if d.mde is not None]
    if found:
        spread = ("PPI standard error of the paired differences" if overall[0].labelled is not None else
                  f"{'baseline' if comparison is not None else 'run'}'s per-query spread")
        mde = (f"What these judgments can detect: with {overall[0].count_text()}, a true change of about "
               f"{', '.join(found)} ({POWER:.0%} power, alpha {alpha}, from the {spread}); a smaller one is likely "
               "missed.")
    else:
        mde = "What these judgments can detect: " + "; ".join(
            escape_html(f"{d.metric}: nothing ({d.note})") for d in overall) if overall else ""
    return verdict + (f'<p class="mde" id="mde">{mde}</p>' if mde else "")


def _ppi_detectable(sets: LabelSets, metrics: list[str], alpha: float) -> str:
    """Under two label sets, what the labels can detect: from the PPI standard error of each metric's mean, a
    difference of two runs taken to vary sqrt(2) times as much (the cautious figure compare's MDE takes too)."""
    block = estimate(sets)
    found = [f"{_number(minimum_detectable_effect(math.sqrt(2) * block['metrics'][m]['std_error'], alpha=alpha), m)}"
             f" in {escape_html(m)}" for m in metrics if m in block["metrics"]]
    if not found:
        return ""
    return (f'<p class="mde" id="mde">What these labels can detect: with {block["n"]} queries labelled by a person '
            f"and {block['N']} by the judge alone, a true change of about {', '.join(found)} ({POWER:.0%} power, "
            f"alpha {alpha}, from the prediction-powered standard error); a smaller one is likely missed.</p>")


def _agreement(found: Agreement | None) -> str:
    """The judge's agreement with the person, as ``groundkit judgments agreement`` prints it."""
    if found is None:
        return ('<p class="note">No agreement shown: the judge\'s pool (NAME.pool.jsonl, written by groundkit '
                "judgments judge) was not found beside the machine judgments.</p>")

    def shown(value: float | None, digits: int = 3) -> str:
        return "undefined" if value is None else f"{value:.{digits}f}"

    (yy, yn), (ny, nn) = found.confusion
    moved = ("no pair both call relevant" if found.quotes_moved is None else
             f"{found.quotes_moved:.1%} of the {found.both_relevant} pairs both call relevant")
    return (f'<h3>The judge against the person</h3><p class="method">Over {found.pairs} pooled pairs of '
            f"{found.queries} queries both labelled (relevant: a gold span overlaps the passage): Cohen's kappa "
            f"<strong>{shown(found.kappa)}</strong>, 95% bootstrap interval [{shown(found.low)}, "
            f"{shown(found.high)}] over queries; weighted kappa over grades (quadratic) "
            f"{shown(found.weighted_kappa)}; quotes moved: {moved}.</p>"
            '<table class="metrics"><thead><tr><th></th><th>person: relevant</th><th>person: not relevant</th>'
            f"</tr></thead><tbody><tr><th>judge: relevant</th><td>{yy}</td><td>{yn}</td></tr>"
            f"<tr><th>judge: not relevant</th><td>{ny}</td><td>{nn}</td></tr></tbody></table>")


def _two_labels(run: Input) -> str:
    """A run scored under two label sets: each headline metric's prediction-powered estimate under the person's
    labels, beside the person's labels alone and the judge's alone (biased), with what they rest on. Computed
    from per_query.csv's ``human.`` columns as the score stage computes detail.json's ``ppi`` block; then the
    judge's agreement with the person, from the run's artifacts."""
    side = run.side
    sets = LabelSets.from_per_query(side.per_query)
    if sets is None:
        return ""
    block = estimate(sets)
    shown = [m for m in headline_names(side) if m in block["metrics"]] or list(block["metrics"])[:4]

    def interval(figures: dict[str, Any]) -> str:
        return f"{figures['estimate']:.4f} [{figures['ci_low']:.4f}, {figures['ci_high']:.4f}]"

    rows = "".join(
        f"<tr><th>{escape_html(m)}</th><td>{interval(f)}</td><td>{interval(f['human_only'])}</td>"
        f"<td>{f['machine_only']['mean']:.4f}</td>"
        f"<td>{'' if f['width_ratio'] is None else format(f['width_ratio'], '.2f')}</td><td>{f['lambda']:.2f}</td></tr>"
        for m in shown if "human_only" in (f := block["metrics"][m]))
    warnings = "".join(f'<p class="note">{escape_html(w)}</p>' for w in block["warnings"])
    return (f'<section id="two-labels"><h2>Under a person\'s labels: prediction-powered estimates</h2>'
            f'<p class="method">{block["n"]} queries labelled by a person and {block["N"]} by the judge alone. '
            "Each estimate is the mean over every machine-judged query under the person's labels (a query with "
            "nothing relevant scores 0), by PPI++ with a 95% interval that holds whatever the judge's quality; "
            "every other figure on this page is under the judge's labels and biased by its errors.</p>"
            f"<table class=\"metrics\"><thead><tr><th>metric</th><th>PPI++ (95%)</th><th>person alone (95%)</th>"
            "<th>judge alone (biased)</th><th>width vs person alone</th><th>lambda</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>{warnings}"
            f"{_agreement(run.evidence.agreement if run.evidence is not None else None)}</section>\n")


def _top_scores(side: Side) -> tuple[list[float], list[float]] | None:
    """The top-1 scores of ``side``'s answerable and no_answer queries; None when unknown or a kind is missing."""
    positive = [s for s, c in zip(side.per_query.top_score, side.per_query.categories, strict=True) if c != NO_ANSWER]
    negative = [s for s, c in zip(side.per_query.top_score, side.per_query.categories, strict=True) if c == NO_ANSWER]
    if not positive or not negative or any(s != s for s in positive + negative):  # NaN: not recorded
        return None
    return positive, negative


def _separability(run: Side, comparison: Comparison | None) -> str:
    """A sentence on no_answer.separability, and a chart of the two distributions of the top-1 score."""
    scores = _top_scores(run)
    if scores is None:
        if NO_ANSWER not in run.per_query.categories:
            return ""
        return ('<p class="meta" id="separability">No-answer separability: not available (the run\'s '
                "per_query.csv holds no top-1 scores).</p>")
    value = separability(*scores)
    text = (f"No-answer separability: <strong>{value:.4f}</strong>, the chance that an answerable query's top-1 "
            "score is above a no-answer query's (ties half, nothing retrieved lowest; 0.5 says the score tells "
            "nothing, 1 that some threshold would separate them)")
    figure = comparison.candidates[0].no_answer.get(SEPARABILITY, {}) if comparison is not None else {}
    if "delta" in figure:
        text += (f"; baseline {figure['baseline']:.4f}, {figure['delta']:+.4f} [{figure['ci95'][0]:+.4f}, "
                 f"{figure['ci95'][1]:+.4f}], p {figure['p_value']:.4f} by paired bootstrap")
    elif "note" in figure:
        text += f"; against the baseline {escape_html(figure['note'])}"
    finite = [s for s in scores[0] + scores[1] if s != float("-inf")]
    bins = 10
    low, high = (min(finite), max(finite)) if finite else (0.0, 0.0)
    step = (high - low) / bins or 1.0
    groups: dict[str, dict[str, float]] = {}
    labels = ["nothing retrieved"] + [f"{low + i * step:.3g} to {low + (i + 1) * step:.3g}" for i in range(bins)]
    for key, values in (("answerable", scores[0]), ("no_answer", scores[1])):
        counts = [0] * (bins + 1)
        for v in values:
            counts[0 if v == float("-inf") else 1 + min(int((v - low) / step), bins - 1)] += 1
        for label, count in zip(labels, counts, strict=True):
            groups.setdefault(label, {})[key] = count / len(values)
    groups = {label: shares for label, shares in groups.items() if any(shares.values())}
    chart = bar_chart("Top-1 score: answerable against no-answer queries", groups,
                      [("answerable queries", RUN_COLOUR, "answerable"), ("no-answer queries", BASE_COLOUR,
                                                                          "no_answer")])
    return (f'<p class="meta" id="separability">{text}.</p><figure>{chart}<figcaption>Share of each kind of query '
            "whose first result scored in each range: the further apart, the better the score tells them apart."
            "</figcaption></figure>")


def _json_for_script(data: Any) -> str:
    """JSON that cannot end the ``<script>`` element holding it: <, > and & are written as \\u escapes."""
    # json, not orjson (six times faster on the same bytes): orjson writes a NaN or an infinity as null, where
    # a page must refuse a number it cannot show.
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    # One pass over a page's few megabytes, not one per character escaped.
    return _SCRIPT_UNSAFE.sub(lambda found: _SCRIPT_ESCAPES[found.group()], text)


_SCRIPT_ESCAPES = {"&": "\\u0026", "<": "\\u003c", ">": "\\u003e", "\u2028": "\\u2028", "\u2029": "\\u2029"}


_SCRIPT_UNSAFE = re.compile("[&<>\u2028\u2029]")


def render(run: Input, base: Input | None = None, comparison: Comparison | None = None, *,
           top_k: int = TOP_K, alpha: float = 0.05, gate: list[str] | None = None) -> str:
    """The whole page as text."""
    side = run.side
    data = page_data(run, base, comparison, top_k=top_k)
    rows = stat_rows(run, base, comparison)
    headline = headline_names(side)
    has_base = base is not None
    title = f"groundkit report: {side.label}" + (f" against {base.side.label}" if has_base else "")
    answerable = len(answerable_rows(side))
    no_answer = len(side.per_query.categories) - answerable
    facts = [f"{answerable} answerable queries, {no_answer} no-answer",
             f"judgments {side.metadata['judgments_hash'][:12]}", f"corpus {side.metadata['corpus_hash'][:12]}"]
    only = comparison.candidates[0] if comparison is not None else None
    traded = set(only.traded) if only is not None else set()
    if only is not None and only.params_changed:
        facts.append("changed: " + ", ".join(f"{k} {v[0]} → {v[1]}" for k, v in only.params_changed.items()))
    if only is not None and only.corpus_change:
        facts.append(f"corpus changed to {only.corpus_change['candidate']}")
    method = ("Deltas are paired query by query: 95% CI by paired bootstrap, p by paired randomization test "
              "(10,000 resamples, fixed seed), as in <code>groundkit compare</code>." if has_base else
              "95% CI of the mean over answerable queries: percentile bootstrap (10,000 resamples, fixed seed).")
    series_hit = [(side.label, RUN_COLOUR, hit_curve(side))]
    series_budget = [(side.label, RUN_COLOUR, run.budget)]
    if base is not None:
        series_hit.insert(0, (base.side.label, BASE_COLOUR, hit_curve(base.side)))
        series_budget.insert(0, (base.side.label, BASE_COLOUR, base.budget))
    bars_metrics = [m for m in (data["ndcgMetric"], data["hitMetric"]) if m]
    groups = {c: {f"run {m}": v for m, v in means.items()} for c, means in category_means(side, bars_metrics).items()}
    bar_series = [(f"{side.label}: {m}", RUN_COLOUR if i == 0 else "#6cb6ff", f"run {m}")
                  for i, m in enumerate(bars_metrics)]
    if base is not None:
        for c, means in category_means(base.side, bars_metrics).items():
            groups.setdefault(c, {}).update({f"base {m}": v for m, v in means.items()})
        bar_series = [s for m in bars_metrics for s in (
            (f"{base.side.label}: {m}", BASE_COLOUR if m == bars_metrics[0] else "#d4a72c", f"base {m}"),
            (f"{side.label}: {m}", RUN_COLOUR if m == bars_metrics[0] else "#6cb6ff", f"run {m}"))]
    notes = "".join(f'<p class="note">{escape_html(n)}</p>' for n in data["notes"])
    budget_chart = line_chart("Hit rate against context budget", series_budget, x_label="context budget (characters)",
                              y_label="hit rate within the budget") if any(s[2] for s in series_budget) else \
        '<p class="empty">No budget curve: plots/budget.csv was not found beside per_query.csv.</p>'
    shown_facts = " · ".join(escape_html(f) for f in facts)
    headline_note = " (the judge's labels: biased)" if side.per_query.human_values is not None else ""
    body = f"""<header><h1>{escape_html(title)}</h1><p class="facts">{shown_facts}</p>
{_verdict(comparison, side, gate, alpha)}{notes}</header>
{_two_labels(run)}<section id="headline"><h2>Headline{headline_note}</h2>
{_cards(rows, headline, has_base, alpha, traded)}<p class="method">{method}</p>
<details><summary>All metrics</summary>{_metrics_table(rows, headline, has_base, alpha, traded)}</details></section>
<section id="charts"><h2>Where the gold is found</h2><div class="charts">
<figure>{line_chart("Hit rate against k", series_hit, x_label="k (passages read)", y_label="hit rate", log_x=True)}
<figcaption>Share of answerable queries with a gold passage in the top k.</figcaption></figure>
<figure>{budget_chart}<figcaption>Share with gold within the first N characters of the ranking.</figcaption></figure>
<figure>{bar_chart("Per category", groups, bar_series)}<figcaption>Mean per category.</figcaption></figure>
</div>{_separability(side, comparison)}</section>
<section id="queries"><h2>Queries</h2>
<div class="filters"><label>category <select id="f-category"><option value="">all</option></select></label>
<label>show <select id="f-status"><option value="">all</option><option value="up">moved up</option>
<option value="down">moved down</option><option value="missed">missed (no gold in the top {top_k})</option>
<option value="no_answer">no-answer queries</option></select></label>
<label>find <input id="f-text" type="search" placeholder="id or words"></label><span id="f-count"></span></div>
<table id="query-table"><thead><tr><th data-key="id">query</th><th data-key="category">category</th>
<th data-key="query">text</th><th data-key="rank" title="rank of the first gold passage">first gold rank</th>
<th data-key="ndcg">{escape_html(data["ndcgMetric"] or "ndcg")}</th><th data-key="status">status</th></tr></thead>
<tbody></tbody></table></section>
{FOOTER}"""
    scripts = (f'<script type="application/json" id="report-data">{_json_for_script(data)}</script>\n'
               f"<script>{SCRIPT}</script>\n")
    return page(marker=MARKER, title=escape_html(title), body=body, scripts=scripts)


def report(run_spec: str, baseline_spec: str | None, *, cwd: Path, metrics_dir: str = "metrics", gate: list[str] | None,
           alpha: float = 0.05, allow_corpus_change: bool = False, top_k: int = TOP_K) -> str:
    """The page for ``run_spec`` (and ``baseline_spec``), each as ``compare`` reads a side."""
    if top_k < 1:
        raise CompareError("--top-k", f"must be 1 or more, got {top_k}", fix="give how many passages to show, e.g. 10")
    run = read_input(run_spec, cwd, metrics_dir)
    if baseline_spec is None:
        return render(run, top_k=top_k, alpha=alpha, gate=gate)
    base = read_input(baseline_spec, cwd, metrics_dir)
    comparison = compare(base.side, run.side, gate=gate, alpha=alpha, allow_corpus_change=allow_corpus_change)
    return render(run, base, comparison, top_k=top_k, alpha=alpha, gate=gate)
