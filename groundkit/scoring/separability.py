"""``no_answer.separability``: how well a run's best score tells answerable queries from no_answer ones.

The ADR counts a no_answer query as abstained only when its ranking is empty, and sets no score threshold,
because any threshold is a tuning choice the judgments would then have to defend. That count stays, but a
dense or hybrid retriever always returns something, and a lexical one does too whenever a question shares
a word with the corpus, so on most data every retriever abstains 0 times and the figure tells them apart
by nothing.

Separability asks the threshold-free question instead: pick one answerable and one no_answer query at
random; how likely is the answerable one's top-1 score the higher? That is the area under the ROC curve of
the top-1 score, answerable queries positive and no_answer queries negative. A tie counts one half, and a
query that retrieved nothing scores minus infinity (below any score; two such queries tie). 1.0 means some
threshold would separate the two perfectly, 0.5 that the score says nothing about answerability. It is
defined only when there is at least one query of each kind.

The figure is not a mean over queries, so compare cannot pair it query by query the way it pairs the
other measures; :func:`paired_bootstrap` resamples the queries instead, the same resample for both runs,
answerable and no_answer queries each drawn from their own kind so that every resample has both.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

NAME = "separability"
"""The key of the figure in detail.json's ``no_answer`` block."""

RESAMPLES = 10_000
SEED = 20261204
BLOCK_VALUES = 1 << 22
"""The most resampled counts held at once: the bootstrap runs in blocks of resamples this many values large."""


def _checked(values: Sequence[float]) -> list[float]:
    scores = [float(v) for v in values]
    if any(math.isnan(v) or v == math.inf for v in scores):
        raise ValueError("a top-1 score is NaN or +inf; only finite scores and -inf (nothing retrieved) are ranked")
    return scores


def separability(answerable: Sequence[float], no_answer: Sequence[float]) -> float | None:
    """The AUC of the top-1 scores ``answerable`` (positives) against ``no_answer`` (negatives), ties one half.

    None when either side is empty. Minus infinity is a score like any other: below every finite one. Plain
    Python: the score stage computes it and does not import numpy.
    """
    positives, negatives = _checked(answerable), sorted(_checked(no_answer))
    if not positives or not negatives:
        return None
    # Twice the count of pairs won plus once the pairs tied: a whole number, exact to the division.
    twice = sum(bisect_left(negatives, p) + bisect_right(negatives, p) for p in positives)
    return twice / (2 * len(positives) * len(negatives))


@dataclass(frozen=True)
class PairedSeparability:
    """Separability of two runs over the same queries, and the bootstrap's view of their difference."""

    baseline: float
    candidate: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float

    def as_dict(self) -> dict[str, float | list[float]]:
        return {"baseline": self.baseline, "candidate": self.candidate, "delta": self.delta,
                "ci95": [self.ci_low, self.ci_high], "p_value": self.p_value}


class _Run:
    """One run's scores, prepared so that its AUC under any resample's counts is two sums of cumulative counts."""

    def __init__(self, answerable: Sequence[float], no_answer: Sequence[float]) -> None:
        import numpy as np

        positives, negatives = np.array(_checked(answerable)), np.array(_checked(no_answer))
        self.order = np.argsort(negatives, kind="stable")
        ordered = negatives[self.order]
        # Where each answerable query's score falls among the no_answer scores: below ``below`` of them,
        # tied with the next ``up_to - below``.
        self.below = np.searchsorted(ordered, positives, side="left")
        self.up_to = np.searchsorted(ordered, positives, side="right")

    def auc(self, positive_counts: np.ndarray, negative_counts: np.ndarray) -> np.ndarray:
        """The AUC under each row of counts: how often each query was drawn in that resample."""
        import numpy as np

        rows = negative_counts.shape[0]
        cumulative = np.zeros((rows, negative_counts.shape[1] + 1), dtype=np.int64)
        np.cumsum(negative_counts[:, self.order], axis=1, out=cumulative[:, 1:])
        # Each drawn answerable query beats the drawn no_answer queries below it and ties those level with it.
        twice = cumulative[:, self.below] + cumulative[:, self.up_to]
        total = 2.0 * positive_counts.shape[1] * negative_counts.shape[1]
        return np.einsum("ij,ij->i", positive_counts, twice, dtype=np.float64) / total


def _counts(rng: np.random.Generator, rows: int, size: int) -> np.ndarray:
    """``rows`` resamples of ``size`` items with replacement, as how many times each item was drawn."""
    import numpy as np

    drawn = rng.integers(0, size, size=(rows, size)) + (np.arange(rows) * size)[:, None]
    return np.bincount(drawn.ravel(), minlength=rows * size).reshape(rows, size)


def paired_bootstrap(baseline: tuple[Sequence[float], Sequence[float]],
                     candidate: tuple[Sequence[float], Sequence[float]], *,
                     seed: int = SEED, resamples: int = RESAMPLES) -> PairedSeparability | None:
    """Each run's separability and the 95% percentile interval and two-sided p-value of candidate minus baseline.

    Each side is ``(answerable top-1 scores, no_answer top-1 scores)``, the same queries in the same order in
    both. Every resample draws the answerable queries and the no_answer queries with replacement, each kind
    from its own, and scores both runs on that draw. The p-value is twice the smaller share of resampled
    differences on either side of 0 (at least 0 and at most 0), each count plus one over the resamples plus one,
    capped at 1: the percentile interval inverted, and never 0.
    None when either kind of query is missing.
    """
    import numpy as np

    base, cand = _Run(*baseline), _Run(*candidate)
    positives, negatives = len(baseline[0]), len(baseline[1])
    if (positives, negatives) != (len(candidate[0]), len(candidate[1])):
        raise ValueError("the two runs must hold the same queries")
    base_value, cand_value = separability(*baseline), separability(*candidate)
    if base_value is None or cand_value is None:
        return None
    rng = np.random.default_rng(seed)
    block = max(1, BLOCK_VALUES // (positives + negatives))
    deltas = np.empty(resamples)
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        pos, neg = _counts(rng, rows, positives), _counts(rng, rows, negatives)
        deltas[start:start + rows] = cand.auc(pos, neg) - base.auc(pos, neg)
    low, high = np.quantile(deltas, [0.025, 0.975])
    # Counted as the randomization tests count (the observed difference is one of the draws): never 0.
    crossing = min(int(np.sum(deltas <= 0)), int(np.sum(deltas >= 0)))
    p = min(1.0, 2.0 * (crossing + 1) / (resamples + 1))
    return PairedSeparability(baseline=base_value, candidate=cand_value, delta=cand_value - base_value,
                              ci_low=float(low), ci_high=float(high), p_value=p)
