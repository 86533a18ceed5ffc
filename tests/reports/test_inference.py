"""The deciding intervals: the sign-flip test inverted, corrected intervals, and marks that follow them."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from groundkit.reports.inference import FlipNull, decide_family, flip_nulls, paired_tests
from groundkit.reports.stats import SEED, exact_differences


def _null(d: np.ndarray, resamples: int = 10_000) -> FlipNull:
    numerators, scales = exact_differences(np.zeros((1, d.size)), d[None, :])
    return flip_nulls(numerators, scales, resamples=resamples)[0]


def _scipy_p(d: np.ndarray, resamples: int = 10_000) -> float:
    return float(stats.permutation_test(
        (d, np.zeros_like(d)), lambda c, b, axis: np.mean(c - b, axis=axis), permutation_type="samples",
        vectorized=True, n_resamples=resamples, alternative="two-sided", rng=np.random.default_rng(SEED)).pvalue)


@pytest.mark.parametrize("queries", [8, 13, 30])
def test_the_p_value_is_scipys_enumerated_or_drawn(queries):
    # 2**8 and 2**13 patterns are enumerated (as scipy does below 10,000); 30 queries draw scipy's signs.
    d = np.round(np.random.default_rng(queries).normal(0.05, 0.2, queries), 6)
    assert _null(d).p_value() == pytest.approx(_scipy_p(d), rel=1e-12)


def test_the_interval_is_the_set_of_shifts_the_test_does_not_reject():
    # Checked against scipy's own test of the shifted differences, with the same draws: a shift just inside
    # each end is not rejected at 5%, one just outside is.
    d = np.round(np.random.default_rng(7).normal(0.1, 0.3, 25), 6)
    low, high = _null(d).interval(0.05)
    assert low < d.mean() < high
    step = 1e-6
    for inside, outside in ((low + step, low - step), (high - step, high + step)):
        assert _scipy_p(d - inside) >= 0.05 > _scipy_p(d - outside)


def test_the_one_sided_lower_bound_inverts_the_upper_tail_test():
    d = np.round(np.random.default_rng(11).normal(-0.02, 0.1, 40), 6)
    bound = _null(d).lower_bound(0.05)

    def greater(theta: float) -> float:
        return float(stats.permutation_test(
            (d - theta, np.zeros_like(d)), lambda c, b, axis: np.mean(c - b, axis=axis),
            permutation_type="samples", vectorized=True, n_resamples=10_000, alternative="greater",
            rng=np.random.default_rng(SEED)).pvalue)

    assert greater(bound - 1e-6) < 0.05 <= greater(bound + 1e-6)


def test_a_difference_the_same_on_every_query_has_a_point_interval():
    assert _null(np.full(12, 0.25)).interval(0.05) == (0.25, 0.25)


def test_too_few_queries_give_no_deciding_interval():
    before = np.zeros((1, 9))
    after = np.full((1, 9), 0.5)
    low, high, p, null = paired_tests(before, after)[0]
    assert (low, high) == (0.5, 0.5) and p == pytest.approx(2 / 512) and null is None
    assert decide_family([null], [0.5], 0.05, "holm") == [None]


def test_holm_intervals_are_strassburger_and_bretz():
    # Three rows: one far from 0, one clearly not, one between. Holm rejects the first only (R != I): the
    # others at alpha / (3 - 1), the rejected one only its direction, (0, U].
    rng = np.random.default_rng(3)
    d = np.round(np.stack([rng.normal(0.3, 0.2, 30), rng.normal(0.0, 0.2, 30), rng.normal(0.07, 0.2, 30)]), 6)
    numerators, scales = exact_differences(np.zeros_like(d), d)
    nulls = flip_nulls(numerators, scales)
    p = [n.p_value() for n in nulls]
    assert list(multipletests(p, 0.05, method="holm")[0]) == [True, False, False]
    decided = decide_family(nulls, list(d.mean(axis=1)), 0.05, "holm")
    assert decided[0].open_low and decided[0].low == 0 and decided[0].bounds == "(]"
    assert decided[0].high == nulls[0].interval(0.025)[1]
    for j in (1, 2):
        assert (decided[j].low, decided[j].high) == nulls[j].interval(0.025) and decided[j].level == 0.025
    assert [x.significant for x in decided] == [True, False, False]


def _fixtures(count: int, seed: int):
    """Random paired differences: 1 to 6 rows, 10 to 40 queries, effects around the edge of significance."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        rows, queries = int(rng.integers(1, 7)), int(rng.integers(10, 41))
        effects = rng.normal(0, 2.5, (rows, 1)) * 0.2 / np.sqrt(queries)
        yield np.round(rng.normal(0, 0.2, (rows, queries)) + effects, 4)


@pytest.mark.parametrize("correction", ["none", "holm", "bh"])
def test_mark_and_interval_never_disagree_on_a_thousand_fixtures(correction):
    # The mark is the interval's (it excludes 0), and it is the decision of the correction's own procedure on the
    # p-values (statsmodels'), so the p-values shown and the intervals shown cannot tell different stories.
    method = {"holm": "holm", "bh": "fdr_bh"}.get(correction)
    marked = 0
    for d in _fixtures(1000, {"none": 1, "holm": 2, "bh": 3}[correction]):
        numerators, scales = exact_differences(np.zeros_like(d), d)
        # 996 draws and the observed signs: p-values are multiples of 2 / 997, a prime, so none is exactly k * alpha / m
        # and the reference's floating-point ties cannot decide the comparison.
        nulls = flip_nulls(numerators, scales, resamples=996)
        p = np.array([n.p_value() for n in nulls])
        decided = decide_family(nulls, list(d.mean(axis=1)), 0.05, correction)
        # Significant: the adjusted p-value below alpha, strictly, as groundkit has always read it (statsmodels'
        # own reject flag takes p = alpha / k as rejected, which discrete p-values reach).
        if method == "holm":  # statsmodels' Holm takes 0.15 s a call; the textbook step-down, written out
            order = np.argsort(p, kind="stable")
            adjusted = np.empty_like(p)
            adjusted[order] = np.maximum.accumulate(np.minimum(1, (len(p) - np.arange(len(p))) * p[order]))
            rejected = adjusted < 0.05
        else:
            rejected = p < 0.05 if method is None else multipletests(p, 0.05, method=method)[1] < 0.05
        for x, r in zip(decided, rejected, strict=True):
            excludes = x.low > 0 or x.high < 0 or (x.open_low and x.low == 0) or (x.open_high and x.high == 0)
            assert x.significant == excludes == bool(r)
            marked += x.significant
    assert marked > 200  # the fixtures reach both sides of the line


# --- ties with the best -----------------------------------------------------------------------------


def _sweep(seed: int, configs: int = 5, queries: int = 60) -> np.ndarray:
    """Configurations that share each query's difficulty and differ only by noise."""
    rng = np.random.default_rng(seed)
    return rng.normal(0.5, 0.2, queries) + rng.normal(0, 0.1, (configs, queries))


def test_a_sweep_of_noise_is_all_tied_with_the_best_in_nine_seeds_of_ten():
    from groundkit.reports.inference import tied_with_best

    tied = sum(len(tied_with_best(np.round(_sweep(seed), 6), 0.05, seed=seed).tied) == 5 for seed in range(100))
    assert tied >= 90, tied


def test_one_configuration_better_by_two_mdes_is_alone_best_in_four_seeds_of_five():
    from groundkit.reports.inference import tied_with_best
    from groundkit.reports.stats import minimum_detectable_effect

    # The MDE of one paired comparison as compare reports it: the differences' SD is sqrt(2) x 0.1.
    mde = minimum_detectable_effect(0.1 * np.sqrt(2), 60, 0.05)
    alone = 0
    for seed in range(100):
        values = _sweep(1000 + seed)
        values[2] += 2 * mde
        ties = tied_with_best(np.round(values, 6), 0.05, seed=seed)
        alone += ties.tied == [2] and ties.best == 2
    assert alone >= 80, alone


def test_ties_are_the_configurations_no_other_beats_by_the_constant():
    from groundkit.reports.inference import tied_with_best

    values = np.round(_sweep(3), 6)
    values[0] -= 0.3  # far below the rest
    ties = tied_with_best(values, 0.05)
    means = values.mean(axis=1)
    for i in range(5):
        se = [np.std(values[j] - values[i], ddof=1) / np.sqrt(60) for j in range(5)]
        beaten = any(means[j] - means[i] > ties.constant * se[j] for j in range(5) if j != i)
        assert (i in ties.tied) == (not beaten)
    assert 0 not in ties.tied and ties.best in ties.tied and ties.detectable > 0
