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

import csv
import html
import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from groundkit import __version__
from groundkit.corpus.passage import Passage
from groundkit.errors import CompareError
from groundkit.reports._page import POLICY, SCRIPT, STYLE
from groundkit.reports.compare import Comparison, compare
from groundkit.reports.evidence import Evidence, locate, mismatch
from groundkit.reports.sides import NO_ANSWER, Side, read_side
from groundkit.reports.stats import mean_intervals
from groundkit.retrieval.kinds import parse
from groundkit.scoring.measures import BUDGET_RECALL, CHARS, MEASURES, MRR, NDCG, RECALL
from groundkit.scoring.score import hit_rate_ks

MARKER = '<meta name="generator" content="groundkit report">'
"""In every page this module writes: ``--force`` replaces only a file that holds it."""


def is_report(path: Path) -> bool:
    """Whether ``path`` is a page this module wrote (what ``--force`` may replace)."""
    try:
        with path.open(encoding="utf-8") as handle:
            return MARKER in handle.read(4096)
    except (OSError, UnicodeDecodeError):
        return False


TOP_K = 10
CONTEXT_CHARS = 240  # document text shown on each side of a gold quote
QUOTE_CHARS = 1200  # a longer gold span (a whole document) is shown cut, and says so
PASSAGE_CHARS = 2000
RUN_COLOUR, BASE_COLOUR = "#1f6feb", "#9a6700"


@dataclass(frozen=True)
class Input:
    """One side of the report: its per-query results, its artifacts (or why there are none) and budget curve."""

    side: Side
    evidence: Evidence | None
    note: str | None
    budget: list[tuple[float, float]]


# --- reading -----------------------------------------------------------------------------------


def _budget_rows(text: str | None) -> list[tuple[float, float]]:
    if not text:
        return []
    try:
        return [(float(row["budget_chars"]), float(row["recall"])) for row in csv.DictReader(io.StringIO(text))]
    except (KeyError, TypeError, ValueError):
        return []


def _budget_text(spec: str, cwd: Path, metrics_dir: str) -> str | None:
    """plots/budget.csv of a side: beside its per_query.csv, or committed in its revision."""
    folder = Path(spec)
    if folder.is_dir():
        if not (folder / "per_query.csv").is_file():
            folder = folder / metrics_dir
        path = folder / "plots" / "budget.csv"
        return path.read_text(encoding="utf-8") if path.is_file() else None
    from dvc.api import DVCFileSystem
    from dvc.exceptions import DvcException

    try:
        data: bytes = DVCFileSystem(url=str(cwd), rev=spec).read_bytes(f"{metrics_dir}/plots/budget.csv")
    except (DvcException, OSError, ValueError):
        return None
    return data.decode("utf-8", errors="replace")


def checked(side: Side, evidence: Evidence | str | None) -> tuple[Evidence | None, str | None]:
    """The evidence when it is the run behind ``side``; otherwise None and what to tell the reader."""
    if evidence is None:
        return None, None
    if isinstance(evidence, str):
        return None, f"Passages of {side.label} are not shown: {evidence}."
    ids = list(side.position)
    rows = [side.position[q] for q in ids]
    context = {cutoff: [float(side.values[r, side.metric_names.index(m)]) for r in rows]
               for m in side.metric_names for measure, cutoff in [MEASURES.parse(m)] if measure is CHARS and cutoff}
    why = mismatch(evidence, ids, [side.first_gold_rank[r] for r in rows], context)
    if why is not None:
        return None, f"Passages of {side.label} are not shown: the artifacts in {evidence.source} do not match " \
                     f"its per_query.csv ({why})."
    return evidence, None


def read_input(spec: str, cwd: Path, metrics_dir: str = "metrics") -> Input:
    """A side as ``compare`` reads it, with its artifacts when they can be found and match."""
    side = read_side(spec, cwd=cwd, metrics_dir=metrics_dir)
    evidence, note = checked(side, locate(spec, cwd, metrics_dir))
    return Input(side, evidence, note, _budget_rows(_budget_text(spec, cwd, metrics_dir)))


def workspace_input(per_query: Path, evidence: Evidence, budget_csv: Path, label: str) -> Input:
    """The run the pipeline just scored: per_query.csv and run.json in one folder, and its own artifacts."""
    side = replace(read_side(str(per_query.parent), cwd=per_query.parent), label=label)
    found, note = checked(side, evidence)
    text = budget_csv.read_text(encoding="utf-8") if budget_csv.is_file() else None
    return Input(side, found, note, _budget_rows(text))


# --- the page's data ---------------------------------------------------------------------------


def _deepest(side: Side, measure: Any) -> str | None:
    names = [(MEASURES.parse(m)[1] or 0, m) for m in side.metric_names if MEASURES.parse(m)[0] is measure]
    return max(names)[1] if names else None


def _rank(value: float) -> int | None:
    return None if math.isinf(value) else int(value)


def _round(value: float | None, digits: int = 6) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), digits)


def _answerable_rows(side: Side) -> np.ndarray:
    return np.array([i for i, c in enumerate(side.categories) if c != NO_ANSWER], dtype=np.intp)


def headline_names(side: Side) -> list[str]:
    """The figures metrics.json leads with, as far as this side reports them."""
    k = _deepest(side, NDCG)
    wanted = [k, _deepest(side, RECALL), MRR.label()]
    budgets = sorted((MEASURES.parse(m)[1] or 0, m) for m in side.metric_names
                     if MEASURES.parse(m)[0] is BUDGET_RECALL)
    if budgets:
        wanted.append(budgets[(len(budgets) - 1) // 2][1])
    return [m for m in wanted if m is not None and m in side.metric_names]


def _stat_rows(run: Input, base: Input | None, comparison: Comparison | None) -> list[dict[str, Any]]:
    if comparison is not None:
        return [{"metric": s.metric, "baseline": s.baseline, "run": s.candidate, "delta": s.delta,
                 "ci": None if s.ci_low is None else [s.ci_low, s.ci_high], "p": s.p_value}
                for s in comparison.overall]
    side = run.side
    values = side.values[_answerable_rows(side)].T
    intervals = mean_intervals(values) if values.size else []
    rows = []
    for j, metric in enumerate(side.metric_names):
        low, high = intervals[j] if intervals else (None, None)
        mean = float(values[j].mean()) if values.shape[1] else None
        rows.append({"metric": metric, "baseline": None, "run": mean, "delta": None,
                     "ci": None if low is None else [low, high], "p": None})
    return rows


def _hit_curve(side: Side) -> list[tuple[float, float]]:
    ranks = [side.first_gold_rank[i] for i in _answerable_rows(side)]
    if not ranks:
        return []
    depth = int(side.metadata.get("params", {}).get("retrieve", {}).get("depth") or 0)
    depth = max([depth, *(int(r) for r in ranks if math.isfinite(r)), 1])
    found = np.sort(np.array([r for r in ranks if math.isfinite(r)]))
    return [(float(k), float(np.searchsorted(found, k, side="right")) / len(ranks)) for k in hit_rate_ks(depth)]


def _category_means(side: Side, metrics: list[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for category in sorted({c for c in side.categories if c != NO_ANSWER}):
        rows = [i for i, c in enumerate(side.categories) if c == category]
        out[category] = {m: float(side.values[rows, side.metric_names.index(m)].mean()) for m in metrics}
    return out


class _Texts:
    """The document text the page needs: only the ranges it shows, merged per document."""

    def __init__(self, evidences: Sequence[Evidence]) -> None:
        self._documents = {path: d.text for e in evidences for path, d in e.documents.items()}
        self._ranges: dict[str, list[tuple[int, int]]] = {}
        self._fallback: dict[str, dict[int, str]] = {}

    def need(self, document: str, start: int, end: int, text: str | None = None) -> None:
        if document not in self._documents:
            if text is not None:  # a passage of a document the snapshot lacks: its own text stands in
                self._fallback.setdefault(document, {})[start] = text[:end - start]
            return
        length = len(self._documents[document])
        self._ranges.setdefault(document, []).append((max(0, start), min(end, length)))

    def segments(self) -> dict[str, list[list[Any]]]:
        """Per document, ``[start, text]`` pieces covering every range asked for, in order."""
        out: dict[str, list[list[Any]]] = {}
        for document in sorted(set(self._ranges) | set(self._fallback)):
            pieces: list[list[Any]] = []
            for start, end in sorted(self._ranges.get(document, [])):
                if pieces and start <= pieces[-1][1]:
                    pieces[-1][1] = max(pieces[-1][1], end)
                else:
                    pieces.append([start, end])
            text = self._documents.get(document, "")
            found = [[a, text[a:b]] for a, b in pieces if b > a]
            found += [[a, t] for a, t in sorted(self._fallback.get(document, {}).items())]
            out[document] = sorted(found, key=lambda piece: piece[0])
        return out


def _holders(evidence: Evidence | None, query_id: str, span: Passage) -> list[list[Any]] | None:
    """The chunks of a run that overlap a gold span, as ``[start, end, rank or None]``; None without its chunks."""
    if evidence is None:
        return None
    return [[c.start, c.end, evidence.rank_of(query_id, c.passage_id)] for c in evidence.chunks_over(span)]


def _gold(evidence: Evidence, query_id: str, texts: _Texts, run: Evidence | None,
          base: Evidence | None) -> list[dict[str, Any]]:
    """Each gold span of the query, and the chunks of each run that hold it (a boundary cuts it if several)."""
    shown = []
    for span in evidence.judgments[query_id].spans:
        texts.need(span.document, span.start - CONTEXT_CHARS, min(span.end, span.start + QUOTE_CHARS) + CONTEXT_CHARS)
        shown.append({"doc": span.document, "start": span.start, "end": span.end,
                      "held": [_holders(base, query_id, span), _holders(run, query_id, span)]})
    return shown


def _top(evidence: Evidence, other: Evidence | None, query_id: str, k: int,
         passages: dict[str, list[Any]], texts: _Texts) -> list[list[Any]]:
    ranking = evidence.rankings.get(query_id, [])
    elsewhere = {p: i for i, p in enumerate(other.rankings.get(query_id, []), 1)} if other is not None else {}
    rows = []
    for passage_id in ranking[:k]:
        passage = evidence.passages[passage_id]
        if passage_id not in passages:
            passages[passage_id] = [passage.document, passage.start, passage.end]
            texts.need(passage.document, passage.start, min(passage.end, passage.start + PASSAGE_CHARS), passage.text)
        rows.append([passage_id, elsewhere.get(passage_id) if other is not None else None])
    return rows


def _chunked(side: Input | None) -> Evidence | None:
    """A side's evidence when it ranked groundkit's chunks (an external run ranked passages of its own)."""
    if side is None or side.evidence is None:
        return None
    retriever = side.side.metadata.get("params", {}).get("retrieve", {}).get("retriever")
    try:
        ranks_chunks = parse(retriever).ranks_chunks
    except (ValueError, AttributeError):  # a run.json from another version, or none recorded: ranks only
        return None
    return side.evidence if ranks_chunks else None


def _movement(before: float | None, after: float) -> str:
    if before is None or before == after:
        return ""
    return "up" if after < before else "down"


def page_data(run: Input, base: Input | None, comparison: Comparison | None, *, top_k: int = TOP_K) -> dict[str, Any]:
    """Everything the page shows, as plain data (what the script reads, and what tests check)."""
    side = run.side
    k = _deepest(side, NDCG)
    hit = _deepest(side, RECALL)
    passages: dict[str, list[Any]] = {}
    texts = _Texts([e for e in (run.evidence, base.evidence if base is not None else None) if e is not None])
    queries = []
    for query_id in sorted(side.position):
        i = side.position[query_id]
        j = base.side.position.get(query_id) if base is not None else None
        answerable = side.categories[i] != NO_ANSWER
        after = side.first_gold_rank[i]
        before = base.side.first_gold_rank[j] if base is not None and j is not None else None

        def value(s: Side, row: int | None, metric: str | None) -> float | None:
            if row is None or metric is None or metric not in s.metric_names or s.categories[row] == NO_ANSWER:
                return None
            return _round(float(s.values[row, s.metric_names.index(metric)]))

        row: dict[str, Any] = {
            "id": query_id, "query": side.queries[i], "category": side.categories[i],
            "rank": [None if before is None else _rank(before), _rank(after)],
            "ndcg": [value(base.side, j, k) if base is not None else None, value(side, i, k)],
            "move": _movement(before, after) if answerable else "",
            # At the k the filter names ("no gold in the top k"), not at the deepest recall@k the run reports.
            "missed": answerable and after > top_k,
            "abstained": [base.side.abstained[j] if base is not None and j is not None else None,
                          side.abstained[i]],
        }
        other = base.evidence if base is not None else None
        evidence = run.evidence or other
        if evidence is not None and query_id in evidence.judgments:
            row["gold"] = _gold(evidence, query_id, texts, _chunked(run), _chunked(base))
        if run.evidence is not None:
            row["top"] = _top(run.evidence, other, query_id, top_k, passages, texts)
        if other is not None:
            row["baseTop"] = _top(other, run.evidence, query_id, top_k, passages, texts)
        queries.append(row)
    notes = [n for n in (run.note, base.note if base is not None else None) if n]
    return {
        "run": side.label, "baseline": base.side.label if base is not None else None,
        "k": top_k, "ndcgMetric": k, "hitMetric": hit, "queries": queries, "passages": passages, "notes": notes,
        "text": texts.segments(), "limits": {"context": CONTEXT_CHARS, "quote": QUOTE_CHARS, "passage": PASSAGE_CHARS},
        "textShown": [run.evidence is not None, base is not None and base.evidence is not None],
    }


# --- charts (inline SVG) ------------------------------------------------------------------------

W, H = 560, 300
LEFT, RIGHT, TOP, BOTTOM = 52, 16, 16, 44


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _f(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def line_chart(title: str, series: Sequence[tuple[str, str, list[tuple[float, float]]]], *, x_label: str,
               y_label: str, log_x: bool = False) -> str:
    """An SVG line chart of y in [0, 1] against x; each series is (label, colour, points)."""
    points = [p for _, _, pts in series for p in pts]
    if not points:
        return f'<p class="empty">{_e(title)}: no data.</p>'
    xs = [x for x, _ in points]
    lo, hi = (min(xs), max(xs))
    scale = (lambda v: math.log10(v)) if log_x else (lambda v: v)
    a, b = scale(max(lo, 1) if log_x else 0), scale(hi)
    span = (b - a) or 1.0

    def px(v: float) -> float:
        return LEFT + (scale(v) - a) / span * (W - LEFT - RIGHT)

    def py(v: float) -> float:
        return TOP + (1 - v) * (H - TOP - BOTTOM)

    parts = [f'<svg class="chart" role="img" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
             f'aria-label="{_e(title)}">', f"<title>{_e(title)}</title>"]
    for tick in (0, 0.25, 0.5, 0.75, 1):
        y = py(tick)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
                     f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_f(tick)}</text>')
    if log_x:
        ticks = [m * 10**e for e in range(0, 7) for m in (1, 2, 5) if lo <= m * 10**e <= hi]
    else:
        step = 10 ** math.floor(math.log10(hi or 1))
        step = step / 2 if hi / step < 4 else step
        ticks = [t * step for t in range(0, int(hi // step) + 1)]
    for tick in ticks:
        x = px(tick)
        parts.append(f'<line class="axis" x1="{x:.1f}" x2="{x:.1f}" y1="{H - BOTTOM}" y2="{H - BOTTOM + 4}"/>'
                     f'<text class="tick" x="{x:.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{_f(tick)}</text>')
    parts.append(f'<line class="axis" x1="{LEFT}" x2="{W - RIGHT}" y1="{H - BOTTOM}" y2="{H - BOTTOM}"/>'
                 f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{H - BOTTOM}"/>'
                 f'<text class="label" x="{(LEFT + W - RIGHT) / 2:.0f}" y="{H - 6}" text-anchor="middle">'
                 f"{_e(x_label)}</text>"
                 f'<text class="label" transform="translate(14 {(TOP + H - BOTTOM) / 2:.0f}) rotate(-90)" '
                 f'text-anchor="middle">{_e(y_label)}</text>')
    for n, (label, colour, pts) in enumerate(series):
        if not pts:
            continue
        path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(pts))
        parts.append(f'<path class="series" d="{path}" stroke="{colour}" fill="none" stroke-width="2">'
                     f"<title>{_e(label)}</title></path>")
        # Bottom right: the curves here rise with x, so that corner stays clear.
        y = H - BOTTOM - 10 - (len(series) - n) * 18
        parts.append(f'<rect x="{W - RIGHT - 200}" y="{y}" width="12" height="12" fill="{colour}"/>'
                     f'<text class="legend" x="{W - RIGHT - 182}" y="{y + 10}">{_e(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(title: str, groups: dict[str, dict[str, float]], series: Sequence[tuple[str, str, str]]) -> str:
    """Horizontal bars in [0, 1]: one group per category, one bar per (label, colour, key) of ``series``."""
    if not groups:
        return f'<p class="empty">{_e(title)}: no answerable queries.</p>'
    bar, gap, left = 14, 12, 150
    per_group = len(series) * bar + gap
    legend_rows = (len(series) + 1) // 2
    height = TOP + len(groups) * per_group + BOTTOM + (legend_rows - 1) * 18
    width = W
    inner = width - left - RIGHT - 44
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'aria-label="{_e(title)}">', f"<title>{_e(title)}</title>"]
    for tick in (0, 0.25, 0.5, 0.75, 1):
        x = left + tick * inner
        bottom = TOP + len(groups) * per_group
        parts.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{bottom}"/>'
                     f'<text class="tick" x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{_f(tick)}</text>')
    for g, (name, values) in enumerate(groups.items()):
        y0 = TOP + g * per_group
        parts.append(f'<text class="tick" x="{left - 8}" y="{y0 + len(series) * bar / 2 + 4:.1f}" '
                     f'text-anchor="end">{_e(name)}</text>')
        for s, (label, colour, key) in enumerate(series):
            value = values.get(key)
            if value is None:
                continue
            y = y0 + s * bar
            parts.append(f'<rect class="bar" x="{left}" y="{y}" width="{max(value * inner, 0.5):.1f}" '
                         f'height="{bar - 2}" fill="{colour}"><title>{_e(f"{name}, {label}: {value:.4f}")}</title>'
                         f'</rect><text class="value" x="{left + value * inner + 4:.1f}" y="{y + bar - 4}">'
                         f"{value:.3f}</text>")
    for n, (label, colour, _) in enumerate(series):
        x, y = 20 + (n % 2) * 270, TOP + len(groups) * per_group + 30 + (n // 2) * 18
        parts.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{colour}"/>'
                     f'<text class="legend" x="{x + 18}" y="{y + 10}">{_e(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


# --- the page ----------------------------------------------------------------------------------


def _number(value: float | None, metric: str, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    decimals = MEASURES.parse(metric)[0].decimals
    return f"{value:+.{decimals}f}" if signed else f"{value:.{decimals}f}"


def _higher_is_better(metric: str) -> bool:
    """Every measure but the context a ranking costs (chars@k), where more is neither better nor worse."""
    return MEASURES.parse(metric)[0].directed


def _metrics_table(rows: list[dict[str, Any]], headline: list[str], has_base: bool, alpha: float) -> str:
    head = ("<tr><th>metric</th><th>baseline</th><th>run</th><th>delta</th><th>95% CI of the delta</th>"
            "<th>p</th></tr>" if has_base else "<tr><th>metric</th><th>mean</th><th>95% CI of the mean</th></tr>")
    body = []
    for row in rows:
        m = row["metric"]
        ci = "n/a" if row["ci"] is None else \
            f"[{_number(row['ci'][0], m, has_base)}, {_number(row['ci'][1], m, has_base)}]"
        cls = ' class="headline"' if m in headline else ""
        if has_base:
            p = "n/a" if row["p"] is None else f"{row['p']:.4f}"
            mark = ""
            if row["p"] is not None and row["p"] < alpha and row["delta"] and _higher_is_better(m):
                mark = ' class="better"' if row["delta"] > 0 else ' class="worse"'
            body.append(f"<tr{cls}><td>{_e(m)}</td><td>{_number(row['baseline'], m)}</td>"
                        f"<td>{_number(row['run'], m)}</td><td{mark}>{_number(row['delta'], m, True)}</td>"
                        f"<td>{ci}</td><td>{p}</td></tr>")
        else:
            body.append(f"<tr{cls}><td>{_e(m)}</td><td>{_number(row['run'], m)}</td><td>{ci}</td></tr>")
    return f'<table class="metrics"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'


def _cards(rows: list[dict[str, Any]], headline: list[str], has_base: bool, alpha: float) -> str:
    by_metric = {r["metric"]: r for r in rows}
    cards = []
    for m in headline:
        row = by_metric[m]
        detail = ""
        if has_base:
            ci = "" if row["ci"] is None else \
                f" (95% CI {_number(row['ci'][0], m, True)} to {_number(row['ci'][1], m, True)})"
            p = "" if row["p"] is None else f", p = {row['p']:.4f}"
            mark = ""
            if row["p"] is not None and row["p"] < alpha and row["delta"] and _higher_is_better(m):
                mark = " better" if row["delta"] > 0 else " worse"
            detail = f'<div class="delta{mark}">{_number(row["delta"], m, True)} vs baseline{ci}{p}</div>'
        elif row["ci"] is not None:
            detail = f'<div class="delta">95% CI {_number(row["ci"][0], m)} to {_number(row["ci"][1], m)}</div>'
        cards.append(f'<div class="card"><div class="name">{_e(m)}</div>'
                     f'<div class="value">{_number(row["run"], m)}</div>{detail}</div>')
    return f'<div class="cards">{"".join(cards)}</div>'


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
           top_k: int = TOP_K, alpha: float = 0.05) -> str:
    """The whole page as text."""
    side = run.side
    data = page_data(run, base, comparison, top_k=top_k)
    rows = _stat_rows(run, base, comparison)
    headline = headline_names(side)
    has_base = base is not None
    title = f"groundkit report: {side.label}" + (f" against {base.side.label}" if has_base else "")
    answerable = len(_answerable_rows(side))
    no_answer = len(side.categories) - answerable
    facts = [f"{answerable} answerable queries, {no_answer} no-answer",
             f"judgments {side.metadata['judgments_hash'][:12]}", f"corpus {side.metadata['corpus_hash'][:12]}"]
    if comparison is not None and comparison.params_changed:
        facts.append("changed: " + ", ".join(f"{k} {v[0]} → {v[1]}" for k, v in comparison.params_changed.items()))
    if comparison is not None and comparison.corpus_change:
        facts.append(f"corpus changed to {comparison.corpus_change['candidate']}")
    method = ("Deltas are paired query by query: 95% CI by paired bootstrap, p by paired randomization test "
              "(10,000 resamples, fixed seed), as in <code>groundkit compare</code>." if has_base else
              "95% CI of the mean over answerable queries: percentile bootstrap (10,000 resamples, fixed seed).")
    series_hit = [(side.label, RUN_COLOUR, _hit_curve(side))]
    series_budget = [(side.label, RUN_COLOUR, run.budget)]
    if base is not None:
        series_hit.insert(0, (base.side.label, BASE_COLOUR, _hit_curve(base.side)))
        series_budget.insert(0, (base.side.label, BASE_COLOUR, base.budget))
    bars_metrics = [m for m in (data["ndcgMetric"], data["hitMetric"]) if m]
    groups = {c: {f"run {m}": v for m, v in means.items()} for c, means in _category_means(side, bars_metrics).items()}
    bar_series = [(f"{side.label}: {m}", RUN_COLOUR if i == 0 else "#6cb6ff", f"run {m}")
                  for i, m in enumerate(bars_metrics)]
    if base is not None:
        for c, means in _category_means(base.side, bars_metrics).items():
            groups.setdefault(c, {}).update({f"base {m}": v for m, v in means.items()})
        bar_series = [s for m in bars_metrics for s in (
            (f"{base.side.label}: {m}", BASE_COLOUR if m == bars_metrics[0] else "#d4a72c", f"base {m}"),
            (f"{side.label}: {m}", RUN_COLOUR if m == bars_metrics[0] else "#6cb6ff", f"run {m}"))]
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in data["notes"])
    budget_chart = line_chart("Hit rate against context budget", series_budget, x_label="context budget (characters)",
                              y_label="hit rate within the budget") if any(s[2] for s in series_budget) else \
        '<p class="empty">No budget curve: plots/budget.csv was not found beside per_query.csv.</p>'
    body = f"""<header><h1>{_e(title)}</h1><p class="facts">{" · ".join(_e(f) for f in facts)}</p>{notes}</header>
<section id="headline"><h2>Headline</h2>{_cards(rows, headline, has_base, alpha)}<p class="method">{method}</p>
<details><summary>All metrics</summary>{_metrics_table(rows, headline, has_base, alpha)}</details></section>
<section id="charts"><h2>Where the gold is found</h2><div class="charts">
<figure>{line_chart("Hit rate against k", series_hit, x_label="k (passages read)", y_label="hit rate", log_x=True)}
<figcaption>Share of answerable queries with a gold passage in the top k.</figcaption></figure>
<figure>{budget_chart}<figcaption>Share with gold within the first N characters of the ranking.</figcaption></figure>
<figure>{bar_chart("Per category", groups, bar_series)}<figcaption>Mean per category.</figcaption></figure>
</div></section>
<section id="queries"><h2>Queries</h2>
<div class="filters"><label>category <select id="f-category"><option value="">all</option></select></label>
<label>show <select id="f-status"><option value="">all</option><option value="up">moved up</option>
<option value="down">moved down</option><option value="missed">missed (no gold in the top {top_k})</option>
<option value="no_answer">no-answer queries</option></select></label>
<label>find <input id="f-text" type="search" placeholder="id or words"></label><span id="f-count"></span></div>
<table id="query-table"><thead><tr><th data-key="id">query</th><th data-key="category">category</th>
<th data-key="query">text</th><th data-key="rank" title="rank of the first gold passage">first gold rank</th>
<th data-key="ndcg">{_e(data["ndcgMetric"] or "ndcg")}</th><th data-key="status">status</th></tr></thead>
<tbody></tbody></table></section>
<footer>groundkit {_e(__version__)}. Self-contained: this file loads nothing.</footer>"""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
{MARKER}
{POLICY}
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<style>{STYLE}</style>
</head>
<body>
{body}
<script type="application/json" id="report-data">{_json_for_script(data)}</script>
<script>{SCRIPT}</script>
</body>
</html>
"""


def report(run_spec: str, baseline_spec: str | None, *, cwd: Path, metrics_dir: str = "metrics", gate: list[str],
           alpha: float = 0.05, allow_corpus_change: bool = False, top_k: int = TOP_K) -> str:
    """The page for ``run_spec`` (and ``baseline_spec``), each as ``compare`` reads a side."""
    if top_k < 1:
        raise CompareError("--top-k", f"must be 1 or more, got {top_k}", fix="give how many passages to show, e.g. 10")
    run = read_input(run_spec, cwd, metrics_dir)
    if baseline_spec is None:
        return render(run, top_k=top_k, alpha=alpha)
    base = read_input(baseline_spec, cwd, metrics_dir)
    comparison = compare(base.side, run.side, gate=gate, alpha=alpha, allow_corpus_change=allow_corpus_change)
    return render(run, base, comparison, top_k=top_k, alpha=alpha)
