"""A sweep read as a choice: quality against the context it costs, the Pareto frontier, and the best per budget.

A chunking sweep asks which configuration a reader with a context window should use. Read off one
rank measure, it has a wrong answer built in: larger chunks carry more text into the top k, so nDCG@10
rises all the way to whole documents. This view puts each configuration of the sweep (the current
commit and its experiments, as ``groundkit sweep-plot`` collects them) at its quality (``ndcg@10``,
with a 95% bootstrap interval over the queries) against its cost (``chars@10``: the characters the
top 10 hand a reader), marks the Pareto frontier (no other configuration is at least as good for no
more context, and better in one), and answers at each context budget B the sweep measured: the best
configuration by the size-fair ``coverage@Bchars`` (the share of the gold a window of B characters
holds, whatever the chunk size), its difference from the runner-up paired over the queries, and
whether that difference is significant once corrected for testing every budget (Holm by default).

Configurations scored with different ``score.min_overlap`` measure relevance differently, so they
are never ranked against each other: each value gets its own frontier and answers, and the headline
under both settings shows how much of a sweep's gain is overlap inflation.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from groundkit.corpus.chunking.kinds import ChunkerKind
from groundkit.corpus.chunking.kinds import parse as parse_chunker
from groundkit.errors import CompareError, MeasureError, SweepError
from groundkit.reports.compare import answerable_ids, check_alpha, check_correction, metric_matrix
from groundkit.reports.compare import rows_of as side_rows
from groundkit.reports.inference import MIN_QUERIES, TOO_FEW, tied_with_best
from groundkit.reports.sides import Side, read_side
from groundkit.reports.stats import adjust_p_values, mean_intervals, paired_stats
from groundkit.reports.sweep import dvc_exp_show, experiment_rows, git_run_json
from groundkit.reports.verdict import CHARS, cost_metric
from groundkit.scoring.measures import MEASURES, Cutoff

WIDTH = 100
"""The widest line of the text."""

DEFAULT_QUALITY = "ndcg@10"
DEFAULT_BUDGET_MEASURE = "coverage"
OVERLAP_KEY = "score.min_overlap"
IGNORED = ("execution.", "score.measures", "score.headline")
"""Params that change no number of a configuration (or only which numbers are kept)."""

SIZED = ("chunk.size", "chunk.overlap")
"""Params a chunker uses only when it declares them its own (``ChunkerKind.sized``): a whole document is one
chunk, and a library's or a python: chunker's sizes are in chunk.options, whatever chunk.size says."""

CHUNK_DEFAULTS = {"chunk.context": "none"}
"""Chunk params run.json leaves out while unset (``ChunkParams.recorded``), read as their value."""


def _chunker(params: dict[str, Any]) -> ChunkerKind | None:
    strategy = params.get("chunk.strategy", "fixed")
    try:
        return parse_chunker(strategy) if isinstance(strategy, str) else None
    except ValueError:
        return None


def shown_params(params: dict[str, Any], recorded: dict[str, Any] | None = None) -> dict[str, Any]:
    """``params`` less those the chunker leaves unused (:data:`SIZED`), shown as None; sizes in tokens say so.

    ``recorded`` is the run's whole params (flat), for the strategy when ``params`` does not vary it.
    """
    kind = _chunker({**(recorded or {}), **params})
    unused = set(SIZED) if kind is not None and not kind.sized else set()
    unit = " tokens" if kind is not None and kind.unit == "tokens" else ""
    return {key: (None if key in unused else f"{value}{unit}" if key in SIZED and value is not None and unit
                  else value) for key, value in params.items()}


@dataclass
class Config:
    """One configuration of the sweep: a revision, the params that tell it apart, and its per-query results."""

    name: str
    params: dict[str, Any]
    side: Side

    @property
    def label(self) -> str:
        """``strategy=recursive size=400 overlap=100 context=headings``: the varied params by their last name
        (those used; a chunker's option by its key), sizes in tokens said so, or the revision's name."""
        recorded = _flat(self.side.metadata.get("params", {}))
        return " ".join(f"{key.rsplit('.', 1)[-1]}={_value(value)}"
                        for key, value in shown_params(self.params, recorded).items()
                        if value is not None) or self.name


@dataclass
class Point:
    """A configuration's place on the chart: quality with its interval, cost, and each budget's measure."""

    config: Config
    quality: float
    quality_ci: tuple[float | None, float | None]
    cost: float
    budgets: dict[str, tuple[float, float | None, float | None]]
    frontier: bool = False


@dataclass
class BudgetAnswer:
    """The best configuration by one size-fair metric, and how sure the sweep is of it."""

    metric: str
    best: Point
    runner_up: Point | None
    delta: float | None = None
    ci: tuple[float | None, float | None] = (None, None)
    p_value: float | None = None
    p_adjusted: float | None = None
    tied: list[Point] = field(default_factory=list)
    detectable: float | None = None


@dataclass
class Group:
    """The configurations scored with one ``score.min_overlap``: ranked against each other only."""

    min_overlap: float
    points: list[Point]
    answers: list[BudgetAnswer] = field(default_factory=list)


@dataclass
class SweepView:
    commit: str
    params: list[str]
    quality: str
    cost: str
    queries: int
    groups: list[Group]
    alpha: float
    correction: str
    left_out: list[tuple[str, str]] = field(default_factory=list)


def _value(value: Any) -> str:
    """A param's value in a label: a list (a chunker's separators) as JSON, so a line break reads as \\n."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else str(value)


def _flat(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    if not prefix and "chunk.strategy" in flat:
        flat = {**CHUNK_DEFAULTS, **flat}
    return flat


def varied_params(sides: Sequence[Side]) -> list[str]:
    """The params (as run.json records what each run used) whose value differs between the sides, chunk.size
    first: what tells the configurations apart."""
    flats = [_flat(side.metadata.get("params", {})) for side in sides]
    keys = sorted({key for flat in flats for key in flat})
    varied = [key for key in keys if len({repr(flat.get(key)) for flat in flats}) > 1
              and key != OVERLAP_KEY and not key.startswith(IGNORED)]
    return sorted(varied, key=lambda key: (key != "chunk.size", key))


def _min_overlap(side: Side) -> float:
    return float(_flat(side.metadata.get("params", {})).get(OVERLAP_KEY, 0.0))


def frontier(points: Sequence[Point]) -> None:
    """Mark the points no other point dominates: at least as good a quality for no more cost, better in one."""
    for p in points:
        p.frontier = not any(q is not p and q.cost <= p.cost and q.quality >= p.quality
                             and (q.cost < p.cost or q.quality > p.quality) for q in points)


def _check(name: str, what: str) -> None:
    try:
        MEASURES.parse(name)
    except MeasureError as exc:
        raise SweepError(what, str(exc), fix="name a metric the runs report, e.g. ndcg@10") from None


def sweep_view(cwd: Path, *, quality: str = DEFAULT_QUALITY, budget_measure: str = DEFAULT_BUDGET_MEASURE,
               params: Sequence[str] = (), alpha: float = 0.05, correction: str = "holm",
               metrics_dir: str = "metrics") -> SweepView:
    """Read the sweep of the current commit at ``cwd`` and work out its view (the module docstring says what)."""
    _check(quality, "--quality")
    parsed = MEASURES.parse(quality)
    if parsed.cut is None or parsed.cut.kind is not Cutoff.RANK or not parsed.measure.directed:
        raise SweepError("--quality", f"{quality} is not a quality read at a rank, so it has no context cost to "
                         "plot it against (a budget metric's cost is its budget)",
                         fix="name a metric at k, e.g. ndcg@10 or recall@5; the budgets are answered below it")
    try:
        MEASURES[budget_measure]
    except KeyError:
        raise SweepError("--budget-measure", f"{budget_measure!r} is not a measure groundkit reports",
                         fix="name a measure taken at a budget, e.g. coverage or recall") from None
    try:
        check_alpha(alpha)
        check_correction(correction)
    except CompareError as exc:
        raise SweepError(exc.path, exc.problem, fix=exc.fix) from None
    shown = dvc_exp_show(cwd, SweepError, "dvc")
    sweep = experiment_rows(shown, [], git_run_json(cwd))
    if not sweep.rows:
        raise SweepError(cwd, "has no experiments with results on this commit",
                         fix="queue a sweep first: dvc exp run --queue -S 'chunk.size=200,400,800' && dvc queue start")
    revisions = dict(sweep.revisions)
    sides = [read_side(revisions[row["experiment"]], cwd=cwd, metrics_dir=metrics_dir, label=row["experiment"])
             for row in sweep.rows]
    chosen = list(params) or varied_params(sides)
    configs = [Config(side.label, {key: _flat(side.metadata.get("params", {})).get(key) for key in chosen}, side)
               for side in sides]
    cost = cost_metric(quality, sides[0].per_query.metric_names)
    missing = [(c.name, m) for c in configs for m in (quality, cost)
               if m is not None and m not in c.side.per_query.metric_names]
    if cost is None or missing:
        name, metric = missing[0] if missing else (sides[0].label, MEASURES[CHARS].pattern)
        raise SweepError("--quality", f"{name} does not report {metric}, which the view reads",
                         fix="sweep experiments whose score.measures hold the metric and its chars@k")
    budgets = sorted({m for m in sides[0].per_query.metric_names if _at_budget(m, budget_measure)
                      and all(m in s.per_query.metric_names for s in sides)}, key=lambda m: MEASURES.parse(m).cut.value)
    ids = answerable_ids(sides[0])
    by_overlap: dict[float, list[Config]] = {}
    for config in configs:
        by_overlap.setdefault(_min_overlap(config.side), []).append(config)
    groups = [_group(overlap, members, ids, quality, cost, budgets, alpha)
              for overlap, members in sorted(by_overlap.items())]
    tests = [a for g in groups for a in g.answers if a.p_value is not None]
    for answer, p in zip(tests, adjust_p_values([a.p_value for a in tests], correction), strict=True):
        answer.p_adjusted = p
    commit = next((row["experiment"] for row in sweep.rows if row["experiment"] not in dict(sweep.experiments)),
                  sweep.rows[0]["experiment"])
    return SweepView(commit=commit, params=chosen, quality=quality, cost=cost, queries=len(ids), groups=groups,
                     alpha=alpha, correction=correction, left_out=sweep.left_out)


def order_key(value: object) -> tuple[int, float | str]:
    """Numbers in order, then text, then an unused value (a whole document has no size)."""
    if value is None:
        return (2, "")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, float(value))
    return (1, str(value))


def _at_budget(name: str, measure: str) -> bool:
    metric = MEASURES.parse(name)
    return metric.measure.name == measure and metric.cut is not None and metric.cut.kind is Cutoff.BUDGET


def _group(overlap: float, configs: list[Config], ids: list[str], quality: str, cost: str,
           budgets: list[str], alpha: float = 0.05) -> Group:
    metrics = [quality, cost, *budgets]
    values = {c.name: metric_matrix(c.side, side_rows(c.side, ids), metrics) for c in configs}
    points = []
    for config in configs:
        matrix = values[config.name]  # (metrics, queries)
        intervals = mean_intervals(matrix[[0, *range(2, len(metrics))]])
        means = matrix.mean(axis=1)
        budget_cells = {m: (float(means[2 + j]), *intervals[1 + j]) for j, m in enumerate(budgets)}
        points.append(Point(config, float(means[0]), intervals[0], float(means[1]), budget_cells))
    frontier(points)
    points.sort(key=lambda p: tuple(order_key(v) for v in shown_params(p.config.params).values()))
    group = Group(overlap, points)
    for j, metric in enumerate(budgets):
        ranked = sorted(points, key=lambda p: (-p.budgets[metric][0], p.config.label))
        best, runner = ranked[0], (ranked[1] if len(ranked) > 1 else None)
        answer = BudgetAnswer(metric, best, runner)
        order = sorted(points, key=lambda p: p.config.label)  # tied_with_best takes the first of equal means
        ties = tied_with_best(np.stack([values[p.config.name][2 + j] for p in order]), alpha)
        answer.tied = [order[i] for i in ties.tied]
        answer.detectable = ties.detectable
        if runner is not None:
            low, high, p = paired_stats(values[runner.config.name][2 + j], values[best.config.name][2 + j])
            answer.delta = best.budgets[metric][0] - runner.budgets[metric][0]
            answer.ci, answer.p_value = (low, high), p
        group.answers.append(answer)
    return group


# --- text ---------------------------------------------------------------------------------------


def _n(value: float | None, metric: str, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    decimals = MEASURES.parse(metric).measure.decimals
    return f"{value:+.{decimals}f}" if signed else f"{value:.{decimals}f}"


def _ci(ci: tuple[float | None, float | None], metric: str, signed: bool = False) -> str:
    return "n/a" if ci[0] is None else f"[{_n(ci[0], metric, signed)}, {_n(ci[1], metric, signed)}]"


def _wrap(text: str, indent: str = "") -> list[str]:
    import textwrap

    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False) or [""]


def render_text(view: SweepView) -> str:
    """The view as plain text within :data:`WIDTH` columns: per min_overlap, the table, frontier and answers."""
    lines = _wrap(f"groundkit sweep: {sum(len(g.points) for g in view.groups)} configurations of {view.commit}, "
                  f"{view.queries} answerable queries. {view.quality} (95% interval over the queries) against "
                  f"{view.cost}, the characters its top k hand a reader; * marks the Pareto frontier (no "
                  "configuration ranks better for no more context).")
    for group in view.groups:
        lines.append("")
        if len(view.groups) > 1:
            lines += _wrap(f"With score.min_overlap = {group.min_overlap:g}"
                           f"{' (any overlap is relevant)' if group.min_overlap == 0 else ''}:")
        budgets = [a.metric for a in group.answers]
        keys = view.params or ["configuration"]
        header = [*(key.rsplit(".", 1)[-1] for key in keys), view.quality, "95% CI", view.cost, *budgets, ""]
        rows = [[*_param_cells(p, view.params), _n(p.quality, view.quality), _ci(p.quality_ci, view.quality),
                 _n(p.cost, view.cost), *(_n(p.budgets[m][0], m) for m in budgets), "*" if p.frontier else ""]
                for p in group.points]
        left = {i for i in range(len(keys))} | {len(keys) + 1}
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        if sum(widths) + 2 * (len(widths) - 1) > WIDTH:  # too wide: shorten the budget names to their cut
            first = len(keys) + 3
            header[first:first + len(budgets)] = [m.split("@", 1)[1] for m in budgets]
            widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            cells = [cell.ljust(w) if i in left else cell.rjust(w)
                     for i, (cell, w) in enumerate(zip(row, widths, strict=True))]
            lines.append("  ".join(cells).rstrip())
        lines.append("")
        lines += _wrap(f"Best at each budget (by {budgets[0].split('@')[0] if budgets else 'budget'}), and every "
                       "configuration statistically tied with it: none significantly below another, by multiple "
                       f"comparison with the best (Hsu's MCB over every pair, paired over the queries, alpha "
                       f"{view.alpha}):")
        for a in group.answers:
            value, low, high = a.best.budgets[a.metric]
            lines += _wrap(f"{a.metric}: {a.best.config.label}, {_n(value, a.metric)} {_ci((low, high), a.metric)}",
                           "  ")
            if a.runner_up is None:
                lines += _wrap("the only configuration", "    ")
            elif view.queries < MIN_QUERIES:
                lines += _wrap(f"no tie or difference claimed: {TOO_FEW}", "    ")
            elif len(a.tied) == 1:
                lines += _wrap("alone best: significantly above every other configuration", "    ")
            elif len(a.tied) == len(group.points):
                lines += _wrap(f"tied with the best: all {len(a.tied)}; the sweep cannot tell them apart", "    ")
            else:
                lines += _wrap(f"tied with the best ({len(a.tied)} of {len(group.points)}): "
                               + ", ".join(p.config.label for p in a.tied), "    ")
        detectable = [(a.metric, a.detectable) for a in group.answers if a.detectable is not None]
        if detectable:
            metric, x = detectable[0]
            lines.append("")
            lines += _wrap(f"With {len(group.points)} configurations over {view.queries} queries, a difference "
                           f"smaller than about {_n(x, metric)} in {metric} between two of them is unlikely to be "
                           "detected (80% power) once every pair is compared. To see smaller ones: compare fewer "
                           "configurations (the few you would choose between, with groundkit compare --correction bh "
                           "where a false discovery rate will do), or label more queries (an LLM's labels, checked "
                           "by a person).")
    return "\n".join(lines) + "\n"


def _param_cells(point: Point, params: list[str]) -> list[str]:
    if not params:
        return [point.config.name]
    shown = shown_params(point.config.params)
    return ["-" if shown[key] is None else str(shown[key]) for key in params]


def _p(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.4f}"


def csv_rows(view: SweepView) -> tuple[list[str], list[dict[str, Any]]]:
    """The CSV for ``dvc plots show``: one row per configuration, its params (``.`` written ``_``, which
    Vega-Lite would read as a nested field), quality with its interval, cost, each budget's measure with its
    interval, the series it belongs to and whether it is on the frontier."""
    budgets = [a.metric for a in view.groups[0].answers] if view.groups else []
    columns = ["experiment", *(p.replace(".", "_") for p in view.params), "min_overlap", view.quality,
               f"{view.quality}_low", f"{view.quality}_high", view.cost,
               *(c for m in budgets for c in (m, f"{m}_low", f"{m}_high")), "series", "frontier"]
    rows = []
    for group in view.groups:
        for p in group.points:
            row: dict[str, Any] = {"experiment": p.config.name, "min_overlap": group.min_overlap,
                                   view.quality: p.quality, f"{view.quality}_low": p.quality_ci[0],
                                   f"{view.quality}_high": p.quality_ci[1], view.cost: p.cost,
                                   "series": series_of(view, p), "frontier": int(p.frontier)}
            row.update({key.replace(".", "_"): value for key, value in p.config.params.items()})
            for m in budgets:
                row[m], row[f"{m}_low"], row[f"{m}_high"] = p.budgets[m]
            rows.append(row)
    return columns, rows


def series_of(view: SweepView, point: Point) -> str:
    """The chart's series of a point: its values of every varied param but the first (one line per overlap)."""
    shown = shown_params(point.config.params)
    rest = [f"{key.rsplit('.', 1)[-1]}={shown[key]}" for key in view.params[1:] if shown[key] is not None]
    return " ".join(rest) or "all"

