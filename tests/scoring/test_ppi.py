"""PPI++ of a mean against ppi_py 0.2.3, the reference: point estimates, intervals, p-values to 1e-9."""

from __future__ import annotations

import math

import numpy as np
import pytest

# The reference: ppi-python, pinned in the test extra (it pulls numba, so groundkit never imports it).
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate, ppi_mean_pval
from ppi_py.ppi import _calc_lam_glm

from groundkit.scoring.ppi import (
    ALPHA,
    classical_mean,
    minimum_detectable_effect,
    ppi_mean,
    ppi_paired,
    tuned_lambda,
)

TOLERANCE = 1e-9


def _unclipped_lambda(Y, Yhat, Yhat_u):
    """ppi_py's own tuned lambda before clipping, as its ppi_mean_pval uses it."""
    return _calc_lam_glm(Y - Y.mean(), Yhat - Yhat.mean(), Yhat_u - Yhat.mean(), np.eye(1), clip=False)


def _judge(rng, truth, kind):
    """A judge's per-query values: a mix of judges good and bad, so lambda lands inside and outside [0, 1]."""
    noise = rng.normal(0, 1, truth.shape)
    if kind == "good":
        return np.clip(truth + 0.1 * noise, 0, 1)
    if kind == "noisy":
        return np.clip(truth + 0.6 * noise, 0, 1)
    if kind == "high":
        return np.clip(truth + 0.3 + 0.05 * noise, 0, 1)
    if kind == "compressed":  # slope of truth on judge above 1: unclipped lambda above 1
        return 0.5 + 0.2 * (truth - 0.5) + 0.01 * noise
    if kind == "inverse":  # negative correlation: unclipped lambda below 0
        return 1 - truth + 0.05 * noise
    if kind == "unrelated":
        return rng.random(truth.shape)
    if kind == "binary":  # hit rate: 0/1 values under both label sets
        return np.where(rng.random(truth.shape) < 0.85, truth, 1 - truth)
    raise AssertionError(kind)


FIXTURES = [(seed, kind, n, N) for seed, (kind, n, N) in enumerate(
    [(k, n, N) for k in ("good", "noisy", "high", "compressed", "inverse", "unrelated", "binary")
     for n, N in ((50, 500), (12, 40), (200, 60))])]


def _fixture(seed, kind, n, N):
    rng = np.random.default_rng(1000 + seed)
    truth = rng.random(n + N) ** 2 if kind != "binary" else (rng.random(n + N) < 0.6).astype(float)
    judged = _judge(rng, truth, kind)
    return truth[:n], judged[:n], judged[n:]


@pytest.mark.parametrize(("seed", "kind", "n", "N"), FIXTURES)
def test_single_metric_equals_ppi_py(seed, kind, n, N):
    Y, Yhat, Yhat_u = _fixture(seed, kind, n, N)
    ours = ppi_mean(Y, Yhat, Yhat_u).row(0)
    assert ours.estimate == pytest.approx(float(ppi_mean_pointestimate(Y, Yhat, Yhat_u)[0]), abs=TOLERANCE)
    low, high = ppi_mean_ci(Y, Yhat, Yhat_u, alpha=ALPHA)
    assert ours.ci_low == pytest.approx(float(low[0]), abs=TOLERANCE)
    assert ours.ci_high == pytest.approx(float(high[0]), abs=TOLERANCE)
    # ppi_py clips lambda for its estimate and interval, not for its p-value: given the clipped lambda,
    # ppi_mean_pval is our p-value; left to tune it, it agrees wherever clipping changes nothing.
    assert ours.p_value == pytest.approx(float(ppi_mean_pval(Y, Yhat, Yhat_u, lam=ours.lam)[0]), abs=TOLERANCE)
    unclipped = _unclipped_lambda(Y, Yhat, Yhat_u)
    assert ours.lam == pytest.approx(min(max(unclipped, 0.0), 1.0), abs=TOLERANCE)
    if 0 <= unclipped <= 1:
        assert ours.p_value == pytest.approx(float(ppi_mean_pval(Y, Yhat, Yhat_u)[0]), abs=TOLERANCE)


def test_the_fixtures_reach_both_clips_and_the_inside():
    """Lambda must be exercised at 0, at 1 and in between, or the clipping above is never tested."""
    lams = [tuned_lambda(*_fixture(*f))[0] for f in FIXTURES]
    unclipped = [_unclipped_lambda(*_fixture(*f)) for f in FIXTURES]
    assert min(unclipped) < 0 and max(unclipped) > 1
    assert 0.0 in lams and 1.0 in lams and any(0 < lam < 1 for lam in lams)


def test_p_value_agrees_with_the_interval_where_ppi_py_does_not():
    """With lambda clipped to 1, ppi_py's p-value (unclipped lambda) can call significant what its own interval
    does not exclude; ours is below alpha exactly when the interval excludes 0."""
    found = False
    for seed in range(400):
        rng = np.random.default_rng(seed)
        truth = rng.normal(0.03, 0.2, 60)
        judged = 0.3 * truth + 0.005 * rng.normal(0, 1, 60)  # slope of truth on judge about 3: lambda clipped
        Y, Yhat, Yhat_u = truth[:20], judged[:20], judged[20:]
        ours = ppi_mean(Y, Yhat, Yhat_u).row(0)
        assert (ours.p_value < ALPHA) == (ours.ci_low > 0 or ours.ci_high < 0)
        low, high = ppi_mean_ci(Y, Yhat, Yhat_u, alpha=ALPHA)
        theirs = float(ppi_mean_pval(Y, Yhat, Yhat_u)[0])
        if (theirs < ALPHA) != (low[0] > 0 or high[0] < 0):
            found = True
    assert found, "no seed showed ppi_py's p-value disagreeing with its interval"


@pytest.mark.parametrize(("seed", "kind", "n", "N"), FIXTURES[::3])
def test_classical_equals_ppi_py(seed, kind, n, N):
    Y, _, _ = _fixture(seed, kind, n, N)
    ours = classical_mean(Y).row(0)
    low, high = classical_mean_ci(Y, alpha=ALPHA)
    assert ours.ci_low == pytest.approx(float(low), abs=TOLERANCE)
    assert ours.ci_high == pytest.approx(float(high), abs=TOLERANCE)
    assert ours.estimate == pytest.approx(float(Y.mean()), abs=TOLERANCE)
    # The classical test is PPI's with lambda 0 (the judge's values are ignored).
    pval = ppi_mean_pval(Y, np.zeros_like(Y), np.zeros(5), lam=0)
    assert ours.p_value == pytest.approx(float(pval[0]), abs=TOLERANCE)


@pytest.mark.parametrize(("seed", "kind"), enumerate(["good", "noisy", "high", "compressed", "binary"]))
def test_paired_differences_equal_ppi_py(seed, kind):
    rng = np.random.default_rng(2000 + seed)
    n, N = 40, 300
    base_truth = rng.random(n + N)
    cand_truth = np.clip(base_truth + rng.normal(0.03, 0.15, n + N), 0, 1)
    base_judged, cand_judged = _judge(rng, base_truth, kind), _judge(rng, cand_truth, kind)
    baseline = (base_truth[:n], base_judged[:n], base_judged[n:])
    candidate = (cand_truth[:n], cand_judged[:n], cand_judged[n:])
    ours = ppi_paired(baseline, candidate).row(0)
    Y, Yhat, Yhat_u = (c - b for b, c in zip(baseline, candidate, strict=True))
    assert ours.estimate == pytest.approx(float(ppi_mean_pointestimate(Y, Yhat, Yhat_u)[0]), abs=TOLERANCE)
    low, high = ppi_mean_ci(Y, Yhat, Yhat_u, alpha=ALPHA)
    assert (ours.ci_low, ours.ci_high) == pytest.approx((float(low[0]), float(high[0])), abs=TOLERANCE)
    assert ours.p_value == pytest.approx(float(ppi_mean_pval(Y, Yhat, Yhat_u, lam=ours.lam)[0]), abs=TOLERANCE)
    if 0 <= _unclipped_lambda(Y, Yhat, Yhat_u) <= 1:
        assert ours.p_value == pytest.approx(float(ppi_mean_pval(Y, Yhat, Yhat_u)[0]), abs=TOLERANCE)


def test_rows_are_estimated_one_by_one():
    """Many metrics at once give what each gives alone (ppi_py tunes one lambda for a vector; we tune per row)."""
    rows = [_fixture(s, k, 50, 500) for s, k, *_ in FIXTURES if _[0] == 50]
    together = ppi_mean(*(np.stack(parts) for parts in zip(*rows, strict=True)))
    for j, parts in enumerate(rows):
        alone = ppi_mean(*parts).row(0)
        assert together.row(j) == alone


def test_fixed_lambda_equals_ppi_py():
    Y, Yhat, Yhat_u = _fixture(3, "noisy", 50, 500)
    for lam in (0.0, 0.4, 1.0):
        ours = ppi_mean(Y, Yhat, Yhat_u, lam=lam).row(0)
        assert ours.estimate == pytest.approx(float(ppi_mean_pointestimate(Y, Yhat, Yhat_u, lam=lam)[0]),
                                              abs=TOLERANCE)
        low, high = ppi_mean_ci(Y, Yhat, Yhat_u, alpha=ALPHA, lam=lam)
        assert (ours.ci_low, ours.ci_high) == pytest.approx((float(low[0]), float(high[0])), abs=TOLERANCE)


def test_constant_judge_gives_the_classical_interval():
    """No variance to tune by: ppi_py divides 0 by 0; lambda 0 here, and every lambda gives the classical mean."""
    Y = np.array([0.0, 0.5, 1.0, 0.25, 0.75])
    ours = ppi_mean(Y, np.full(5, 0.4), np.full(20, 0.4)).row(0)
    classical = classical_mean(Y).row(0)
    assert ours.lam == 0.0
    assert (ours.estimate, ours.ci_low, ours.ci_high) == pytest.approx(
        (classical.estimate, classical.ci_low, classical.ci_high), abs=1e-15)


def test_by_hand():
    # Y = (0, 1), Yhat = (0, 1), Yhat_u = (1, 1): cov(Y, Yhat) = 1/4 (ddof 0); var(0, 1, 1, 1) = 3/16 * 4/3 = 1/4
    # (ddof 1); lam = (1/4) / ((1 + 2/2) * 1/4) = 1/2. theta = mean(1/2, 1/2) + mean(0, 1/2) = 3/4;
    # se = sqrt(0 / 2 + var(0, 1/2) / 2) = sqrt(1/16 / 2); interval 3/4 -+ 1.959964 * se.
    ours = ppi_mean([0.0, 1.0], [0.0, 1.0], [1.0, 1.0]).row(0)
    assert ours.lam == pytest.approx(0.5)
    assert ours.estimate == pytest.approx(0.75)
    se = math.sqrt(1 / 32)
    assert ours.std_error == pytest.approx(se)
    assert ours.ci_low == pytest.approx(0.75 - 1.959963984540054 * se)
    assert ours.p_value == pytest.approx(math.erfc(0.75 / se / math.sqrt(2)))


def test_minimum_detectable_effect():
    # (z(0.975) + z(0.8)) * se = (1.959964 + 0.841621) * 0.01
    assert minimum_detectable_effect(0.01) == pytest.approx(0.028015852, abs=1e-8)


@pytest.mark.parametrize(("args", "message"), [
    (([0.5], [0.5], [0.1, 0.2]), "at least 2 labelled"),
    (([0.5, 0.1], [0.5, 0.2], []), "at least 1 unlabelled"),
    (([0.5, 0.1], [0.5], [0.3]), "same shape"),
    (([0.5, math.nan], [0.5, 0.2], [0.3]), "finite"),
])
def test_bad_input_is_refused(args, message):
    with pytest.raises(ValueError, match=message):
        ppi_mean(*args)
