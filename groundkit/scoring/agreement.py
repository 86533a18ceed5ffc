"""How far a person agrees with the judge: Cohen's kappa over pooled pairs, with a bootstrap interval.

The unit is a (query, pooled passage) pair of the judge's pool (``NAME.pool.jsonl``), for the queries both
label sets judge. A pair is relevant under a label set when one of the query's gold spans overlaps the
passage: the relevance rule score uses (any shared character). Its grade is the highest grade of the spans
that overlap it, 0 when none does.

* Cohen's kappa (1960): ``(p_o - p_e) / (1 - p_e)``, ``p_o`` the share of pairs both call the same, ``p_e``
  the share expected by chance from each side's marginal shares; undefined (None) when ``p_e`` is 1.
* Weighted kappa over grades (Cohen 1968) with quadratic weights ``(i - j)^2``: ``1 - sum(w O) / sum(w E)``,
  O the observed and E the chance-expected grade table.
* The interval: a percentile bootstrap over queries (pairs of one query are drawn together, since they
  share a query and a judge's mood), ``replicates`` draws from ``numpy.random.default_rng(seed)``;
  replicates where kappa is undefined are left out and counted.
* Quotes moved: of the pairs both call relevant, the share where the person's overlapping spans are not
  the judge's (other characters).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from groundkit.corpus.passage import Passage
from groundkit.corpus.spans import ResolvedJudgment


@dataclass(frozen=True)
class Pair:
    """One pooled pair's labels: the judge's grade and the person's (0 = not relevant), and whether the
    spans that make it relevant are the same characters on both sides."""

    query_id: str
    judge: int
    person: int
    same_spans: bool


def pairs(rows: Sequence[Mapping[str, object]], machine: Mapping[str, ResolvedJudgment],
          human: Mapping[str, ResolvedJudgment]) -> list[Pair]:
    """The pairs of ``rows`` (pool rows) whose query both ``machine`` and ``human`` judge."""
    found = []
    for row in rows:
        query_id = str(row["query_id"])
        if query_id not in machine or query_id not in human:
            continue
        passage = Passage(document=str(row["document"]), start=int(row["start"]),  # type: ignore[call-overload]
                          end=int(row["end"]))  # type: ignore[call-overload]
        by_judge = [s for s in machine[query_id].spans if passage.overlaps(s)]
        by_person = [s for s in human[query_id].spans if passage.overlaps(s)]
        found.append(Pair(query_id, max((s.grade for s in by_judge), default=0),
                          max((s.grade for s in by_person), default=0),
                          {(s.document, s.start, s.end) for s in by_judge} ==
                          {(s.document, s.start, s.end) for s in by_person}))
    return found


def kappa(a: Sequence[int], b: Sequence[int], *, weights: str | None = None) -> float | None:
    """Cohen's kappa of two labelings (``weights="quadratic"`` for the weighted kappa); None when undefined."""
    if not a:
        return None
    # Weighted: every grade from 0 up, so a grade nobody gave still sits at its distance from the others.
    labels = sorted(set(a) | set(b)) if weights is None else list(range(max(max(a), max(b)) + 1))
    index = {label: i for i, label in enumerate(labels)}
    observed = np.zeros((len(labels), len(labels)))
    for x, y in zip(a, b, strict=True):
        observed[index[x], index[y]] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    if weights is None:
        w = 1.0 - np.eye(len(labels))
    else:
        grades = np.array(labels, dtype=float)
        w = (grades[:, None] - grades[None, :]) ** 2
    disagreement = float((w * expected).sum())
    if disagreement == 0.0:
        return None
    return 1.0 - float((w * observed).sum()) / disagreement


@dataclass(frozen=True)
class Agreement:
    """The figures ``judgments review`` and ``judgments agreement`` print."""

    pairs: int
    queries: int
    kappa: float | None
    low: float | None
    high: float | None
    undefined_replicates: int
    replicates: int
    confusion: tuple[tuple[int, int], tuple[int, int]]
    """((judge yes & person yes, judge yes & person no), (judge no & person yes, judge no & person no))."""
    weighted_kappa: float | None
    both_relevant: int
    quotes_moved: float | None


def agreement(found: Sequence[Pair], *, replicates: int = 2000, seed: int = 0) -> Agreement:
    """Kappa, its bootstrap interval over queries, the confusion matrix, weighted kappa and quotes moved."""
    judge = [int(p.judge > 0) for p in found]
    person = [int(p.person > 0) for p in found]
    point = kappa(judge, person)
    by_query: dict[str, list[int]] = {}
    for i, p in enumerate(found):
        by_query.setdefault(p.query_id, []).append(i)
    groups = list(by_query.values())
    rng = np.random.default_rng(seed)
    values, undefined = [], 0
    for _ in range(replicates if groups else 0):
        drawn = [i for g in rng.integers(0, len(groups), size=len(groups)) for i in groups[g]]
        value = kappa([judge[i] for i in drawn], [person[i] for i in drawn])
        if value is None:
            undefined += 1
        else:
            values.append(value)
    low, high = (float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))) if values else (None, None)
    cells = [[0, 0], [0, 0]]
    for j, h in zip(judge, person, strict=True):
        cells[1 - j][1 - h] += 1
    both = [p for p in found if p.judge and p.person]
    moved = sum(not p.same_spans for p in both) / len(both) if both else None
    return Agreement(len(found), len(groups), point, low, high, undefined, replicates,
                     ((cells[0][0], cells[0][1]), (cells[1][0], cells[1][1])),
                     kappa([p.judge for p in found], [p.person for p in found], weights="quadratic"),
                     len(both), moved)


def table(result: Agreement) -> list[str]:
    """The agreement as lines for a terminal (and the closing note of a review)."""
    def shown(value: float | None) -> str:
        return "undefined" if value is None else f"{value:.3f}"

    interval = (f"95% bootstrap interval [{shown(result.low)}, {shown(result.high)}] over {result.queries} queries, "
                f"{result.replicates} replicates" + (f" ({result.undefined_replicates} undefined)"
                                                     if result.undefined_replicates else ""))
    (yy, yn), (ny, nn) = result.confusion
    width = max(len(str(n)) for n in (yy, yn, ny, nn, 6))
    return [
        f"agreement over {result.pairs} pooled pairs of {result.queries} queries (relevant: a gold span overlaps the "
        "passage)",
        f"  Cohen's kappa {shown(result.kappa)}, {interval}",
        f"  {'':<18}{'person: relevant':>{width + 17}}  {'not relevant':>{width + 12}}",
        f"  {'judge: relevant':<18}{yy:>{width + 17}}  {yn:>{width + 12}}",
        f"  {'judge: not':<18}{ny:>{width + 17}}  {nn:>{width + 12}}",
        f"  weighted kappa over grades (quadratic) {shown(result.weighted_kappa)}",
        "  quotes moved: " + ("no pair both call relevant" if result.quotes_moved is None else
                              f"{result.quotes_moved:.1%} of the {result.both_relevant} pairs both call relevant"),
    ]
