"""A comparison as plain text for a terminal: the verdict and the figures it rests on first, within 100 columns.

``groundkit compare`` prints this when its output is a terminal (``--format text``); Markdown, for a
pull request's comment, is the default when it is piped. The text says what the Markdown says, in the
order a person reading a terminal needs it: the verdict and why, the gated metrics with their intervals
and corrected p-values and the context each was read with, what changed, what the judgments can detect,
then every metric, the categories and the queries that moved. Nothing is wider than :data:`WIDTH`: a
long query is cut with an ellipsis, a long list wraps.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence

from groundkit.inputs.text import terminal_text
from groundkit.reports.compare import ALL, CandidateResult, Comparison
from groundkit.reports.compare_text import (
    correction_text,
    counts_text,
    decided_text,
    effect_text,
    raw_text,
    render_markdown,
    separability_text,
    tie_lines,
    to_json,
    two_label_text,
)
from groundkit.reports.paired import Stat, number_text, signed_text
from groundkit.reports.stats import RESAMPLES, SEED
from groundkit.reports.verdict import verdict_reason
from groundkit.scoring.separability import NAME as SEPARABILITY

WIDTH = 100
"""The widest line of the text."""

FORMATS = ("text", "md", "json")
"""compare's ``--format`` choices."""


def _wrap(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False, break_long_words=True) or [""]


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    """Columns two spaces apart, each as wide as its widest cell; numbers to the right."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        parts = [cell.rjust(w) if r else cell.ljust(w) for cell, w, r in zip(cells, widths, right, strict=True)]
        return "  ".join(parts).rstrip()

    return [line(header), *(line(row) for row in rows)]


def _interval(stat: Stat) -> str:
    """The deciding interval, ``*`` exactly when it excludes 0."""
    return decided_text(stat) + ("*" if stat.significant else "")


def _p(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.4f}"


def _gated_rows(gate: list[str], stats: dict[str, Stat], p_adjusted: dict[str, float | None],
                costs: dict[str, Stat]) -> list[list[str]]:
    rows = []
    for m in gate:
        s = stats[m]
        rows.append([m, number_text(s.baseline, m), number_text(s.candidate, m), signed_text(s.delta, m),
                     _interval(s), _p(p_adjusted.get(m))])
        cost = costs.get(m)
        if cost is not None and cost.delta:
            ratio = f"{cost.candidate / cost.baseline:.2f}x" if cost.baseline and cost.candidate is not None else ""
            rows.append([f"  read: {cost.metric}", number_text(cost.baseline, cost.metric),
                         number_text(cost.candidate, cost.metric), signed_text(cost.delta, cost.metric),
                         ratio, f"{_p(cost.p_value)} raw"])
    return rows


GATED_HEADER = ("gated metric", "baseline", "candidate", "delta", "CI (decides)", "corrected p")
GATED_RIGHT = (False, True, True, True, False, True)


def render(result: Comparison, output: str, *, top: int) -> str:
    """``result`` in one of :data:`FORMATS`; ``top`` queries listed per direction where the page lists them."""
    if output == "json":
        return json.dumps(to_json(result), indent=2, sort_keys=True) + "\n"
    if output == "md":
        return render_markdown(result, top=top)
    return render_text(result, top=top)


def unshown_left_out(result: Comparison) -> list[tuple[str, str]]:
    """The experiments left out of ``--experiments`` that the page does not list (one candidate's page does not):
    ``groundkit compare`` says them on stderr."""
    return result.left_out if len(result.candidates) == 1 else []


def render_text(result: Comparison, *, top: int = 10) -> str:
    """A comparison as plain text within :data:`WIDTH` columns: one candidate's page, or several in one table."""
    if len(result.candidates) == 1:
        return _page_text(result, result.candidates[0], top=top)
    return _table_text(result)


def _page_text(result: Comparison, r: CandidateResult, *, top: int) -> str:
    b, c = result.baseline, r.side
    tests = result.tests
    stats = {s.metric: s for s in r.overall}
    reason = verdict_reason(result.gate, stats, r.traded, r.costs)
    lines = [*_wrap(f"groundkit compare: {terminal_text(b.label)} -> {terminal_text(c.label)}, paired over "
                    f"{result.queries} answerable queries"), ""]
    lines += _wrap(f"Verdict: {r.verdict}, as {reason}.")
    lines += _wrap(f"Gated at alpha {result.alpha}, {correction_text(result.correction, tests)}; CI (decides): the "
                   "sign-flip test inverted at the corrected level; * marks a CI that excludes 0.")
    if r.ppi is not None:
        lines += _wrap(f"Two label sets: {two_label_text(r.ppi)}")
    for g in r.gate_lines:
        lines += _wrap(f"Gate {'passed' if g.passed else 'FAILED'}: {g.metric}, rule {g.rule}: {g.text}.")
    for m, why in r.untested.items():
        lines += _wrap(f"{m}: no test ({why}).")
    for note in result.gate_notes:
        lines += _wrap(f"Note: {note}.")
    lines += ["", *_table(GATED_HEADER, _gated_rows(result.gate, stats, r.p_adjusted, r.costs), GATED_RIGHT), ""]
    if r.corpus_change:
        lines += _wrap(f"Corpus changed (--allow-corpus-change): {r.corpus_change['baseline']} -> "
                       f"{r.corpus_change['candidate']}.")
    if r.params_changed:
        changed = ", ".join(f"{k} {'(not used)' if v[0] is None else v[0]} -> "
                            f"{'(not used)' if v[1] is None else v[1]}" for k, v in r.params_changed.items())
        lines += _wrap(f"Changed: {changed}.")
    else:
        lines += ["Changed: no parameter."]
    overall = [d for d in result.detectable if d.category == ALL]
    detectable = [f"{number_text(d.mde, d.metric)} in {d.metric}" for d in overall if d.mde is not None]
    if detectable:
        lines += _wrap(f"These {overall[0].count_text()} can detect a change of about {', '.join(detectable)} "
                       "(80% power); a smaller one is likely to be missed.")
    one_sided = [f"{m} ({side} only)" for side in ("baseline", "candidate") for m in r.one_sided.get(side, [])]
    if one_sided:
        lines += _wrap(f"Not compared, reported by one run only: {', '.join(one_sided)}.")
    lines += ["", *_wrap("Every metric (ungated rows: each one test at alpha, p uncorrected; W/T/L: queries "
                         "higher / same / lower in the candidate)")]
    header = ("metric", "baseline", "candidate", "delta", "CI (decides)", "raw 95% CI", "p", "d_z", "W/T/L")
    right = (False, True, True, True, False, False, True, True, True)
    lines += _table(header, [[s.metric, number_text(s.baseline, s.metric), number_text(s.candidate, s.metric),
                              signed_text(s.delta, s.metric), _interval(s), raw_text(s), _p(s.p_value),
                              effect_text(s), counts_text(s)] for s in r.overall], right)
    lines += ["", "The gated metrics by category (each one test, uncorrected; --format md for every metric)"]
    rows = [[category, str(s.queries), s.metric, signed_text(s.delta, s.metric), _interval(s), raw_text(s),
             _p(s.p_value)]
            for category, category_stats in r.categories(r.category_metrics).items() for s in category_stats
            if s.metric in result.gate]
    lines += _table(("category", "n", "metric", "delta", "CI (decides)", "raw 95% CI", "p"), rows,
                    (False, True, False, True, False, False, True))
    na = r.no_answer
    lines += ["", f"No-answer queries that abstained: {na['abstained_baseline']}/{na['queries']} -> "
                  f"{na['abstained_candidate']}/{na['queries']}."]
    lines += _wrap(separability_text(na[SEPARABILITY], "->"))
    for title, moved in (("got worse", r.worse), ("got better", r.better)):
        shown = min(len(moved), top)
        lines += ["", f"Queries that {title}: {len(moved)}" + (f" (the first {shown}; --top N for more)"
                                                                if len(moved) > shown else "")]
        if moved:
            ranks = [f"{_rank(r['rank_before'])} -> {_rank(r['rank_after'])}" for r in moved[:shown]]
            ids = [terminal_text(r["query_id"]) for r in moved[:shown]]
            fixed = max(map(len, ids)) + max(map(len, ranks)) + 6
            for query_id, rank, row in zip(ids, ranks, moved[:shown], strict=True):
                query = _cut(terminal_text(row["query"]), WIDTH - fixed)  # escaped first: the cut counts what shows
                lines.append(f"  {query_id:<{max(map(len, ids))}}  {rank:<{max(map(len, ranks))}}  {query}".rstrip())
    lines += ["", *_wrap(f"CI (decides): the paired sign-flip test inverted; raw 95% CI: paired bootstrap, never "
                         f"deciding; p: paired randomization test; {RESAMPLES:,} resamples, seed {SEED}. "
                         "--format md for the pull-request comment, --format json for machines.")]
    return "\n".join(lines) + "\n"


def _rank(rank: int | None) -> str:
    return "none" if rank is None else str(rank)


def _table_text(result: Comparison) -> str:
    """Several candidates as plain text: each candidate's verdict and why, then its gated metrics."""
    lines = [*_wrap(f"groundkit compare: {terminal_text(result.baseline.label)} against "
                    f"{len(result.candidates)} candidates, paired over {result.queries} answerable queries"), ""]
    lines += _wrap(f"Verdicts: {result.verdict}.")
    for note in result.gate_notes:
        lines += _wrap(f"Note: {note}.")
    corrected = correction_text(result.correction, result.tests)
    lines += _wrap(f"Gated at alpha {result.alpha}, {corrected} ({len(result.candidates)} candidates x "
                   f"{len(result.gate)} metrics); CI (decides): the sign-flip test inverted at the corrected "
                   "level; * marks a CI that excludes 0.")
    for r in result.candidates:
        stats = {s.metric: s for s in r.overall}
        changes = ", ".join(f"{k}={'(not set)' if v[1] is None else v[1]}" for k, v in r.params_changed.items())
        reason = verdict_reason(result.gate, stats, r.traded, r.costs)
        lines += ["", *_wrap(f"{terminal_text(r.side.label)} ({terminal_text(changes) or 'no parameter changed'}): "
                             f"{r.verdict}, "
                             f"as {reason}.")]
        for g in r.gate_lines:
            lines += _wrap(f"Gate {'passed' if g.passed else 'FAILED'}: {g.metric}, rule {g.rule}: {g.text}.", "  ")
        table = _table(GATED_HEADER, _gated_rows(result.gate, stats, r.p_adjusted, r.costs), GATED_RIGHT)
        lines += ["  " + line for line in table]
    detectable = [f"{number_text(d.mde, d.metric)} in {d.metric}" for d in result.detectable
                  if d.category == ALL and d.mde is not None]
    if detectable:
        lines += ["", *_wrap(f"These {result.queries} queries can detect a change of about "
                             f"{', '.join(detectable)} (80% power); a smaller one is likely to be missed.")]
    ties = tie_lines(result, terminal_text)
    if ties:
        lines += ["", *(wrapped for line in ties for wrapped in _wrap(line))]
    if result.left_out:
        left_out = "; ".join(f"{terminal_text(n)}: {why}" for n, why in result.left_out)
        lines += ["", *_wrap(f"Left out of --experiments: {left_out}.")]
    lines += ["", *_wrap("--format md for the pull-request comment (with categories), --format json for machines.")]
    return "\n".join(lines) + "\n"
