"""Prediction-powered inference of a mean (PPI++): a person's labels on a few queries, a judge's on many.

A metric's per-query value under a person's labels is ``Y``; under a judge's (machine) labels it is
``Yhat``. The person labelled a uniform random sample of ``n`` queries (``Y`` and ``Yhat`` known), the
judge alone ``N`` more (``Yhat`` only). The estimand is the mean of ``Y`` over all ``n + N`` queries.

PPI++ (Angelopoulos, Duchi & Zrnic, "PPI++: Efficient Prediction-Powered Inference", 2023; PPI:
Angelopoulos et al., Science 2023) estimates it as

    theta = mean(lam * Yhat_unlabelled) + mean(Y - lam * Yhat_labelled)

which is unbiased for every ``lam`` however wrong the judge is: the second term measures the judge's
error on the sample and takes it back out. Its standard error is

    se = sqrt(var(lam * Yhat_unlabelled) / N + var(Y - lam * Yhat_labelled) / n)     (variances ddof 0)

and ``lam`` is tuned for power, the value that minimises that variance estimated from the data:

    lam = cov(Y, Yhat) / ((1 + n / N) * var(Yhat))

with ``cov`` over the labelled queries (ddof 0) and ``var`` over the judge's values of all ``n + N``
queries (ddof 1), clipped to [0, 1]: 0 is the classical mean of ``Y`` alone (a judge that tells nothing),
1 is plain PPI. The 95% interval is ``theta -+ z(0.975) * se`` and the p-value the two-sided normal test
of ``theta = null``.

These are ppi_py's conventions (``ppi_mean_pointestimate``, ``ppi_mean_ci``, ``ppi_mean_pval`` with
``lam=None`` and ``lam_optim_mode="overall"``, version 0.2.3), except in two places, both where ppi_py
contradicts itself or gives no number:

* ppi_py's ``ppi_mean_pval`` tunes ``lam`` without the clipping its point estimate and interval apply, so
  where the unclipped value leaves [0, 1] its p-value tests another estimator than its interval shows, and
  the two can disagree about significance. Here one clipped ``lam`` serves all three, so the p-value is below
  ``alpha`` exactly when the interval excludes the null. Where the tuned value lies in [0, 1] the two agree
  to rounding; elsewhere the p-value equals ``ppi_mean_pval`` given the clipped ``lam``
  (tests/scoring/test_ppi.py checks both).
* A judge whose values are all the same has no variance to tune by (ppi_py returns NaN); its ``lam`` is 0,
  the classical mean, which every ``lam`` gives in that case.

The functions take rows: row ``j`` of each argument is one metric (or one simulation), and each row is
estimated on its own, as ppi_py estimates a one-dimensional mean. Only numpy and the standard library
are used; ppi_py (which pulls numba, scikit-learn and statsmodels) is the reference in the tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

ALPHA = 0.05
"""Error level of every interval here: 95%, two-sided (ppi_py's own default is 0.1)."""

POWER = 0.8
"""Power at which :func:`minimum_detectable_effect` is stated."""

_TINY_SE = 1e-16
"""ppi_py's floor on the standard error of a p-value's z statistic."""


@dataclass(frozen=True)
class MeanEstimates:
    """Estimates of one mean per row: the point estimate, its standard error, interval and p-value.

    ``lam`` is the power-tuning weight of each row (0 for the classical estimate); ``n`` and ``N`` count
    the labelled and unlabelled queries (``N`` is 0 for the classical estimate).
    """

    estimate: np.ndarray
    std_error: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_value: np.ndarray
    lam: np.ndarray
    n: int
    N: int

    @property
    def width(self) -> np.ndarray:
        return self.ci_high - self.ci_low

    def row(self, j: int) -> MeanEstimate:
        """Row ``j`` as plain floats."""
        return MeanEstimate(estimate=float(self.estimate[j]), std_error=float(self.std_error[j]),
                            ci_low=float(self.ci_low[j]), ci_high=float(self.ci_high[j]),
                            p_value=float(self.p_value[j]), lam=float(self.lam[j]), n=self.n, N=self.N)


@dataclass(frozen=True)
class MeanEstimate:
    """One row of :class:`MeanEstimates`."""

    estimate: float
    std_error: float
    ci_low: float
    ci_high: float
    p_value: float
    lam: float
    n: int
    N: int

    @property
    def width(self) -> float:
        return self.ci_high - self.ci_low


def _rows(values: np.ndarray | list[float], name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise ValueError(f"{name} must be one row of values or a (rows, queries) array, not shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} holds a value that is not a finite number")
    return array


def _z(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, not {alpha}")
    # The standard library's quantile is Wichura's AS241, as scipy's norm.ppf; no scipy import at run time.
    return NormalDist().inv_cdf(1 - alpha / 2)


def _two_sided_p(z: np.ndarray) -> np.ndarray:
    """``2 * P(Z > |z|)``, as scipy's ``2 * norm.sf(|z|)``: erfc keeps the far tail's precision."""
    return np.array([math.erfc(abs(float(v)) / math.sqrt(2)) for v in z.ravel()]).reshape(z.shape)


def tuned_lambda(labelled: np.ndarray, predicted: np.ndarray, unlabelled: np.ndarray) -> np.ndarray:
    """The power-tuned ``lam`` of each row, clipped to [0, 1] (ppi_py's ``_calc_lam_glm``, ``clip=True``).

    ``labelled`` (rows, n) are the person's values, ``predicted`` (rows, n) the judge's on the same queries,
    ``unlabelled`` (rows, N) the judge's on the rest.
    """
    Y, Yhat, Yhat_u = _check(labelled, predicted, unlabelled)
    return _tuned_lambda(Y, Yhat, Yhat_u)


def _tuned_lambda(Y: np.ndarray, Yhat: np.ndarray, Yhat_u: np.ndarray) -> np.ndarray:
    n, N = Y.shape[1], Yhat_u.shape[1]
    covariance = np.mean((Y - Y.mean(axis=1, keepdims=True)) * (Yhat - Yhat.mean(axis=1, keepdims=True)), axis=1)
    variance = np.var(np.concatenate((Yhat, Yhat_u), axis=1), axis=1, ddof=1)
    lam = np.zeros(Y.shape[0])
    spread = variance > 0
    lam[spread] = covariance[spread] / ((1 + n / N) * variance[spread])
    return np.clip(lam, 0.0, 1.0)


def _check(labelled: np.ndarray, predicted: np.ndarray,
           unlabelled: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    Y, Yhat, Yhat_u = _rows(labelled, "labelled"), _rows(predicted, "predicted"), _rows(unlabelled, "unlabelled")
    if Y.shape != Yhat.shape:
        raise ValueError(f"labelled {Y.shape} and predicted {Yhat.shape} must have the same shape: "
                         "the person's and the judge's values of the same queries")
    if Yhat_u.shape[0] != Y.shape[0]:
        raise ValueError(f"unlabelled has {Yhat_u.shape[0]} rows, labelled {Y.shape[0]}")
    if Y.shape[1] < 2:
        raise ValueError(f"PPI needs at least 2 labelled queries, not {Y.shape[1]}")
    if Yhat_u.shape[1] < 1:
        raise ValueError("PPI needs at least 1 unlabelled query; with none, use classical_mean")
    return Y, Yhat, Yhat_u


def _estimates(point: np.ndarray, se: np.ndarray, lam: np.ndarray, n: int, N: int, alpha: float,
               null: float) -> MeanEstimates:
    z = _z(alpha)
    p_value = _two_sided_p((point - null) / np.maximum(se, _TINY_SE))
    return MeanEstimates(estimate=point, std_error=se, ci_low=point - z * se, ci_high=point + z * se,
                         p_value=p_value, lam=lam, n=n, N=N)


def ppi_mean(labelled: np.ndarray, predicted: np.ndarray, unlabelled: np.ndarray, *, alpha: float = ALPHA,
             null: float = 0.0, lam: np.ndarray | float | None = None) -> MeanEstimates:
    """PPI++ estimate, ``1 - alpha`` interval and two-sided p-value (against ``null``) of each row's mean.

    ``labelled`` (rows, n): the person's values; ``predicted`` (rows, n): the judge's values of the same
    queries, in the same order; ``unlabelled`` (rows, N): the judge's values of the queries the person did
    not label. ``lam`` None tunes it per row (:func:`tuned_lambda`); a number fixes it (1: plain PPI).
    """
    Y, Yhat, Yhat_u = _check(labelled, predicted, unlabelled)
    n, N = Y.shape[1], Yhat_u.shape[1]
    weight = _tuned_lambda(Y, Yhat, Yhat_u) if lam is None else np.broadcast_to(
        np.asarray(lam, dtype=np.float64), (Y.shape[0],)).copy()
    w = weight[:, None]
    imputed, rectifier = w * Yhat_u, Y - w * Yhat
    point = imputed.mean(axis=1) + rectifier.mean(axis=1)
    se = np.sqrt(imputed.var(axis=1) / N + rectifier.var(axis=1) / n)
    return _estimates(point, se, weight, n, N, alpha, null)


def classical_mean(labelled: np.ndarray, *, alpha: float = ALPHA, null: float = 0.0) -> MeanEstimates:
    """The mean of the person's values alone, with ppi_py's ``classical_mean_ci``: normal, ddof 0.

    Its p-value is the same normal test (``ppi_mean_pval`` with ``lam=0``).
    """
    Y = _rows(labelled, "labelled")
    n = Y.shape[1]
    if n < 2:
        raise ValueError(f"an interval needs at least 2 labelled queries, not {n}")
    point = Y.mean(axis=1)
    se = Y.std(axis=1) / math.sqrt(n)
    return _estimates(point, se, np.zeros(Y.shape[0]), n, 0, alpha, null)


Sides = tuple[np.ndarray, np.ndarray, np.ndarray]


def ppi_paired(baseline: Sides, candidate: Sides, *, alpha: float = ALPHA) -> MeanEstimates:
    """PPI++ of the mean paired difference ``candidate - baseline``, per query, under each label set.

    Each side is ``(labelled, predicted, unlabelled)`` as :func:`ppi_mean` takes them, the same queries in
    the same order on both sides. The difference of two PPI means is not what this estimates: ``lam`` is
    tuned for the differences themselves, whose judge-to-person correlation is what the comparison rests on.
    """
    differences = [np.asarray(c, dtype=np.float64) - np.asarray(b, dtype=np.float64)
                   for b, c in zip(baseline, candidate, strict=True)]
    return ppi_mean(*differences, alpha=alpha)


def minimum_detectable_effect(std_error: float, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """The true mean (difference) the two-sided normal test at ``alpha`` finds with probability ``power``.

    ``(z(1 - alpha/2) + z(power)) * se`` (Cohen 1988, ch. 2), with the standard error of the estimator, PPI's
    or the classical one: the narrower the interval, the smaller the change it can see.
    """
    return (_z(alpha) + NormalDist().inv_cdf(power)) * std_error
