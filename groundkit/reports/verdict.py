"""The verdict: what a candidate's gated metrics say, in one word, and why.

The one place a verdict is decided and worded: ``groundkit compare`` (every format), the HTML report's
header and the Python API all take it from here. The statistics come in (groundkit/reports/paired.py's
:class:`Stat`, with p-values corrected over the gate by groundkit/reports/compare.py); the words go out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from groundkit.reports.paired import Stat, count_text, number_text
from groundkit.scoring.measures import MEASURES, Cut, Cutoff

CHARS = "chars"
"""The measure of the context a ranking costs: a gain read with more of it is bought, not won."""

VERDICTS = ("better", "mixed", "worse", "no significant change", "untested")
"""A candidate's verdict on the gated metrics (corrected p < alpha is significant). A change in a metric read at
the top k is *traded* when the context read there (``chars@k``) moved significantly the same way: a rise that
came with more text to read, or a fall that came with less, is a trade of context for quality, not a gain or
a loss. Size-fair metrics (read at a context budget) are never traded.

- better: some gated metric rose, and none fell, other than by trade;
- worse: some fell, and none rose, other than by trade;
- mixed: some rose and some fell, or every change was a trade (larger chunks gaining nDCG@10 by being
  read whole are at best mixed);
- no significant change; untested: no gated metric could be tested (fewer than two paired queries), or
  none was named.
"""


@dataclass(frozen=True)
class Decision:
    """A candidate's verdict and what it rests on.

    Attributes:
        verdict: One of :data:`VERDICTS`.
        regressions: Gated metrics that fell significantly by more than the allowed drop (the gate's failures,
            traded or not: a reviewer decides whether the context saved was worth it).
        untested: Gated metrics without a paired test, and why.
        traded: Each gated metric that moved significantly with its context, and that cost metric (``chars@k``).
    """

    verdict: str
    regressions: list[str]
    untested: dict[str, str]
    traded: dict[str, str] = field(default_factory=dict)


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


def decide(gated: list[Stat], p_adjusted: list[float | None], alpha: float, max_drop: float,
           costs: Mapping[str, Stat] | None = None) -> Decision:
    """One candidate's :class:`Decision` from its gated stats, their corrected p-values, and the stats of the
    context each gated metric is read with (``costs``, by gated metric). A cost's move is tested at ``alpha``
    alone, uncorrected: a doubt about what a change cost counts against calling it a gain."""
    costs = costs or {}
    untested = {s.metric: f"{count_text(s.queries)}; a paired test needs at least two"
                for s in gated if s.p_value is None}
    significant = [s for s, p in zip(gated, p_adjusted, strict=True)
                   if p is not None and p < alpha and s.delta is not None and s.delta != 0]
    regressions = [s.metric for s in significant if s.delta is not None and s.delta < -max_drop]
    traded = {s.metric: costs[s.metric].metric for s in significant
              if s.metric in costs and _moved_with(costs[s.metric], s, alpha)}
    rose = [s for s in significant if s.delta is not None and s.delta > 0 and s.metric not in traded]
    fell = [s for s in significant if s.delta is not None and s.delta < 0 and s.metric not in traded]
    if rose and fell:
        verdict = "mixed"
    elif fell:
        verdict = "worse"
    elif rose:
        verdict = "better"
    elif traded:
        verdict = "mixed"
    elif not gated or len(untested) == len(gated):
        verdict = "untested"
    else:
        verdict = "no significant change"
    return Decision(verdict, regressions, untested, traded)


def _moved_with(cost: Stat, stat: Stat, alpha: float) -> bool:
    """Whether the context read (``cost``) moved significantly in the direction ``stat`` did."""
    if cost.p_value is None or cost.p_value >= alpha or not cost.delta or not stat.delta:
        return False
    return (cost.delta > 0) == (stat.delta > 0)


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


def verdict_reason(gate: list[str], stats: Mapping[str, Stat], p_adjusted: Mapping[str, float | None], alpha: float,
                   traded: Mapping[str, str], costs: Mapping[str, Stat]) -> str:
    """Why the verdict is what it is, in a clause: which gated metrics rose or fell, and which of them only traded
    quality for context (:data:`VERDICTS`)."""
    parts = []
    for m in gate:
        s, p = stats.get(m), p_adjusted.get(m)
        if s is None or p is None or p >= alpha or not s.delta:
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
