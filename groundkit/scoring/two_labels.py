"""A run scored under two label sets: the PPI++ estimate of each metric, and what stands beside it.

With ``corpus.machine_judgments`` a judge labelled N + n queries and a person n of them. The estimand of
each directed metric is its mean over every machine-judged query under the person's labels, a query with
nothing relevant scoring 0 (a plain mean, unlike the answerable-only figures, which count answerable
queries only). It is estimated by PPI++ (groundkit/scoring/ppi.py) from the person's values on the n
queries they labelled and the judge's on all of them. Beside it: ppi_py's classical interval on the
person's n alone, the judge's mean over every query (biased by the judge's errors, and marked so), n, N,
lambda, and the ratio of the interval widths, PPI against the person alone.

The intervals assume the person's queries are a uniform random sample of the machine-judged ones, which
``groundkit judgments sample`` draws; the normal approximation is weak with few of them (at 50, a 95%
interval of a lumpy metric covers about 92%: BENCHMARKS.md section 11).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from groundkit.corpus.judgments import Category
from groundkit.scoring.ppi import MeanEstimates, classical_mean, ppi_mean

if TYPE_CHECKING:
    from groundkit.corpus.passage import Excerpt
    from groundkit.corpus.spans import JudgedPassage, ResolvedJudgment
    from groundkit.scoring.schema import PerQuery, StageResult

ESTIMAND = ("mean over every machine-judged query of the metric under the person's labels, a query with "
            "nothing relevant scoring 0; PPI++ from the person's sample and the judge's labels")
MIN_LABELLED = 30
"""Below this many queries labelled by a person, the output warns that the normal approximation is weak."""
POOR_AGREEMENT = 0.5
"""A judge whose per-query values correlate below this with the person's is named as agreeing poorly."""


@dataclass(frozen=True)
class LabelSets:
    """Each query's directed metrics under both label sets, one row per machine-judged query.

    ``machine`` has the judge's values (0 where the judge found nothing relevant), ``human`` the person's,
    NaN on every query the person did not label.
    """

    names: list[str]
    machine: np.ndarray
    human: np.ndarray

    @property
    def labelled(self) -> np.ndarray:
        return ~np.isnan(self.human[:, 0]) if self.names else np.zeros(self.human.shape[0], dtype=bool)

    @classmethod
    def from_per_query(cls, table: PerQuery) -> LabelSets | None:
        """From per_query.csv as read; None when it has no ``human.`` columns (one label set)."""
        if table.human_values is None:
            return None
        columns = [table.metric_names.index(name) for name in table.human_names]
        machine = np.nan_to_num(table.values[:, columns], nan=0.0)  # no_answer rows: nothing relevant, 0
        return cls(names=list(table.human_names), machine=machine, human=table.human_values)

    @classmethod
    def from_result(cls, result: StageResult) -> LabelSets | None:
        """From a scored run; None when it was scored under one label set."""
        names = result.human_measures
        if names is None:
            return None
        machine = np.array([[q.metrics[m] if q.category is not Category.NO_ANSWER else 0.0 for m in names]
                            for q in result.queries], dtype=np.float64).reshape(len(result.queries), len(names))
        human = np.array([[q.human_metrics[m] if q.human_metrics is not None else math.nan for m in names]
                          for q in result.queries], dtype=np.float64).reshape(len(result.queries), len(names))
        return cls(names=list(names), machine=machine, human=human)


def _interval(estimates: MeanEstimates, j: int) -> dict[str, float]:
    row = estimates.row(j)
    return {"estimate": row.estimate, "ci_low": row.ci_low, "ci_high": row.ci_high}


def _correlation(a: np.ndarray, b: np.ndarray) -> float | None:
    """Pearson's r, None where either side does not vary (the judge's values tell nothing then)."""
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def estimate(sets: LabelSets, *, drawn: bool | None = None) -> dict[str, Any]:
    """The ``ppi`` block of detail.json: every directed metric's estimate and what stands beside it.

    ``drawn`` says whether the person's judgments carry the record of ``groundkit judgments sample``
    (None: unknown, no warning).
    """
    mask = sets.labelled
    n, N = int(mask.sum()), int((~mask).sum())
    block: dict[str, Any] = {"estimand": ESTIMAND, "n": n, "N": N, "metrics": {}, "warnings": []}
    warnings: list[str] = block["warnings"]
    if drawn is False:
        warnings.append("the person's judgments carry no sample record (they were not drawn by groundkit "
                        "judgments sample): the interval assumes a uniform random sample of the machine-judged "
                        "queries, and these were not drawn as one")
    if n < 2:
        warnings.append(f"{n} machine-judged queries have a person's label: an interval needs at least 2; "
                        "draw a sample with groundkit judgments sample and label it")
        return block
    if n < MIN_LABELLED:
        warnings.append(f"only {n} machine-judged queries have a person's label: with fewer than {MIN_LABELLED} "
                        "the normal approximation behind the intervals is weak")
    Y, Yhat = sets.human[mask].T, sets.machine[mask].T
    human_only = classical_mean(Y)
    # Every query labelled: the person's mean is the estimand itself, and PPI has nothing to add.
    ppi = ppi_mean(Y, Yhat, sets.machine[~mask].T) if N else human_only
    poor: list[str] = []
    for j, name in enumerate(sets.names):
        row = ppi.row(j)
        person = human_only.row(j)
        r = _correlation(Y[j], Yhat[j])
        block["metrics"][name] = {
            **_interval(ppi, j), "std_error": row.std_error, "lambda": row.lam,
            "human_only": _interval(human_only, j),
            "machine_only": {"mean": float(sets.machine[:, j].mean()), "biased": True},
            "width_ratio": row.width / person.width if person.width > 0 else None,
            "correlation": r,
        }
        if r is None or r < POOR_AGREEMENT:
            poor.append(f"{name} ({'its values do not vary' if r is None else f'correlation {r:.2f}'})")
    if poor:  # one line, however many metrics: a reader wants the names, not a wall of repeats
        warnings.append(f"the judge agrees poorly with the person on the {n} labelled queries for "
                        f"{', '.join(poor)}: those estimates stay valid, their intervals no narrower than the "
                        "person's alone")
    return block


def judged_at(machine: Sequence[ResolvedJudgment], rankings: Mapping[str, Sequence[Excerpt]],
              pool: Sequence[JudgedPassage], ks: Sequence[int]) -> dict[str, float]:
    """judged@k under the judge's labels, for each k of ``ks``: over the machine-judged queries that retrieved
    anything, the mean share of the top k passages (all, if fewer) the judge saw: lying inside a passage of the
    query's pool, or overlapping one of its gold spans (ir_measures' ``Judged@k``, with a passage judged when the
    judge read its characters). A passage it never saw counts as not relevant under both label sets, so a figure
    below 1 is a hole PPI cannot correct.
    """
    seen: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for row in pool:
        seen.setdefault((row.query_id, row.document), []).append((row.start, row.end))
    shares: dict[int, list[float]] = {k: [] for k in ks}
    for judgment in machine:
        ranked = rankings.get(judgment.query_id, ())
        if not ranked:
            continue
        judged = [any(start <= p.start and p.end <= end for start, end in seen.get((judgment.query_id, p.document), ()))
                  or any(p.overlaps(span) for span in judgment.spans) for p in ranked[:max(ks)]]
        for k in ks:
            top = judged[:k]
            shares[k].append(sum(top) / len(top))
    # Keyed by the cut-off alone: judged@k is not a measure of the registry, and no name is built for it here.
    return {str(k): sum(v) / len(v) for k, v in shares.items() if v}


def holes(judged: Mapping[str, float] | None) -> str | None:
    """The warning when the run ranked passages the judge never saw (judged@k below 1), or when it is unknown."""
    if judged is None:
        return ("no pool lies beside the machine judgments (NAME.pool.jsonl, which groundkit judgments judge "
                "writes): judged@k is unknown, so passages the judge never saw cannot be told from those it "
                "found not relevant")
    short = {name: share for name, share in judged.items() if share < 1}
    if not short:
        return None
    shown = ", ".join(f"{share:.4f} of the top {k}" for k, share in short.items())
    return (f"the run ranks passages the judge never saw ({shown} under the judge's labels): they count as not "
            "relevant under both label sets, which PPI does not correct; judge this run's pool too (groundkit "
            "judgments judge --run RESULTS ..., with a --depth that covers these cut-offs)")


def headline(block: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """metrics.json under two label sets: each headline metric's PPI estimate and interval (what ``dvc metrics
    diff`` shows), under ``ppi`` so it is never read as an answerable-only figure."""
    return {"ppi": {name: {k: block["metrics"][name][k] for k in ("estimate", "ci_low", "ci_high")}
                    for name in names if name in block["metrics"]}}
