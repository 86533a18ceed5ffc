"""The intervals that decide a row: one procedure per row, so a mark and its interval cannot disagree.

groundkit's test of a paired difference is the sign-flip randomization test (stats.py). The interval
that decides a row is that same test inverted: the shifts ``theta`` it would not reject, with the same
random signs. Inverting it (rather than deriving a p-value from the bootstrap) keeps the p-value the
one checked against ``scipy.stats.permutation_test`` and gives an interval whose exclusion of 0 *is* the
test's rejection, at every level, so corrected levels cost nothing more.

The inversion is in closed form. Testing a shift ``theta`` flips the signs of ``d_i - theta``; with one
draw's flipped queries F (``|F| > 0``), the flipped mean reaches the observed one exactly when
``theta >= mean(d_i for i in F)``. So each draw gives one *subset mean* ``theta_s``, the one-sided
p-values at ``theta`` are counts of subset means on either side of it, and the set of shifts not
rejected at level a is an interval between two order statistics of the subset means (Hartigan 1969;
the random-subset form is Efron & Tibshirani 1993, ch. 15). A draw that flips nothing counts on both
sides, as the observed signs do.

What the test assumes: under the null hypothesis each query's difference is as likely to have either
sign, i.e. the two runs are exchangeable on each query. For the interval, that each difference minus
the true mean shift is symmetric about 0: a skewed distribution of differences shifts the interval
(not the test of no difference at all, which needs only exchangeability).

Several tests at once (the gated metrics of every candidate) are decided at a corrected level:

* Holm: the compatible simultaneous intervals of Strassburger & Bretz (2008). With R the hypotheses
  Holm rejects out of m: when none or some are rejected, each row not rejected gets its interval at
  level alpha / (m - |R|), which holds 0, and each rejected row only its direction, ``(0, U]`` or
  ``[L, 0)`` with its far bound at the same level; when all are rejected, each interval at alpha / m,
  cut at 0 on the rejected side.
* Benjamini-Hochberg: the false-coverage-rate intervals of Benjamini & Yekutieli (2005): with R rows
  selected out of m, each at level R * q / m (at least q / m, which holds 0 for a row not selected). The
  FCR promise covers the selected rows.
* none: each row at alpha.

With two label sets a directed row is PPI++ (groundkit/reports/compare_ppi.py): its null is a
:class:`NormalNull`, the normal approximation PPI's own interval and p-value come from, inverted the same way
(``delta +- z * se`` at the level the correction gives), so its mark agrees with its interval there too.

A row is significant exactly when its interval excludes 0. Below :data:`MIN_QUERIES` paired queries no
interval is given and nothing is claimed (a sign-flip test on 9 queries cannot reach p < 0.004, and the
symmetry it assumes cannot be checked).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from statistics import NormalDist
from typing import Protocol

import numpy as np

from groundkit.reports.stats import BLOCK_VALUES, POWER, RESAMPLES, SEED, _block, one_blas_thread

MIN_QUERIES = 10
"""Below this many paired queries no significance is claimed."""

TOO_FEW = (f"fewer than {MIN_QUERIES} paired queries: groundkit claims no significance below {MIN_QUERIES} (the "
           "sign-flip test's interval leans on the symmetry of the differences, which so few cannot show)")

TOO_FEW_LABELLED = (f"fewer than {MIN_QUERIES} queries labelled by a person: groundkit claims no significance below "
                    f"{MIN_QUERIES} (PPI's normal interval takes its spread from the person's labels, which so few "
                    "cannot estimate)")
"""The same rule for a PPI row (two label sets): its test rests on the queries a person labelled, not on every
machine-judged query."""


class Null(Protocol):
    """What a row's deciding interval is read from: a test that can be inverted at any level."""

    def p_value(self) -> float: ...

    def interval(self, level: float) -> tuple[float, float]: ...

    def lower_bound(self, level: float) -> float: ...


@dataclass(frozen=True)
class NormalNull:
    """A normal-approximation test of a mean difference (PPI++'s): ``estimate`` with standard error ``se``.

    Its p-value and intervals are the same z-test, so an interval at level a excludes 0 exactly when p < a.
    """

    estimate: float
    se: float

    def p_value(self) -> float:
        if self.se <= 0:
            return 1.0 if self.estimate == 0 else 0.0
        return min(1.0, 2 * (1 - NormalDist().cdf(abs(self.estimate) / self.se)))

    def interval(self, level: float) -> tuple[float, float]:
        half = NormalDist().inv_cdf(1 - level / 2) * self.se
        return (self.estimate - half, self.estimate + half)

    def lower_bound(self, level: float) -> float:
        return self.estimate - NormalDist().inv_cdf(1 - level) * self.se


@dataclass(frozen=True)
class FlipNull:
    """One row's subset means under the shared random signs: what its p-value and intervals are read from.

    Attributes:
        means: The subset means ``theta_s``, sorted, one per draw that flipped at least one query.
        sums: The same draws' flipped sums in whole-number units (exact), unsorted, for the p-value at 0.
        both: Draws counted on both sides at every shift: the observed signs, and any draw flipping nothing.
        total: The number of draws, the observed signs included (the p-values' denominator).
    """

    means: np.ndarray
    sums: np.ndarray
    both: int
    total: int

    def p_value(self) -> float:
        """The two-sided p-value of no difference, as scipy's ``permutation_test`` counts it."""
        less = (self.both + int(np.count_nonzero(self.sums >= 0))) / self.total
        greater = (self.both + int(np.count_nonzero(self.sums <= 0))) / self.total
        return min(1.0, 2 * min(less, greater))

    def _rank(self, tail: float) -> int:
        """How many subset means a bound at one-sided level ``tail`` leaves outside, plus one."""
        return math.ceil(tail * self.total - self.both - 1e-9 * self.total)

    def interval(self, level: float) -> tuple[float, float]:
        """The shifts the two-sided test at ``level`` does not reject: ``[lower, upper]``, inf when unbounded."""
        k = self._rank(level / 2)
        if k <= 0:
            return (-math.inf, math.inf)
        return (float(self.means[k - 1]), float(self.means[-k]))

    def lower_bound(self, level: float) -> float:
        """The one-sided (1 - level) lower bound: the smallest shift the upper-tail test does not reject."""
        k = self._rank(level)
        return -math.inf if k <= 0 else float(self.means[k - 1])


@one_blas_thread
def flip_nulls(numerators: np.ndarray, scales: np.ndarray, *, seed: int = SEED, resamples: int = RESAMPLES,
               block_values: int = BLOCK_VALUES) -> list[FlipNull]:
    """A :class:`FlipNull` per row of ``numerators / scales`` (rows, queries), from scipy's paired draws.

    With ``2**queries <= resamples`` every sign pattern is enumerated (as scipy does); otherwise the draws
    are ``stats.sign_flip_null``'s: one 32-bit word per resample and query, flipped when its low bit is 0.
    """
    rows, queries = numerators.shape
    values = np.ascontiguousarray(numerators.T, dtype=np.float64)
    if 2**queries <= resamples:
        patterns = np.array(list(product((0.0, 1.0), repeat=queries)))  # 1: flipped
        flipped = patterns[patterns.sum(axis=1) > 0]
        sums, counts, both, total = flipped @ values, flipped.sum(axis=1), 1, 2**queries
    else:
        rng = np.random.default_rng(seed)
        sums = np.empty((resamples, rows))
        counts = np.empty(resamples)
        step = _block(queries, resamples, block_values)
        for start in range(0, resamples, step):
            size = min(step, resamples - start)
            words = rng.integers(0, 2**32, (size, queries), dtype=np.uint32)
            flips = 1.0 - (words & 1).astype(np.float64)
            sums[start:start + size] = flips @ values
            counts[start:start + size] = flips.sum(axis=1)
        some = counts > 0
        both, total = 1 + int(np.count_nonzero(~some)), resamples + 1
        sums, counts = sums[some], counts[some]
    result = []
    for j in range(rows):
        column = np.ascontiguousarray(sums[:, j])
        result.append(FlipNull(np.sort(column / (counts * scales[j])), column, both, total))
    return result


# --- the level each row is decided at -----------------------------------------------------------


@dataclass(frozen=True)
class Decided:
    """A row's deciding interval: bounds, level, which ends are open (only ever at 0), and the mark."""

    low: float
    high: float
    level: float
    open_low: bool = False
    open_high: bool = False

    @property
    def significant(self) -> bool:
        """The interval excludes 0."""
        above = self.low > 0 or (self.low == 0 and self.open_low)
        below = self.high < 0 or (self.high == 0 and self.open_high)
        return above or below

    @property
    def bounds(self) -> str:
        """The brackets: ``[]`` closed, ``(]`` open at its lower end (0), ``[)`` at its upper end."""
        return ("(" if self.open_low else "[") + (")" if self.open_high else "]")


def _excludes(interval: tuple[float, float]) -> bool:
    return interval[0] > 0 or interval[1] < 0


def decide_family(nulls: Sequence[Null | None], deltas: Sequence[float | None], alpha: float,
                  correction: str) -> list[Decided | None]:
    """Each row's deciding interval when ``nulls`` are tested together under ``correction`` (holm, bh, none).

    None (no test: too few queries) is not counted among the m tests.
    """
    tested = [j for j, n in enumerate(nulls) if n is not None]
    m = len(tested)
    result: list[Decided | None] = [None] * len(nulls)
    if not m:
        return result
    if correction == "none":
        for j in tested:
            result[j] = Decided(*nulls[j].interval(alpha), level=alpha)  # type: ignore[union-attr]
        return result
    if correction == "bh":
        p = sorted(nulls[j].p_value() for j in tested)  # type: ignore[union-attr]
        selected = max((k + 1 for k in range(m) if p[k] < (k + 1) * alpha / m), default=0)
        level = max(selected, 1) * alpha / m
        for j in tested:
            result[j] = Decided(*nulls[j].interval(level), level=level)  # type: ignore[union-attr]
        return result
    # Holm, stepped down on the intervals themselves: the row with the smallest p-value first.
    order = sorted(tested, key=lambda j: (nulls[j].p_value(), j))  # type: ignore[union-attr]
    rejected = 0
    for j in order:
        if not _excludes(nulls[j].interval(alpha / (m - rejected))):  # type: ignore[union-attr]
            break
        rejected += 1
    if rejected == m:
        level = alpha / m
        for j in tested:
            low, high = nulls[j].interval(level)  # type: ignore[union-attr]
            positive = (deltas[j] or 0) > 0
            if positive and low <= 0:
                result[j] = Decided(0.0, high, level, open_low=True)
            elif not positive and high >= 0:
                result[j] = Decided(low, 0.0, level, open_high=True)
            else:
                result[j] = Decided(low, high, level)
        return result
    level = alpha / (m - rejected)
    for rank, j in enumerate(order):
        low, high = nulls[j].interval(level)  # type: ignore[union-attr]
        if rank < rejected:
            result[j] = Decided(0.0, high, level, open_low=True) if low > 0 else Decided(low, 0.0, level,
                                                                                        open_high=True)
        else:
            result[j] = Decided(low, high, level)
    return result


# --- non-inferiority ----------------------------------------------------------------------------


def queries_for_non_inferiority(sd: float, margin: float, alpha: float, power: float = POWER, *,
                                normal: bool = False) -> int | None:
    """The queries at which a candidate truly equal to the baseline passes ``margin`` with ``power``.

    The gate passes when the one-sided (1 - alpha) lower bound of the mean difference, about
    ``mean - t_a * s / sqrt(n)``, lies above ``-margin``; with a true mean of 0 that happens with
    probability ``power`` when ``n = ((t_a + t_b) * sd / margin)**2``, the t quantiles at n - 1 degrees of
    freedom (the SD is estimated too), solved by iteration from the normal ``((z_a + z_b) * sd / margin)**2``
    and rounded up (Chow, Shao & Wang 2008, sec. 3.1). ``normal``: the bound is a normal one (a PPI row's,
    ``mean - z_a * se``), so the normal figure is the answer, with ``sd`` PPI's standard error times sqrt(n),
    n the queries a person labelled. Never below :data:`MIN_QUERIES`; None when the differences have no spread.
    """
    if sd <= 0:
        return None
    norm = NormalDist()
    n = max(MIN_QUERIES, math.ceil(((norm.inv_cdf(1 - alpha) + norm.inv_cdf(power)) * sd / margin) ** 2))
    if normal:
        return n
    from scipy.stats import t as student

    for _ in range(50):
        df = n - 1
        following = max(MIN_QUERIES, math.ceil(((student.ppf(1 - alpha, df) + student.ppf(power, df)) * sd
                                                / margin) ** 2))
        if following == n:
            break
        n = following
    return n


# --- the resampling ----------------------------------------------------------------------------


@one_blas_thread
def paired_tests(baseline: np.ndarray, candidate: np.ndarray, *, seed: int = SEED, resamples: int = RESAMPLES,
                 block_values: int = BLOCK_VALUES) -> list[tuple[float | None, float | None, float | None,
                                                                  FlipNull | None]]:
    """Per row of two (rows, queries) arrays: the raw 95% percentile-bootstrap interval, the sign-flip p-value,
    and the :class:`FlipNull` every deciding interval is read from (None below :data:`MIN_QUERIES`).

    The bootstrap and the p-value are what ``stats.paired_stats_many`` gives, from the same draws.
    """
    from concurrent.futures import ThreadPoolExecutor

    from groundkit.reports.stats import _bootstrap_intervals, exact_differences

    baseline = np.ascontiguousarray(baseline, dtype=np.float64)
    candidate = np.ascontiguousarray(candidate, dtype=np.float64)
    rows, queries = baseline.shape
    if queries < 2:
        return [(None, None, None, None)] * rows
    still = FlipNull(np.zeros(resamples), np.zeros(resamples), 1, resamples + 1)  # no difference: p 1, [0, 0]
    results: list[tuple[float | None, float | None, float | None, FlipNull | None]] = [
        (0.0, 0.0, 1.0, still if queries >= MIN_QUERIES else None)] * rows
    moved = [j for j in range(rows) if np.any(candidate[j] != baseline[j])]
    if not moved:
        return results
    numerators, scales = exact_differences(baseline[moved], candidate[moved])
    # The two resamplings draw from generators of their own, and numpy's draws and BLAS release the GIL.
    with ThreadPoolExecutor(max_workers=2) as pool:
        bootstrap = pool.submit(_bootstrap_intervals, numerators, scales, seed, resamples, block_values)
        flips = pool.submit(flip_nulls, numerators, scales, seed=seed, resamples=resamples,
                            block_values=block_values)
        intervals, nulls = bootstrap.result(), flips.result()
    for k, j in enumerate(moved):
        null = nulls[k]
        results[j] = (float(intervals[k, 0]), float(intervals[k, 1]), null.p_value(),
                      null if queries >= MIN_QUERIES else None)
    return results


# --- ties with the best (sweeps) ----------------------------------------------------------------

MCB_RESAMPLES = 2000
"""Bootstrap draws for the simultaneous constant of :func:`tied_with_best`."""


@dataclass(frozen=True)
class Ties:
    """The configurations statistically tied with the best on one metric.

    Attributes:
        best: The index of the highest mean.
        tied: Every index not significantly below some other configuration, the best included, in index order.
        constant: The simultaneous critical value every paired difference is held to.
        detectable: The paired difference the comparison finds with 80% power at that constant (typical SE).
    """

    best: int
    tied: list[int]
    constant: float
    detectable: float | None


@one_blas_thread
def tied_with_best(values: np.ndarray, alpha: float, *, seed: int = SEED,
                   resamples: int = MCB_RESAMPLES) -> Ties:
    """Hsu's multiple comparison with the best (Hsu 1996, ch. 4) over (configurations, queries) paired values.

    Configuration i is tied with the best when no other is significantly above it: for every j,
    ``mean_j - mean_i <= c * se_ij``, with ``se_ij`` the standard error of the paired difference. Hsu's
    constrained MCB takes c from a one-sided Dunnett distribution; that leaves the worst of several equal
    configurations out in about one sweep in five (K = 5). Here c is the (1 - alpha) quantile of the largest
    studentised paired difference over every pair, resampled under the null (bootstrap-t: each draw
    studentised by its own standard errors) (each configuration's values
    re-centred at its mean, queries resampled together, so their correlation is kept): the MCB inference
    deduced from all pairwise comparisons (Hsu 1996, sec. 4.1.2), more conservative, and such that a sweep of
    configurations that differ only by noise is all tied in at least 1 - alpha of sweeps.
    """
    configs, queries = values.shape
    means = values.mean(axis=1)
    best = int(np.argmax(means))  # the first of equal means: a stable, documented tie order
    if configs == 1 or queries < MIN_QUERIES:
        return Ties(best, list(range(configs)), math.inf, None)
    pairs = values[:, None, :] - values[None, :, :]  # (i, j, queries): i minus j
    se = pairs.std(axis=2, ddof=1) / math.sqrt(queries)
    centred = values - means[:, None]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, queries, (resamples, queries))
    counts = np.zeros((resamples, queries))
    np.add.at(counts, (np.repeat(np.arange(resamples), queries), picks.ravel()), 1.0)
    # Each draw studentised by its own standard errors (bootstrap-t): the fixed ones understate the tail.
    centred_pairs = (centred[:, None, :] - centred[None, :, :]).reshape(configs * configs, queries)
    first = counts @ centred_pairs.T / queries  # (resamples, pairs): mean of i minus j
    second = counts @ (centred_pairs**2).T / queries
    spread = np.sqrt(np.maximum(second - first**2, 0.0) / (queries - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        studentised = np.where(spread > 0, -first / np.where(spread > 0, spread, 1.0), 0.0)  # j above i
    constant = float(np.quantile(studentised.max(axis=1), 1 - alpha))
    tied = []
    for i in range(configs):
        above = means - means[i]  # how far each j lies above i
        beaten = (above > constant * se[i]) & ((se[i] > 0) | (above > 0))
        beaten[i] = False
        if not beaten.any():
            tied.append(i)
    off = se[~np.eye(configs, dtype=bool)]
    typical = float(np.median(off)) if off.size else 0.0
    detectable = (constant + NormalDist().inv_cdf(POWER)) * typical if typical > 0 else None
    return Ties(best, tied, constant, detectable)
