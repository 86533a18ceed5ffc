"""The statistics of compare: by hand, by enumeration, against scipy and statsmodels, and by simulation."""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from groundkit.reports.stats import (
    BLOCK_VALUES,
    RESAMPLES,
    SEED,
    _linear_quantiles,
    adjust_p_values,
    effect_size,
    exact_differences,
    mean_intervals,
    minimum_detectable_effect,
    paired_stats,
    paired_stats_many,
    sign_flip_null,
    smallest_p_value,
    wins_ties_losses,
)
from tests.conftest import REPO

# --- intervals and p-values --------------------------------------------------------------------


def test_identical_runs_have_no_difference():
    values = np.array([0.0, 1.0, 0.5, 0.25])
    assert paired_stats(values, values.copy()) == (0.0, 0.0, 1.0)


def test_constant_improvement_by_hand():
    # Ten queries, each up by exactly 0.1. Of the 2**10 sign patterns only "all +" and "all -" reach
    # |mean| = 0.1, so the exact two-sided p is 2 / 1024; every bootstrap resample has mean 0.1.
    base = np.zeros(10)
    low, high, p_value = paired_stats(base, base + 0.1)
    assert p_value == pytest.approx(2 / 1024)
    assert low == pytest.approx(0.1) and high == pytest.approx(0.1)


def test_randomization_p_equals_full_enumeration():
    rng = np.random.default_rng(7)
    base = rng.integers(0, 2, 12).astype(float)
    cand = rng.integers(0, 2, 12).astype(float)
    d = cand - base
    observed = abs(d.mean())
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
    # 4096 patterns: fewer than the resample count, so scipy must enumerate them all too.
    exact = np.mean(np.abs((signs * d).mean(axis=1)) >= observed - 1e-12)
    assert paired_stats(base, cand)[2] == pytest.approx(exact)


def test_bootstrap_interval_agrees_with_the_normal_approximation():
    rng = np.random.default_rng(3)
    base = rng.random(400)
    cand = base + rng.normal(0.05, 0.2, 400)
    d = cand - base
    low, high, _ = paired_stats(base, cand)
    half = 1.96 * d.std(ddof=1) / np.sqrt(d.size)
    assert low < d.mean() < high
    assert low == pytest.approx(d.mean() - half, abs=0.2 * half)
    assert high == pytest.approx(d.mean() + half, abs=0.2 * half)


def _scipy_stats(base: np.ndarray, cand: np.ndarray) -> tuple[float, float, float]:
    """The interval and p-value straight from scipy, as compare computed them before it worked in blocks."""
    from scipy import stats

    d = cand - base
    interval = stats.bootstrap((d,), np.mean, n_resamples=RESAMPLES, confidence_level=0.95, method="percentile",
                               vectorized=True, rng=np.random.default_rng(SEED)).confidence_interval
    test = stats.permutation_test((cand, base), lambda c, b, axis: np.mean(c - b, axis=axis),
                                  permutation_type="samples", vectorized=True, n_resamples=RESAMPLES,
                                  alternative="two-sided", rng=np.random.default_rng(SEED))
    return float(interval.low), float(interval.high), float(test.pvalue)


def _metric_like(queries: int, rounded: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Four rows: hit-rate-like 0/1, a third unchanged, a constant shift, reciprocal ranks."""
    rng = np.random.default_rng(queries)
    base = rng.random((4, queries))
    if rounded:
        base = np.round(base, 6)
    cand = base.copy()
    cand[0] = rng.integers(0, 2, queries)
    base[0] = rng.integers(0, 2, queries)
    cand[1] = np.where(rng.random(queries) < 0.33, base[1], np.round(rng.random(queries), 6))
    cand[2] = base[2] + 0.1
    cand[3] = np.round(1 / rng.integers(1, 20, queries), 6)
    base[3] = np.round(1 / rng.integers(1, 20, queries), 6)
    return base, cand


@pytest.mark.parametrize("queries", [5, 13, 14, 60, 144, 500])
@pytest.mark.parametrize("rounded", [True, False])
def test_statistics_agree_with_scipy(queries, rounded):
    # 5 and 13 queries take the exact enumeration, 14 and more the random sign flips. The draws are
    # scipy's, so the p-values are the same; the interval ends are means summed in another order
    # (exactly, for six-decimal values), so they agree to rounding. A block of 1,000 values forces
    # many blocks (and a short last one), unlike scipy's single batch.
    base, cand = _metric_like(queries, rounded)
    blocked = paired_stats_many(base, cand, block_values=1000)
    for row in range(4):
        low, high, p_value = _scipy_stats(base[row], cand[row])
        assert blocked[row][2] == p_value
        assert blocked[row][:2] == pytest.approx((low, high), rel=1e-13, abs=1e-15)


def test_interval_ends_are_scipys_quantiles_bit_for_bit():
    # The report computes interval ends without importing scipy.stats; they must be scipy's bits,
    # including at the edges (one value, levels landing exactly on an order statistic, ties).
    from scipy import stats

    rng = np.random.default_rng(5)
    levels = np.array([0.0, 0.025, 0.5, 0.975, 1.0])
    for n in (1, 2, 3, 40, 41, 10_000, 10_001):
        columns = np.round(rng.normal(size=(n, 3)), 2 if n % 2 else 12)
        ours = _linear_quantiles(columns, levels)
        for c in range(3):
            assert ours[c].tolist() == stats.quantile(columns[:, c], levels).tolist()


def test_a_single_run_gets_the_intervals_it_would_get_against_zeros():
    _, cand = _metric_like(144)
    cand[1] = 0.0  # a metric that is zero everywhere: an interval of (0, 0), as against zeros
    against_zeros = paired_stats_many(np.zeros_like(cand), cand)
    assert mean_intervals(cand) == [(low, high) for low, high, _ in against_zeros]
    assert mean_intervals(cand[:, :1]) == [(None, None)] * 4


def test_the_block_size_changes_nothing():
    base, cand = _metric_like(300)
    assert paired_stats_many(base, cand, block_values=997) == paired_stats_many(base, cand)


def test_six_decimal_differences_become_whole_numbers():
    base = np.array([[0.5, 0.25, 0.0], [1 / 3, 0.0, 0.0], [0.5, 0.5, 0.5]])
    cand = np.array([[0.75, 0.125, 1.0], [0.0, 0.0, 0.0], [9e15, 0.5, 0.5]])
    numerators, scales = exact_differences(base, cand)
    # Row 0: three decimals suffice (0.125); row 1: 1/3 has no decimal form, kept as floats; row 2:
    # one decimal would do, but 3 queries x 9e16 passes 2**52, where whole-number sums stop being exact.
    assert scales.tolist() == [1000.0, 1.0, 1.0]
    assert numerators[0].tolist() == [250.0, -125.0, 1000.0]
    assert numerators[1].tolist() == [-1 / 3, 0.0, 0.0]


def test_sign_flip_means_are_exact():
    # Six-decimal differences: each resample's mean equals the exact rational mean, correctly rounded,
    # whatever order BLAS adds in. A query keeps its sign when the low bit of its 32-bit draw is 1.
    queries = 5_000
    d = np.round(np.random.default_rng(11).normal(0, 0.3, queries), 6)
    numerators, scales = exact_differences(np.zeros((1, queries)), d[None])
    null = sign_flip_null(numerators, scales, SEED, 3, BLOCK_VALUES)[0]
    words = np.random.default_rng(SEED).integers(0, 2**32, (3, queries), dtype=np.uint32)
    micros = [Fraction(round(x * 10**6)) for x in d]
    for r in range(3):
        exact = sum(m if w & 1 else -m for m, w in zip(micros, words[r], strict=True)) / (10**6 * queries)
        assert null[r] == float(exact)


def test_fewer_than_two_queries_have_no_interval_and_no_test():
    assert paired_stats(np.array([0.2]), np.array([0.9])) == (None, None, None)
    assert paired_stats(np.array([]), np.array([])) == (None, None, None)


# --- effect size and counts --------------------------------------------------------------------


def test_effect_size_by_hand():
    # d = 0.1, 0.3, -0.1, 0.5: mean 0.2; deviations -0.1, 0.1, -0.3, 0.3, squares sum to 0.2, so the
    # SD (ddof 1) is sqrt(0.2 / 3) and d_z = 0.2 / sqrt(0.2 / 3) = sqrt(0.6).
    assert effect_size(np.array([0.1, 0.3, -0.1, 0.5])) == pytest.approx(math.sqrt(0.6))
    assert effect_size(np.array([-0.5, 0.5])) == pytest.approx(0.0)
    assert effect_size(np.array([0.1, 0.1, 0.1])) is None  # no spread to scale by
    assert effect_size(np.array([0.6 - 0.5, 0.3 - 0.2])) is None  # equal but for rounding
    assert effect_size(np.array([0.4])) is None


def test_wins_ties_losses_by_hand():
    assert wins_ties_losses(np.array([0.1, 0.0, -0.2, 0.3, 0.0])) == (2, 2, 1)
    assert wins_ties_losses(np.array([])) == (0, 0, 0)


# --- corrections -------------------------------------------------------------------------------

P_VALUES = [0.01, 0.04, 0.03, 0.005]


def test_holm_by_hand():
    # Sorted: 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04; made non-decreasing,
    # the last becomes 0.06. At alpha 0.05 Holm keeps the two smallest; Bonferroni (x4) only 0.005.
    assert adjust_p_values(P_VALUES, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_benjamini_hochberg_by_hand():
    # Sorted: 0.005, 0.01, 0.03, 0.04 times 4/1, 4/2, 4/3, 4/4 = 0.02, 0.02, 0.04, 0.04; made
    # non-increasing from the top, nothing changes. At alpha 0.05 all four are discoveries.
    assert adjust_p_values(P_VALUES, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_no_correction_and_untested_entries():
    assert adjust_p_values(P_VALUES, "none") == P_VALUES
    # An untested metric (None) is not one of the tests: m = 2 here.
    assert adjust_p_values([None, 0.02, 0.5], "holm") == pytest.approx([None, 0.04, 0.5])
    assert adjust_p_values([None, 0.02, 0.5], "bh") == pytest.approx([None, 0.04, 0.5])
    assert adjust_p_values([0.3], "holm") == [0.3]
    assert adjust_p_values([0.9, 0.8], "holm") == [1.0, 1.0]  # 0.8 x 2 capped at 1, then non-decreasing
    assert adjust_p_values([0.9, 0.8], "bh") == [0.9, 0.9]


@pytest.mark.parametrize(("ours", "theirs"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_corrections_equal_statsmodels(ours, theirs):
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(16)
    for size in (1, 2, 7, 16, 80):
        # Resampling-like p-values: multiples of 1 / 10,001, with ties, and some near 1.
        p = (rng.integers(1, 10_002, size) * rng.random(size) ** 3).round() / 10_001
        p = np.clip(np.concatenate([p, p[: size // 3]]), 1 / 10_001, 1.0)
        expected = multipletests(p, alpha=0.05, method=theirs)[1]
        assert adjust_p_values(list(p), ours) == pytest.approx(list(expected), rel=1e-12, abs=1e-15)


# --- minimum detectable effect -----------------------------------------------------------------


def test_minimum_detectable_effect_by_hand():
    # alpha 0.05, 80% power, 144 queries, SD 1: z_a = 1.959964, z_b = 0.841621; the sign-flip test's
    # threshold on the t statistic is 1.959964 * sqrt(143 / (144 - 1.959964**2)) = 1.979732, so the
    # MDE is (1.979732 + 0.841621) / 12 = 0.235113.
    assert minimum_detectable_effect(1.0, 144, 0.05) == pytest.approx(0.235113, abs=1e-6)
    assert minimum_detectable_effect(0.5, 144, 0.05) == pytest.approx(0.235113 / 2, abs=1e-6)
    # Many queries: the textbook (z_a + z_b) * SD / sqrt(n) = 2.801585 / 1000.
    assert minimum_detectable_effect(1.0, 10**6, 0.05) == pytest.approx(2.801585e-3, rel=1e-5)


def test_too_few_queries_detect_nothing():
    # With 5 queries the 32 sign patterns give p >= 2/32 = 0.0625 > 0.05: nothing is ever significant.
    assert smallest_p_value(5) == 2 / 32 and minimum_detectable_effect(1.0, 5, 0.05) is None
    assert smallest_p_value(6) == 2 / 64 and minimum_detectable_effect(1.0, 6, 0.05) is not None
    assert minimum_detectable_effect(1.0, 1, 0.05) is None


def _power(queries: int, *, effect: float = 1.0, shared: float = 0.0, binary: bool = False) -> tuple[float, float]:
    """The MDE from one baseline sample, and the share of 2,000 simulated comparisons whose p < 0.05.

    Each simulated comparison draws fresh queries: a baseline and a candidate score per query, both
    from the baseline sample's values (the candidate independently, or the same as the baseline for a
    ``shared`` share of queries, as runs that share a ranking do), the candidate plus ``effect`` x MDE.
    """
    rng = np.random.default_rng(queries)
    if binary:
        pool = (rng.random(queries) < 0.6).astype(float)
    else:  # nDCG-like: a third of the queries 0, four in ten 1, the rest in between
        kind = rng.random(queries)
        pool = np.where(kind < 0.3, 0.0, np.where(kind < 0.7, 1.0, np.round(rng.random(queries), 6)))
    mde = minimum_detectable_effect(math.sqrt(2) * pool.std(ddof=1), queries, 0.05)
    sims = 2000
    base = rng.choice(pool, (sims, queries))
    cand = np.where(rng.random((sims, queries)) < shared, base, rng.choice(pool, (sims, queries))) + effect * mde
    p_values = np.array([p for _, _, p in paired_stats_many(base, cand, resamples=2000)])
    return mde, float(np.mean(p_values < 0.05))


@pytest.mark.parametrize(("queries", "binary"), [(144, False), (144, True), (24, False)])
def test_minimum_detectable_effect_has_80_percent_power_by_simulation(queries, binary):
    # 2,000 simulations: the power's standard error is 0.009, so 0.8 +- 0.03 is over three of them.
    mde, power = _power(queries, binary=binary)
    assert 0.1 < mde < 0.5
    assert power == pytest.approx(0.8, abs=0.03)


def test_the_simulation_can_tell_power_apart():
    # The same harness with no effect rejects about alpha of the time, with half the MDE far less
    # than 80% (the normal approximation says 29%), and with runs sharing half their per-query
    # scores far more: the MDE from the baseline alone is the cautious figure.
    assert _power(144, effect=0.0)[1] == pytest.approx(0.05, abs=0.02)
    assert _power(144, effect=0.5)[1] == pytest.approx(0.29, abs=0.04)
    assert _power(144, shared=0.5)[1] > 0.95


def _blas_threads() -> set[int]:
    from threadpoolctl import threadpool_info

    return {library["num_threads"] for library in threadpool_info() if library["user_api"] == "blas"}


def test_the_resampling_runs_blas_on_one_thread_and_puts_back_what_it_found():
    import threading

    from threadpoolctl import threadpool_limits

    from groundkit.reports.stats import one_blas_thread

    inside: list[set[int]] = []

    @one_blas_thread
    def nested() -> None:  # as the bootstrap and the sign flips run, in threads the outer call starts
        inside.append(_blas_threads())

    @one_blas_thread
    def outer() -> None:
        inside.append(_blas_threads())
        workers = [threading.Thread(target=nested) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
        inside.append(_blas_threads())

    with threadpool_limits(limits=2, user_api="blas"):  # what the caller had: two threads
        outer()
        assert inside == [{1}, {1}, {1}, {1}]
        assert _blas_threads() == {2}

    # Nothing is left holding OpenBLAS: another thread sets its pool afterwards.
    seen: list[set[int]] = []

    def elsewhere() -> None:
        with threadpool_limits(limits=1, user_api="blas"):
            seen.append(_blas_threads())

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join(timeout=60)
    assert seen == [{1}]


def test_a_blas_library_loaded_after_the_first_resampling_is_limited_too():
    # numpy brings one OpenBLAS and scipy its own, loaded when scipy.linalg is first imported: in a process that
    # resampled before importing scipy, the limit used to miss scipy's library, which kept its two threads.
    script = (
        "from threadpoolctl import threadpool_info, threadpool_limits\n"
        "from groundkit.reports.stats import one_blas_thread\n"
        "def blas(): return sorted((l['filepath'], l['num_threads']) for l in threadpool_info()"
        " if l['user_api'] == 'blas')\n"
        "one_blas_thread(blas)()\n"
        "import scipy.linalg\n"
        "with threadpool_limits(limits=2, user_api='blas'):\n"
        "    print(len(blas()), {n for _, n in one_blas_thread(blas)()}, {n for _, n in blas()})\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(" ", 1)[1].strip() == "{1} {2}"
    assert int(result.stdout.split(" ", 1)[0]) >= 2  # numpy's and scipy's: the case the check is about
