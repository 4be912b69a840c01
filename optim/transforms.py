"""Monotone output transforms applied to the observed values before the surrogate sees them.

Heavy-tailed objectives (a few evaluations far worse than the rest, e.g. a compression whose
error explodes at rank 1) make a GP with standardized outputs spend its variance on the outliers.
A monotone transform keeps the minimizer and the ordering of every evaluation, so the loop can fit
and maximize the acquisition on the transformed scale and still minimize the original objective.

- ``"none"``: the values as given.
- ``"log"``: log y; every value must be positive.
- ``"yeo-johnson"``: the Yeo-Johnson power transform of the standardized values, lambda by maximum
  likelihood (Yeo & Johnson, 2000; scipy.stats.yeojohnson). Defined for any sign; lambda is refit
  on every call, so the transformed scale follows the data. Where the fitted power sends a value to
  inf or collapses every value to one (an extreme lambda), or the fit fails, the standardized values are used untransformed: the
  model never sees a non-finite value.
- ``"yeo-johnson-design"``: the same power transform, with its standardization and lambda fitted on the first
  `n_fit` values only (the loop passes its initial design's size) and then held fixed. The design samples the
  objective's values across the space; the points the search adds cluster near the incumbent, and refitted on
  them lambda drifts down (from about 0.9 on the design to about -0.2 after 50 evaluations on Jenatton et
  al.'s small function), and there Add-Tree stopped polishing the minimum (BENCHMARKS.md, "Jenatton's
  functions against the peers at 50 evaluations"). Fitted once, the transform is one fixed monotone map for
  the whole run. On Jenatton et al.'s large function it did worse than the refitted transform, so `auto` does
  not pair it with any model.
- ``"log-tail"``: the values at or below their median as given; above it, y -> m + s log(1 + (y - m) / s), with m
  the median and s = m - min(y) the spread of the better half (ours; the idea of warping only the worse half
  is the "half-rank" output warping of Song et al. 2022, Google Vizier's GP bandit). The map is the identity
  up to the median, continuous with slope 1 there, and grows logarithmically above it, so a few far worse values
  are pulled in while the better half keeps its shape. Why try it with an additive kernel: a power transform
  bends the whole range, and the sum of a linear and a quadratic effect (Jenatton et al.'s shared variable and
  leaf variable) is no longer a sum on the transformed scale. Refitted to the values of auto's recorded Jenatton
  runs, Add-Tree's lengthscale for the shared variable was shorter under Yeo-Johnson than untransformed, and
  under this transform in between (benchmarks/scripts/transform_lengthscales.py). In BO it did worse than
  Yeo-Johnson on both of Jenatton's functions (BENCHMARKS.md, "Pooled lengthscales and a log-tail transform"), so
  `auto` does not pair it with any model. Where s is 0 (half the values tie with the least one) or not finite,
  the values are used as given.
- ``"copula"``: normal scores of the ranks, Phi^-1((r - 1/2) / n) with r the rank (ties share their mean rank):
  the Gaussian copula transform of Salinas, Shen & Perrone (2020, Sec. 3.1), with the Hazen plotting position
  instead of their winsorized empirical CDF. It keeps only the ordering, so the spacing the model sees near the
  minimum does not depend on the objective's scale there: on an exact objective, evaluations 1e-5 apart near the
  optimum are as far apart to the model as any two neighbours in rank. Refitted on every call. With Add-Tree on
  Jenatton et al.'s functions it did worse than Yeo-Johnson on both and stalled after 50 evaluations (BENCHMARKS.md,
  "Normal scores of the ranks as the output transform"): the ranks discard the shape of each leaf's bowl. `auto`
  does not pair it with any model.
- ``"yeo-johnson-warped"``: one map for every posterior draw, its power chosen by the model's fit of a warp rather
  than by the marginal normality of y. The loop first fits the surrogate's warped twin (the same model with
  ``output_warp="yeo-johnson-wide"``, zoo.warping: lambda sampled with the kernel's hyperparameters, Snelson et al.'s
  change of variables), takes the median of its draws' lambda, and passes it here as `power`; the model then fits
  the wide Yeo-Johnson map of the standardized values at that one power (its lambda is refitted at every MCMC
  fit, kept at the conditioned steps between them). Why: the warped twin's draws each predict on their own scale,
  and the integrated acquisition averages them; this puts every draw on one scale and keeps the twin's choice of
  lambda (BENCHMARKS.md, "One scale for every draw"). Costs a second MCMC fit per refit.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from zoo.warping import WARP_SITE, WideYeoJohnson

OUTPUT_TRANSFORMS = ("none", "log", "yeo-johnson", "yeo-johnson-design", "log-tail", "copula", "yeo-johnson-warped")
#: the transform whose power the loop takes from the posterior of the surrogate's warped twin (`warped_power`)
WARPED_TRANSFORM = "yeo-johnson-warped"
#: the transforms whose map from a value to the model's scale never changes as values arrive, so a value keeps its
#: transformed value from one BO iteration to the next. The others are refitted on every call ("yeo-johnson-design"
#: too: before its n_fit values, and where its power sends a new value to inf, it falls back to another map)
FIXED_TRANSFORMS = ("none", "log")


def check_output_transform(kind: str) -> str:
    """The transform's name, or a ValueError naming the ones that exist."""
    if kind not in OUTPUT_TRANSFORMS:
        raise ValueError(f"output_transform must be one of {OUTPUT_TRANSFORMS}, got {kind!r}")
    return kind


def check_value_for(kind: str, value: float) -> None:
    """Raise if `value` cannot be transformed by `kind` (non-finite values are handled by the loop)."""
    if kind == "log" and math.isfinite(value) and value <= 0.0:
        raise ValueError(f"output_transform='log' needs positive objective values, got {value!r}; "
                         "use 'yeo-johnson' for values of any sign")


def transform_outputs(y, kind: str, n_fit: int | None = None, power: float | None = None) -> np.ndarray:
    """The values `y` [n] on the transformed scale (order-preserving); "yeo-johnson-design" is fitted on the
    first `n_fit` of them (at least 3; all of them when `n_fit` is None); "yeo-johnson-warped" maps them at the
    given `power` (lambda, from `warped_power`)."""
    check_output_transform(kind)
    y = np.asarray(y, dtype=np.float64)
    if kind == "none":
        return y
    if kind == WARPED_TRANSFORM:
        if power is None or not math.isfinite(power):
            raise ValueError(f"output_transform={WARPED_TRANSFORM!r} needs the warped twin's power, got {power!r}")
        return _wide_yeo_johnson(y, float(power))
    if kind == "log":
        if y.size:
            check_value_for(kind, float(np.min(y)))
        return np.log(y)
    if kind == "log-tail":
        return _log_tail(y)
    if kind == "copula":
        return _normal_scores(y)
    fit = y if kind == "yeo-johnson" or n_fit is None else y[:max(int(n_fit), 3)]
    scale = np.std(fit)
    if fit.size < 3 or scale == 0.0 or not np.isfinite(scale):
        return y
    z = (y - np.mean(fit)) / scale
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            if fit.size == y.size:
                out = np.asarray(stats.yeojohnson(z)[0], dtype=np.float64)
            else:  # lambda from the first values, then the same map for all
                out = np.asarray(stats.yeojohnson(z, lmbda=stats.yeojohnson(z[:fit.size])[1]), dtype=np.float64)
    except (ValueError, FloatingPointError, OverflowError):
        return z
    return out if np.all(np.isfinite(out)) and np.std(out) > 0 else z


def _normal_scores(y: np.ndarray) -> np.ndarray:
    """Phi^-1((rank - 1/2) / n) of each value, ties at their mean rank; fewer than 2 values: zeros."""
    if y.size < 2:
        return np.zeros_like(y)
    return stats.norm.ppf((stats.rankdata(y) - 0.5) / y.size)


def _log_tail(y: np.ndarray) -> np.ndarray:
    """The values above their median on a log scale of the better half's spread; the rest as given."""
    finite = y[np.isfinite(y)]
    if finite.size < 3:
        return y
    m = float(np.median(finite))
    s = m - float(np.min(finite))
    if not (s > 0.0 and math.isfinite(s)):
        return y
    above = y > m
    out = y.copy()
    out[above] = m + s * np.log1p((y[above] - m) / s)
    return out


def _wide_yeo_johnson(y: np.ndarray, power: float) -> np.ndarray:
    """zoo.warping's wide Yeo-Johnson map of the standardized values at lambda = `power` (a bijection of the real
    line for lambda in (-1, 2)); fewer than 2 distinct values: the standardized values."""
    scale = np.std(y) if y.size > 1 else 0.0
    if not (scale > 0.0 and np.isfinite(scale)):
        return y - np.mean(y) if y.size else y
    z = (y - np.mean(y)) / scale
    return np.asarray(WideYeoJohnson().forward(z, power), dtype=np.float64)


def warped_power(posterior) -> float:
    """The median over a warped posterior's draws of its power lambda (zoo.warping.WARP_SITE)."""
    return float(np.median(np.asarray(posterior.flat_samples()[WARP_SITE])))
