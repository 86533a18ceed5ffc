"""The statistics of ``groundkit compare``: paired intervals and tests, corrections, effect sizes, power.

Every comparison here is paired: both runs score the same queries, so each query gives one
difference ``d = candidate - baseline`` and everything is computed over those differences.

* Interval: 95% percentile bootstrap of the mean difference (Efron & Tibshirani 1993, ch. 13),
  ``RESAMPLES`` resamples of the queries with replacement, fixed seed.
* p-value: two-sided paired randomization test (Smucker, Allan & Carterette 2007): under the null
  hypothesis the two runs are exchangeable on each query, so each difference's sign is flipped at
  random, ``RESAMPLES`` times, fixed seed; with ``2**n <= RESAMPLES`` every sign pattern is enumerated.
* Correction for many tests: Holm's step-down method (Holm 1979; controls the family-wise error
  rate) or Benjamini-Hochberg's step-up method (Benjamini & Hochberg 1995; controls the false
  discovery rate), over every candidate and gated metric of one report.
* Effect size: Cohen's d_z (Cohen 1988), the mean difference over the standard deviation of the
  differences (ddof 1); wins, ties and losses count the queries whose difference is >0, 0, <0.
* Minimum detectable effect: see :func:`minimum_detectable_effect`.

The resamples use the random numbers ``scipy.stats.bootstrap`` and ``scipy.stats.permutation_test``
draw from the same seeded generator (the same query indices, the same sign bits), but a resample's
mean is a matrix product (resample counts or sign bits times the differences) over all metrics and
candidates at once, block by block, so time grows with queries x resamples and barely with the
number of rows, and memory stays bounded at any number of queries. Differences written with a fixed
number of decimals (per_query.csv keeps six) are scaled to whole numbers first, so the sums are
exact whatever the order of addition or the BLAS library: the results are the same on every
machine and agree with scipy's to rounding (tests/reports/test_stats.py).
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from statistics import NormalDist
from typing import Any, ParamSpec, TypeVar

import numpy as np

RESAMPLES = 10_000
SEED = 20261202
POWER = 0.8
# Values drawn per block of resamples (queries x resamples): 4 Mi values are 32 MiB as int64 or
# float64, so a block's draws and its counts stay near 100 MiB at any number of queries.
BLOCK_VALUES = 1 << 22
# Decimal places tried when looking for whole-number differences (per_query.csv writes six).
MAX_DECIMALS = 9
# Sums of whole numbers up to this size are exact in float64 (2**53, with room for the doubling
# of the sign-flip sum).
EXACT_LIMIT = 2.0**52

CORRECTIONS = {
    "holm": "Holm's step-down method (family-wise error rate)",
    "bh": "Benjamini-Hochberg's step-up method (false discovery rate)",
    "none": "no correction",
}

Interval = tuple[float | None, float | None, float | None]


_P = ParamSpec("_P")
_R = TypeVar("_R")


def one_blas_thread(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``function`` with the BLAS library on one thread.

    The resampling's matrix products are small (a block of resamples times the rows) between draws and counts
    that numpy does on one core, and the bootstrap and the sign flips already run side by side. OpenBLAS's own
    threads only spin between the products: on 100,000 queries they took ``groundkit compare`` from 18.5 s to
    22.4 s of wall time and from 29 s to 43 s of CPU (BENCHMARKS.md section 6).

    OpenBLAS keeps one pool for the process, and threadpoolctl lets one thread at a time set it: the call sets
    it to one in the thread that makes it and puts back what it found when it returns. The resampling's own
    threads, started inside the call, find one thread and leave it so. A program that calls the resampling
    from several threads of its own at once gets the results it would get alone (the sums are exact); only
    the number of BLAS threads between the calls is then whatever the last call to return found.
    """

    @functools.wraps(function)
    def limited(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with _blas_libraries().limit(limits=1, user_api="blas"):
            return function(*args, **kwargs)

    return limited


_found_blas: tuple[int, Any] | None = None


def _blas_libraries() -> Any:
    """The loaded BLAS libraries, looked up again only after a module was imported.

    Looking them up walks every shared library of the process (about a millisecond), and the tests and sweeps
    call the resampling thousands of times. A library is loaded by an import, though: numpy's OpenBLAS first,
    scipy's own when scipy.stats or scipy.linalg is imported, perhaps by the resampling itself. Found once and
    kept, the lookup missed such a library, and its threads kept their number.
    """
    global _found_blas
    modules = len(sys.modules)
    if _found_blas is None or _found_blas[0] != modules:
        from threadpoolctl import ThreadpoolController

        _found_blas = (len(sys.modules), ThreadpoolController())
    return _found_blas[1]


def _block(queries: int, resamples: int, block_values: int) -> int:
    """Resamples per block: at most ``block_values`` values, so memory does not grow with the queries."""
    return max(1, min(resamples, block_values // max(queries, 1)))


def _whole(values: np.ndarray, scale: float) -> np.ndarray | None:
    """``values * scale`` rounded, when every value is that whole number to float64 precision."""
    scaled = values * scale
    rounded = np.rint(scaled)
    if np.all(np.abs(scaled - rounded) <= 1e-12 * np.maximum(1.0, np.abs(scaled))):
        return rounded
    return None


def exact_differences(baseline: np.ndarray, candidate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The differences as whole numbers where possible: ``(numerators, scale)``, ``d = numerators / scale``.

    A row whose values all have at most ``MAX_DECIMALS`` decimals becomes whole numbers times
    ``10**-k`` (the smallest such k), so sums of them are exact in any order as long as they stay
    below ``EXACT_LIMIT``; any other row keeps its float differences and a scale of 1.
    """
    rows, queries = baseline.shape
    numerators = candidate - baseline
    scales = np.ones(rows)
    for j in range(rows):
        for decimals in range(MAX_DECIMALS + 1):
            scale = 10.0**decimals
            before, after = _whole(baseline[j], scale), _whole(candidate[j], scale)
            if before is None or after is None:
                continue
            whole = after - before
            if queries * float(np.max(np.abs(whole), initial=0.0)) <= EXACT_LIMIT:
                numerators[j], scales[j] = whole, scale
            break
    return numerators, scales


def _bootstrap_intervals(numerators: np.ndarray, scales: np.ndarray, seed: int, resamples: int,
                         block_values: int) -> np.ndarray:
    """Percentile 95% intervals of the mean, one row per row of ``numerators / scales``.

    scipy draws a (resamples, queries) array of indices in one call; drawing it in consecutive
    blocks from the same generator yields the same indices. A resample's sum is its counts of each
    query times the values: one matrix product serves every row.
    """
    rows, queries = numerators.shape
    rng = np.random.default_rng(seed)
    values = np.ascontiguousarray(numerators.T)
    distribution = np.empty((resamples, rows))
    step = _block(queries, resamples, block_values)
    for start in range(0, resamples, step):
        size = min(step, resamples - start)
        picks = rng.integers(0, queries, (size, queries))
        # Each resample's counts in one bincount: resample r's picks shifted into bins [r * queries, (r + 1) * queries).
        picks += np.arange(0, size * queries, queries)[:, None]
        counts = np.bincount(picks.ravel(), minlength=size * queries).reshape(size, queries).astype(np.float64)
        distribution[start:start + size] = counts @ values
    distribution /= scales * queries
    alpha = (1 - 0.95) / 2
    return _linear_quantiles(distribution, np.array([alpha, 1 - alpha]))


def _linear_quantiles(columns: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Each column's quantiles at ``levels``, (columns, levels): what ``scipy.stats.quantile`` gives.

    Hyndman and Fan's definition 7 ("linear", also numpy's default), written with scipy's float
    operations in scipy's order, so the result is the same bits (tests/reports/test_stats.py
    checks). numpy's own ``np.quantile`` interpolates differently and differs in the last bits;
    importing ``scipy.stats`` for this one function costs most of a second, once per report.
    """
    ordered = np.sort(columns, axis=0)
    n = ordered.shape[0]
    jg = levels * n + (1 - levels)
    j = np.clip(jg // 1 - 1, 0.0, n - 1).astype(np.int64)
    jp1 = np.clip(jg // 1, 0.0, n - 1).astype(np.int64)
    g = jg % 1
    g[jg // 1 - 1 < 0] = 0
    return ((1 - g) * ordered[j].T + g * ordered[jp1].T)


@one_blas_thread
def mean_intervals(values: np.ndarray, *, seed: int = SEED, resamples: int = RESAMPLES,
                   block_values: int = BLOCK_VALUES) -> list[tuple[float, float] | tuple[None, None]]:
    """Percentile-bootstrap 95% intervals of each row's mean, for (rows, queries) values.

    The intervals :func:`paired_stats_many` gives against a baseline of zeros, without its
    p-values, which a report of one run does not show.
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    rows, queries = values.shape
    if queries < 2:
        return [(None, None)] * rows
    results: list[tuple[float, float] | tuple[None, None]] = [(0.0, 0.0)] * rows
    moved = [j for j in range(rows) if np.any(values[j] != 0)]
    if moved:
        numerators, scales = exact_differences(np.zeros_like(values[moved]), values[moved])
        intervals = _bootstrap_intervals(numerators, scales, seed, resamples, block_values)
        for k, j in enumerate(moved):
            results[j] = (float(intervals[k, 0]), float(intervals[k, 1]))
    return results


@one_blas_thread
def sign_flip_null(numerators: np.ndarray, scales: np.ndarray, seed: int, resamples: int,
                   block_values: int) -> np.ndarray:
    """The mean difference under random sign flips, (rows, resamples), with scipy's paired draws.

    For paired samples ``scipy.stats.permutation_test`` swaps each query's two values at random: one
    32-bit draw per resample and query, swapped (the difference's sign flipped) when its lowest bit
    is 0. With ``b`` those bits as 0/1, the flipped sum is ``2 * (b @ d) - sum(d)``.
    """
    rows, queries = numerators.shape
    rng = np.random.default_rng(seed)
    values = np.ascontiguousarray(numerators.T)
    total = numerators.sum(axis=-1)
    null = np.empty((resamples, rows))
    step = _block(queries, resamples, block_values)
    for start in range(0, resamples, step):
        size = min(step, resamples - start)
        words = rng.integers(0, 2**32, (size, queries), dtype=np.uint32)
        kept = (words & 1).astype(np.float64)  # low bit 1: not swapped, the sign stays +
        null[start:start + size] = kept @ values
    null *= 2
    null -= total
    null /= scales * queries
    return np.ascontiguousarray(null.T)


def _randomization_p_values(numerators: np.ndarray, scales: np.ndarray, seed: int, resamples: int,
                            block_values: int) -> np.ndarray:
    """Two-sided sign-flip p-values, one per row, counted as ``scipy.stats.permutation_test`` counts.

    A resample within 100 ulp of the observed mean counts as reaching it, and one is added to the
    count and to the number of resamples (the observed signs are one possible draw).
    """
    null = sign_flip_null(numerators, scales, seed, resamples, block_values)
    observed = numerators.sum(axis=-1) / (scales * numerators.shape[1])
    gamma = np.abs(np.finfo(np.float64).eps * 100 * observed)[:, None]
    less = (np.count_nonzero(null <= observed[:, None] + gamma, axis=-1) + 1) / (resamples + 1)
    greater = (np.count_nonzero(null >= observed[:, None] - gamma, axis=-1) + 1) / (resamples + 1)
    return np.clip(np.minimum(less, greater) * 2, 0.0, 1.0)


def _exact_p_value(baseline: np.ndarray, candidate: np.ndarray, seed: int, resamples: int) -> float:
    """scipy enumerates every sign pattern when there are no more than ``resamples`` (few queries)."""
    from scipy import stats

    return float(stats.permutation_test(
        (candidate, baseline), lambda c, b, axis: np.mean(c - b, axis=axis), permutation_type="samples",
        vectorized=True, n_resamples=resamples, alternative="two-sided", rng=np.random.default_rng(seed),
    ).pvalue)


@one_blas_thread
def paired_stats_many(
    baseline: np.ndarray, candidate: np.ndarray, *, seed: int = SEED, resamples: int = RESAMPLES,
    block_values: int = BLOCK_VALUES,
) -> list[Interval]:
    """``(ci_low, ci_high, p_value)`` per row of two (rows, queries) arrays paired column by column.

    Each row gets what :func:`paired_stats` gives it alone; the random draws are shared between rows.
    ``block_values`` bounds the values drawn at once; it changes memory and speed, never the result.
    """
    baseline = np.ascontiguousarray(baseline, dtype=np.float64)
    candidate = np.ascontiguousarray(candidate, dtype=np.float64)
    rows, queries = baseline.shape
    if queries < 2:
        return [(None, None, None)] * rows
    results: list[Interval] = [(0.0, 0.0, 1.0)] * rows
    moved = [j for j in range(rows) if np.any(candidate[j] != baseline[j])]
    if not moved:
        return results
    numerators, scales = exact_differences(baseline[moved], candidate[moved])
    if 2**queries <= resamples:
        intervals = _bootstrap_intervals(numerators, scales, seed, resamples, block_values)
        p_values = [_exact_p_value(baseline[j], candidate[j], seed, resamples) for j in moved]
    else:
        # The two resamplings draw from generators of their own, and numpy's draws and BLAS release the
        # GIL, so they overlap on two cores; the sums are exact, so the results do not depend on it.
        with ThreadPoolExecutor(max_workers=2) as pool:
            bootstrap = pool.submit(_bootstrap_intervals, numerators, scales, seed, resamples, block_values)
            flips = pool.submit(_randomization_p_values, numerators, scales, seed, resamples, block_values)
            intervals = bootstrap.result()
            p_values = [float(p) for p in flips.result()]
    for k, j in enumerate(moved):
        results[j] = (float(intervals[k, 0]), float(intervals[k, 1]), p_values[k])
    return results


def paired_stats(baseline: np.ndarray, candidate: np.ndarray, *, seed: int = SEED,
                 resamples: int = RESAMPLES) -> Interval:
    """Return ``(ci_low, ci_high, p_value)`` for the mean of ``candidate - baseline``.

    A percentile bootstrap over queries for the 95% interval, and a two-sided paired randomization
    (sign-flip) test for the p-value; both seeded, so deterministic. All three are None with fewer
    than two queries, where neither is defined.
    """
    pair = np.stack((np.asarray(baseline, dtype=np.float64), np.asarray(candidate, dtype=np.float64)))
    return paired_stats_many(pair[:1], pair[1:], seed=seed, resamples=resamples)[0]


# --- effect size and counts --------------------------------------------------------------------


def effect_size(differences: np.ndarray) -> float | None:
    """Cohen's d_z: mean difference / standard deviation of the differences (ddof 1).

    None with fewer than two queries or when every difference is the same (no spread to scale by),
    to rounding.
    """
    if differences.size < 2:
        return None
    spread = float(np.std(differences, ddof=1))
    # Equal differences written to six decimals can differ in their last bits after subtraction
    # (0.6 - 0.5 and 0.3 - 0.2); a spread that small is rounding, not variation.
    if not spread > 1e-12 * float(np.max(np.abs(differences))):
        return None
    return float(np.mean(differences)) / spread


def wins_ties_losses(differences: np.ndarray) -> tuple[int, int, int]:
    """Queries where the candidate scores higher, the same, lower."""
    wins = int(np.count_nonzero(differences > 0))
    losses = int(np.count_nonzero(differences < 0))
    return wins, differences.size - wins - losses, losses


# --- corrections -------------------------------------------------------------------------------


def adjust_p_values(p_values: Sequence[float | None], method: str) -> list[float | None]:
    """p-values adjusted for testing them together; None (no test) stays None and is not counted.

    ``holm``: the i-th smallest of m times (m - i + 1), made non-decreasing in that order, at most 1.
    ``bh``: the i-th smallest times m / i, made non-increasing from the largest down, at most 1.
    A test is significant at level alpha exactly when its adjusted p-value is below alpha (for
    ``bh``: the Benjamini-Hochberg procedure at false discovery rate alpha).
    """
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}")
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = [None] * len(p_values)
    m = len(tested)
    if method == "none":
        for p, i in tested:
            adjusted[i] = p
    elif method == "holm":
        running = 0.0
        for rank, (p, i) in enumerate(tested):
            running = max(running, min(1.0, (m - rank) * p))
            adjusted[i] = running
    else:
        running = 1.0
        for rank in range(m - 1, -1, -1):
            p, i = tested[rank]
            running = min(running, m * p / (rank + 1))
            adjusted[i] = running
    return adjusted


# --- power -------------------------------------------------------------------------------------


def smallest_p_value(queries: int, resamples: int = RESAMPLES) -> float:
    """The smallest two-sided p-value the randomization test can give with this many queries."""
    if 2**queries <= resamples:
        return 2 / 2**queries
    return 2 / (resamples + 1)


def minimum_detectable_effect(sd: float, queries: int, alpha: float, power: float = POWER) -> float | None:
    """The true mean difference the two-sided sign-flip test at ``alpha`` finds with probability ``power``.

    ``sd`` is the standard deviation of the per-query differences, n the number of queries. Under
    random sign flips the sum of the differences is about normal with variance ``sum(d**2)``, so the
    test rejects when ``|sum(d)| > z_a * sqrt(sum(d**2))``, z_a = z(1 - alpha/2). Since
    ``sum(d**2) = (n - 1) * s**2 + n * mean**2``, that is the paired t statistic ``mean / (s / sqrt(n))``
    exceeding ``c = z_a * sqrt((n - 1) / (n - z_a**2))``, and the t statistic is about normal around
    ``delta / (sd / sqrt(n))``, so it does so with probability ``power`` when

        delta = (c + z_b) * sd / sqrt(n),    z_b = z(power).

    For many queries c tends to z_a and this is the textbook ``(z_a + z_b) * sd / sqrt(n)`` (Cohen
    1988, ch. 2; Sakai 2016 for IR). None when nothing can be detected: the test's smallest p-value
    is not below alpha, or ``n <= z_a**2``.
    """
    # The standard library's normal quantile (Wichura's AS241, as scipy's): the report computes this too, and
    # importing scipy.stats costs it most of a second.
    norm = NormalDist()
    if queries < 2 or smallest_p_value(queries) >= alpha:
        return None
    z_a, z_b = norm.inv_cdf(1 - alpha / 2), norm.inv_cdf(power)
    if queries <= z_a**2:
        return None
    threshold = z_a * math.sqrt((queries - 1) / (queries - z_a**2))
    return (threshold + z_b) * sd / math.sqrt(queries)
