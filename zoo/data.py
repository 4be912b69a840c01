"""Observed data, standardized and padded to a size bucket so jitted code sees few shapes."""

from typing import NamedTuple

import numpy as np


class Data(NamedTuple):
    """Padded, standardized training data (a JAX pytree of arrays)."""

    X: np.ndarray  # [n_pad, D] encoded inputs; padded rows repeat the fill row
    y: np.ndarray  # [n_pad] standardized targets, 0 on padded rows; or [S, n_pad], one row per posterior sample
    #              (per-draw fantasies: zoo.base.prepare_samples, optim.batch's "qei")
    mask: np.ndarray  # [n_pad] True on real rows
    y_mean: np.ndarray  # scalar, user units
    y_std: np.ndarray  # scalar, user units (1 when all observations are equal)

    @property
    def n(self) -> int:
        return int(np.sum(self.mask))


def bucket_size(n: int, min_size: int = 32, steps: tuple = (1.0,)) -> int:
    """Smallest bucket >= max(n, min_size), buckets being min_size * 2^k * step for each step in `steps`.
    The default (powers of two) makes a 100-step BO run see about 3 sizes; steps (1, 1.5) add midpoints
    (32, 48, 64, 96, ...) for models whose cost grows steeply with padded rows."""
    size = min_size
    while True:
        for step in steps:
            if int(size * step) >= n:
                return int(size * step)
        size *= 2


def make_data(X, y, size: int | None = None, fill_row=None, standardize: bool = True,
              scale: tuple[float, float] | None = None) -> Data:
    """Standardize y and pad (X, y) to `size` rows (default: its bucket).

    Constant observations give y_std = 1 (documented: the model then sees all-zero targets).
    `standardize=False` keeps y as given (y_mean 0, y_std 1): y is then already on the models' scale,
    as in simulation-based calibration. A y of [S, n] (one row per posterior sample) is standardized by the mean
    and standard deviation of its column means, every row alike. `scale=(y_mean, y_std)` standardizes by those
    instead (an earlier fit's, so that draws fitted on that scale keep their meaning).
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    per_sample = y.ndim == 2  # [S, n]: one target vector per posterior sample, standardized alike
    y = y if per_sample else y.reshape(-1)
    if X.ndim != 2 or X.shape[0] != y.shape[-1]:
        raise ValueError(f"X must be [n, D] and y [n] (or [S, n]); got {X.shape} and {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y must be finite; drop failed evaluations before building Data")
    n = X.shape[0]
    size = bucket_size(n) if size is None else size
    if size < n:
        raise ValueError(f"size {size} is smaller than the number of observations {n}")
    if scale is not None:
        y_mean, y_std = float(scale[0]), float(scale[1])
        if not (np.isfinite(y_mean) and np.isfinite(y_std) and y_std > 0):
            raise ValueError(f"scale must be a finite (y_mean, y_std > 0), got {scale!r}")
    else:
        centre = y.mean(axis=0) if per_sample else y  # per-sample targets share the standardization of their mean
        y_mean = float(np.mean(centre)) if n and standardize else 0.0
        y_std = float(np.std(centre)) if n > 1 and standardize else 1.0
        if not y_std > 1e-12 * max(1.0, abs(y_mean)):
            y_std = 1.0
    fill = np.zeros(X.shape[1]) if fill_row is None else np.asarray(fill_row, dtype=np.float64)
    Xp = np.tile(fill, (size, 1))
    Xp[:n] = X
    yp = np.zeros(y.shape[:-1] + (size,))
    yp[..., :n] = (y - y_mean) / y_std
    mask = np.arange(size) < n
    return Data(Xp, yp, mask, np.float64(y_mean), np.float64(y_std))
