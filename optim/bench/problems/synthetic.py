"""Classic continuous test functions (DESIGN.md): 2-D Exp (004), Hartmann-6, Styblinski–Tang,
and augmented versions with inert dimensions (002)."""

from __future__ import annotations

import math

import numpy as np

from optim.bench.problems.base import Problem
from zoo.space import Real, Space

_H6_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_H6_A = np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
                  [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]], dtype=float)
_H6_P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
                         [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]], dtype=float)
HARTMANN6_MIN = -3.32237
STYBLINSKI_TANG_MIN_PER_DIM = -39.16617


def _vector(config, names):
    return np.array([config[n] for n in names], dtype=float)


def hartmann6_value(x: np.ndarray) -> float:
    """Hartmann-6 on [0,1]^6; minimum -3.32237."""
    return float(-np.sum(_H6_ALPHA * np.exp(-np.sum(_H6_A * (x[None, :6] - _H6_P) ** 2, axis=1))))


def styblinski_tang_value(x: np.ndarray) -> float:
    """Styblinski–Tang: 0.5 sum(x^4 - 16 x^2 + 5 x) on [-5,5]^d; minimum -39.16617 d."""
    return float(0.5 * np.sum(x**4 - 16 * x**2 + 5 * x))


def hartmann6(noise_std: float = 0.0, seed: int = 0, extra_dims: int = 0) -> Problem:
    """Hartmann-6 on [0,1]^(6 + extra_dims); the extra dimensions are inert."""
    names = [f"x{i}" for i in range(6 + extra_dims)]
    space = Space([Real(n, 0.0, 1.0) for n in names])
    name = "hartmann6" if not extra_dims else f"hartmann6_aug{6 + extra_dims}"
    return Problem(name, space, lambda c: hartmann6_value(_vector(c, names)), HARTMANN6_MIN, noise_std, seed)


def styblinski_tang(dim: int = 2, noise_std: float = 0.0, seed: int = 0, extra_dims: int = 0) -> Problem:
    """Styblinski–Tang in `dim` active dimensions on [-5,5], plus `extra_dims` inert ones."""
    names = [f"x{i}" for i in range(dim + extra_dims)]
    space = Space([Real(n, -5.0, 5.0) for n in names])
    name = f"styblinski_tang{dim}" + (f"_aug{dim + extra_dims}" if extra_dims else "")
    return Problem(name, space, lambda c: styblinski_tang_value(_vector(c, names)[:dim]),
                   STYBLINSKI_TANG_MIN_PER_DIM * dim, noise_std, seed)


def exp2d(noise_std: float = 0.0, seed: int = 0) -> Problem:
    """f = x1 exp(-x1^2 - x2^2) on [-2, 6]^2 (004); minimum -1/sqrt(2e) = -0.428882 at (-1/sqrt 2, 0)."""
    space = Space([Real("x1", -2.0, 6.0), Real("x2", -2.0, 6.0)])

    def f(c):
        return c["x1"] * math.exp(-c["x1"] ** 2 - c["x2"] ** 2)
    return Problem("exp2d", space, f, -1.0 / math.sqrt(2.0 * math.e), noise_std, seed)
