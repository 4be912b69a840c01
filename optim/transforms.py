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
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

OUTPUT_TRANSFORMS = ("none", "log", "yeo-johnson")


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


def transform_outputs(y, kind: str) -> np.ndarray:
    """The values `y` [n] on the transformed scale (order-preserving)."""
    check_output_transform(kind)
    y = np.asarray(y, dtype=np.float64)
    if kind == "none":
        return y
    if kind == "log":
        if y.size:
            check_value_for(kind, float(np.min(y)))
        return np.log(y)
    scale = np.std(y)  # yeo-johnson
    if y.size < 3 or scale == 0.0 or not np.isfinite(scale):
        return y
    z = (y - np.mean(y)) / scale
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.asarray(stats.yeojohnson(z)[0], dtype=np.float64)
    except (ValueError, FloatingPointError, OverflowError):
        return z
    return out if np.all(np.isfinite(out)) and np.std(out) > 0 else z
