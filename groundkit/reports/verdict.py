"""The verdict: what a candidate's gated metrics say, in one word, and why; and the gate that agrees with it.

The one place a verdict is decided and worded: ``groundkit compare`` (every format), the HTML report's
header, the self-test and the Python API all take it from here. The statistics come in
(groundkit/reports/paired.py's :class:`Stat`, each gated row already decided by its interval at the corrected
level, groundkit/reports/inference.py: significant exactly when the interval excludes 0); the words go out.

A change in a metric read at the top k is *traded* when the context read there (``chars@k``) moved
significantly the same way: a fall that came with less text to read, or a rise that came with more, is a trade
of context for quality, not a loss or a gain. Size-fair metrics (read at a context budget) are never traded.
:data:`VERDICT_TABLE` defines each word and whether the default gate passes it; docs/statistics.md shows the
same table, and a test checks the two agree.

The gate (``--fail-on-regression``, and ``--non-inferiority``) fails on:

* ``regression``: a gated metric fell significantly, not by trade, by more than ``--max-drop``;
* ``non-inferiority``: a named metric's one-sided (1 - alpha) lower bound lies at or below ``-MARGIN``.

Each failure names its metric and its rule. A verdict the table says passes never fails the regression rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from groundkit.errors import CompareError
from groundkit.inputs.text import terminal_text
from groundkit.reports.inference import MIN_QUERIES, queries_for_non_inferiority
from groundkit.reports.paired import Stat, count_text, number_text
from groundkit.scoring.measures import MEASURES, Cut, Cutoff

CHARS = "chars"
"""The measure of the context a ranking costs: a gain read with more of it is bought, not won."""

VERDICT_TABLE: dict[str, tuple[str, bool]] = {
    "better": ("some gated metric rose significantly, and none fell significantly other than by trade", True),
    "worse": ("some gated metric fell significantly (not by trade), and none rose", False),
    "traded": ("a gated rank metric moved significantly only together with a significant change of the context "
               "read the same way (fell with a cut, rose with more), and no size-fair metric fell significantly; "
               "passes, with a note", True),
    "mixed": ("one gated metric rose significantly while another fell significantly, and the fall is not traded",
              False),
    "no significant change": ("no gated metric's interval excludes 0", True),
    "untested": ("no gated metric could be tested: none named, or fewer than 10 paired queries", True),
}
"""Each verdict: its definition, and whether the default gate (``--fail-on-regression``, ``--max-drop 0``) passes."""

VERDICTS = tuple(VERDICT_TABLE)
"""The closed vocabulary, in the order a summary counts them."""


class Row(Protocol):
    """What a verdict reads of a gated metric (paired.py's Stat)."""

    metric: str
    delta: float | None

    @property
    def significant(self) -> bool: ...


@dataclass(frozen=True)
class Decision:
    """A candidate's verdict and what it rests on.

    Attributes:
        verdict: One of :data:`VERDICTS`.
        regressions: Gated metrics that fell significantly, not by trade, by more than the allowed drop: the
            regression rule's failures.
        untested: Gated metrics without a deciding interval, and why.
        traded: Each gated metric that moved significantly with its context, and that cost metric (``chars@k``).
        tolerated: Gated metrics that fell significantly, not by trade, but within the allowed drop.
    """

    verdict: str
    regressions: list[str]
    untested: dict[str, str]
    traded: dict[str, str] = field(default_factory=dict)
    tolerated: list[str] = field(default_factory=list)


def _moved_with(cost: Row, row: Row) -> bool:
    """Whether the context read (``cost``) moved significantly in the direction ``row`` did."""
    if not cost.significant or not cost.delta or not row.delta:
        return False
    return (cost.delta > 0) == (row.delta > 0)


def decide(gated: Sequence[Row], untested: Mapping[str, str], max_drop: float,
           costs: Mapping[str, Row] | None = None) -> Decision:
    """The verdict of one candidate from its gated rows (decided), why some are untested, the allowed drop, and
    the context each gated rank metric is read with (``costs``, by gated metric; each tested alone)."""
    costs = costs or {}
    significant = [s for s in gated if s.significant and s.delta]
    traded = {s.metric: costs[s.metric].metric for s in significant
              if s.metric in costs and _moved_with(costs[s.metric], s)}
    rose = [s for s in significant if s.delta is not None and s.delta > 0 and s.metric not in traded]
    fell = [s for s in significant if s.delta is not None and s.delta < 0 and s.metric not in traded]
    if rose and fell:
        verdict = "mixed"
    elif fell:
        verdict = "worse"
    elif rose:
        verdict = "better"
    elif traded:
        verdict = "traded"
    elif not gated or len(untested) == len(gated):
        verdict = "untested"
    else:
        verdict = "no significant change"
    regressions = [s.metric for s in fell if s.delta is not None and s.delta < -max_drop]
    tolerated = [s.metric for s in fell if s.metric not in regressions]
    return Decision(verdict, regressions, dict(untested), traded, tolerated)


def size_fair(metric: str) -> bool:
    """Read at a context budget: no chunk size can win it by handing a reader more text."""
    return MEASURES.parse(metric).size_fair


def cost_metric(metric: str, reported: Sequence[str]) -> str | None:
    """The context a change in ``metric`` is read with: ``chars@k`` at its k (the deepest k for a metric without a
    cut-off, which reads the whole ranking); None for a size-fair metric, a cost itself, or when chars@k is not
    among the ``reported`` metrics."""
    parsed = MEASURES.parse(metric)
    if parsed.size_fair or not parsed.measure.directed:
        return None
    chars = MEASURES[CHARS]
    if parsed.cut is not None:
        name = chars.label(Cut(Cutoff.RANK, parsed.cut.value))
        return name if name in reported else None
    deepest = max((m.cut.value for m in map(MEASURES.parse, reported)
                   if m.measure is chars and m.cut is not None), default=None)
    return None if deepest is None else chars.label(Cut(Cutoff.RANK, deepest))


def cost_metrics(gate: Sequence[str], reported: Sequence[str]) -> dict[str, str]:
    """Each gated metric's :func:`cost_metric`, where there is one."""
    return {m: cost for m in gate if (cost := cost_metric(m, reported)) is not None}


def verdict_summary(verdicts: list[str]) -> str:
    """The candidates' verdicts counted, in :data:`VERDICTS` order: "2 better, 1 worse"; one verdict when all agree
    ("better" for every candidate). Never one word for candidates that disagree: a sweep with three better
    candidates and one worse is not "worse"."""
    if len(set(verdicts)) == 1:
        return verdicts[0] if len(verdicts) == 1 else f"{verdicts[0]} (all {len(verdicts)})"
    return ", ".join(f"{verdicts.count(v)} {v}" for v in VERDICTS if v in verdicts)


def cost_text(stat: Stat) -> str:
    """A cost's change in words: ``chars@10 7774.2 -> 15548.4 (2.00x)``."""
    m = stat.metric
    ratio = "" if not stat.baseline or stat.candidate is None else f" ({stat.candidate / stat.baseline:.2f}x)"
    return f"{m} {number_text(stat.baseline, m)} -> {number_text(stat.candidate, m)}{ratio}"


def verdict_reason(gate: list[str], stats: Mapping[str, Stat], traded: Mapping[str, str],
                   costs: Mapping[str, Stat]) -> str:
    """Why the verdict is what it is, in a clause: which gated metrics rose or fell (their deciding interval excludes
    0), and which of them only traded quality for context (:data:`VERDICTS`)."""
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


def moved_costs(gate: list[str], costs: Mapping[str, Stat]) -> list[tuple[str, Stat]]:
    """The gated metrics whose context (chars@k) moved, each with its cost's stat: shown beside the quality."""
    return [(m, costs[m]) for m in gate if m in costs and costs[m].delta]


# --- the gate -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GateLine:
    """One gated metric's outcome under one rule; ``passed`` False fails the gate (exit 4)."""

    metric: str
    rule: str
    passed: bool
    text: str
    candidate: str | None = None

    def line(self) -> str:
        """``gate failed: ndcg@10 (rule non-inferiority, margin 0.02): ...``."""
        who = f" ({terminal_text(self.candidate)})" if self.candidate else ""  # a label is outside text
        return f"gate {'passed' if self.passed else 'failed'}: {self.metric}{who}, rule {self.rule}: {self.text}"


def regression_lines(decision: Decision, deltas: Mapping[str, float | None], max_drop: float,
                     alpha: float) -> list[GateLine]:
    """The regression rule's failures, and a passing line for each fall it tolerates (traded or within the drop)."""
    lines = [GateLine(m, "regression", False, f"fell significantly by {-(deltas[m] or 0):.4f} (its interval "
                      f"excludes 0 at the corrected level, alpha {alpha}), more than --max-drop {max_drop}")
             for m in decision.regressions]
    lines += [GateLine(m, "regression", True, f"fell significantly by {-(deltas[m] or 0):.4f}, within --max-drop "
                       f"{max_drop}") for m in decision.tolerated]
    lines += [GateLine(m, "regression", True, f"fell only with less context read ({cost}): traded, not a regression")
              for m, cost in decision.traded.items() if (deltas.get(m) or 0) < 0]
    return lines


def verdict_passes(verdict: str) -> bool:
    """Whether the default gate passes this verdict (:data:`VERDICT_TABLE`)."""
    return VERDICT_TABLE[verdict][1]


# --- non-inferiority ----------------------------------------------------------------------------


class Tested(Protocol):
    """What the non-inferiority rule reads of a metric's paired comparison (paired.py's Stat)."""

    metric: str
    queries: int
    delta: float | None
    sd: float | None
    null: object | None
    by_person: bool


def non_inferiority_lines(rows: Mapping[str, Tested], margins: Mapping[str, float], alpha: float) -> list[GateLine]:
    """One line per named metric: passed when the one-sided (1 - alpha) lower bound of the paired delta (the
    sign-flip test inverted, inference.FlipNull.lower_bound; PPI's normal bound for a PPI row) lies above
    ``-margin``.

    Every metric must pass (an intersection-union test: each at alpha, no correction needed, Berger 1982).
    Where the queries are fewer than a truly equal candidate needs to pass with 80% power, the line says so,
    with that number, from the observed SD of the paired differences. A PPI row counts the queries a person
    labelled, and its SD is PPI's standard error times sqrt(n), with normal quantiles, as its bound is normal.
    """
    lines = []
    for metric, margin in margins.items():
        row = rows[metric]
        needed = None if row.sd is None else queries_for_non_inferiority(row.sd, margin, alpha,
                                                                           normal=row.by_person)
        few = ""
        if row.null is None:
            needed = max(needed or 0, MIN_QUERIES)
        spread = "PPI standard error x sqrt(n)" if row.by_person else "SD of the paired differences"
        if needed is not None and row.queries < needed:
            few = (f"; too few queries: {count_text(row.queries, row.by_person)}, and a candidate equal to the "
                   f"baseline passes this margin with 80% power only from about {needed} ({spread} "
                   f"{row.sd if row.sd is not None else float('nan'):.4f}); label more queries or widen the margin")
        if row.null is None:
            lines.append(GateLine(metric, "non-inferiority", False, f"no lower bound with "
                                  f"{count_text(row.queries, row.by_person)}, so no evidence the drop is smaller "
                                  f"than {margin}{few}"))
            continue
        bound = row.null.lower_bound(alpha)  # type: ignore[attr-defined]
        passed = bound > -margin
        lines.append(GateLine(metric, "non-inferiority", passed, f"delta {row.delta:+.4f}, one-sided "
                              f"{100 * (1 - alpha):g}% lower bound {bound:+.4f} {'above' if passed else 'not above'} "
                              f"-{margin}{few}"))
    return lines


def parse_margins(text: Sequence[str]) -> dict[str, float]:
    """``--non-inferiority METRIC=MARGIN[,METRIC=MARGIN]`` (repeatable) as ``{metric: margin}``; each checked."""
    margins: dict[str, float] = {}
    for part in (p.strip() for item in text for p in item.split(",")):
        if not part:
            continue
        metric, sep, value = part.partition("=")
        fix = "give METRIC=MARGIN with the margin in the metric's own units, e.g. ndcg@10=0.02"
        if not sep or not metric.strip():
            raise CompareError("--non-inferiority", f"{part!r} is not METRIC=MARGIN", fix=fix)
        try:
            margin = float(value)
        except ValueError:
            raise CompareError("--non-inferiority", f"{part!r}: the margin {value!r} is not a number",
                               fix=fix) from None
        if not (math.isfinite(margin) and margin > 0):
            raise CompareError("--non-inferiority", f"{part!r}: the margin must be a finite number above 0", fix=fix)
        margins[metric.strip()] = margin
    return margins
