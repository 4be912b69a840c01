"""Non-stationary problems for the treed GP (004): the 1-D RKHS function, Gramacy & Lee's function (1-D, and
summed over two inputs) and a 4-D bowl with a sharp basin.

Facts of the RKHS function (Wang, Assael & de Freitas 2014, used in 004 Fig. 1 and Table 1): a weighted
sum of squared-exponential bumps on [0, 1], five of lengthscale 0.1 on the left (smooth) and fourteen of
lengthscale 0.01 on the right (jagged); its maximum is 5.73839 at x = 0.89235. Minimized here as -f.

Facts of Gramacy & Lee's function (Gramacy & Lee 2012, "Cases for the nugget", a standard test of treed and
non-stationary GPs): sin(10 pi x) / (2x) + (x - 1)^4 on [0.5, 2.5]. The sine's amplitude decays as 1 / (2x), so
the left of the box is a row of deep, narrow minima and the right is dominated by the smooth quartic; the
minimum is -0.869011 at x = 0.548563, next to local minima of -0.663 (x = 0.749) and -0.527 (x = 0.949).
"""

from __future__ import annotations

import numpy as np

from optim.bench.problems.base import Problem
from zoo.space import Real, Space

_RKHS_SMOOTH = ((0.1, 4.0), (0.15, -1.0), (0.08, 2.0), (0.3, -2.0), (0.4, 1.0))  # (centre, weight), width 0.1
_RKHS_JAGGED = ((0.8, 3.0), (0.85, 4.0), (0.9, 2.0), (0.95, 1.0), (0.92, -1.0), (0.74, 2.0), (0.91, 2.0),
                (0.89, 3.0), (0.79, 3.0), (0.88, 2.0), (0.86, -1.0), (0.96, -2.0), (0.99, 4.0), (0.82, -3.0))
#: min of -f on [0, 1]: dense grid (1e6 points) then Brent polish, `python -m optim.bench.problems.nonstationary`
RKHS_MINIMUM = -5.738393747099
#: min of Gramacy & Lee's function, from the same command
GRAMACY_LEE_MINIMUM = -0.869011134989
#: min of the bowl-and-basin function, multi-start L-BFGS-B from the same command
BOWL_BASIN_MINIMUM = -0.791511752442


def rkhs_value(x) -> np.ndarray:
    """The RKHS function f(x) (to be maximized) at x in [0, 1], vectorized."""
    x = np.asarray(x, dtype=np.float64)[..., None]
    out = np.zeros(x.shape[:-1])
    for bumps, width in ((_RKHS_SMOOTH, 0.1), (_RKHS_JAGGED, 0.01)):
        centres, weights = np.array(bumps).T
        out = out + np.sum(weights * np.exp(-0.5 * ((x - centres) / width) ** 2), axis=-1)
    return out


def rkhs1d(noise_std: float = 0.0, seed: int = 0) -> Problem:
    """-f of the RKHS function on [0, 1] (004 Table 1's RKHS, sign flipped): smooth left, jagged right;
    minimum -5.73839 at x = 0.89235."""
    space = Space([Real("x", 0.0, 1.0)])
    return Problem("rkhs1d", space, lambda c: float(-rkhs_value(c["x"])), RKHS_MINIMUM, noise_std, seed)


def gramacy_lee_value(x) -> np.ndarray:
    """Gramacy & Lee's (2012) f(x) = sin(10 pi x) / (2x) + (x - 1)^4 at x in [0.5, 2.5], vectorized."""
    x = np.asarray(x, dtype=np.float64)
    return np.sin(10.0 * np.pi * x) / (2.0 * x) + (x - 1.0) ** 4


def gramacy_lee1d(noise_std: float = 0.0, seed: int = 0) -> Problem:
    """Gramacy & Lee's 1-D function on [0.5, 2.5] (a held-out check for settings chosen on RKHS): minimum
    -0.869011 at x = 0.548563."""
    space = Space([Real("x", 0.5, 2.5)])
    return Problem("gramacy_lee1d", space, lambda c: float(gramacy_lee_value(c["x"])), GRAMACY_LEE_MINIMUM,
                   noise_std, seed)


def gramacy_lee2d(noise_std: float = 0.0, seed: int = 0) -> Problem:
    """f(x1) + f(x2) of Gramacy & Lee's function on [0.5, 2.5]^2 (ours, a 2-D held-out check): rows of narrow
    minima along the low edges, a smooth quartic rise elsewhere; minimum 2 x -0.869011 at x1 = x2 = 0.548563,
    the next best -1.532 one dip along."""
    space = Space([Real("x1", 0.5, 2.5), Real("x2", 0.5, 2.5)])
    return Problem("gramacy_lee2d", space,
                   lambda c: float(gramacy_lee_value(c["x1"]) + gramacy_lee_value(c["x2"])),
                   2.0 * GRAMACY_LEE_MINIMUM, noise_std, seed)


BASIN_CENTRE = 0.85
BASIN_WIDTH = 0.05
BOWL_CENTRE = 0.3


def bowl_basin_value(x) -> np.ndarray:
    """sum_i (x_i - 0.3)^2 - 2 / (1 + |x - 0.85|^2 / 0.05^2) on [0, 1]^d: a smooth bowl over most of the box
    (local minimum about 0 near x = 0.3) and a sharp heavy-tailed basin in the far corner (the global
    minimum, about -0.8): one lengthscale cannot fit both."""
    x = np.asarray(x, dtype=np.float64)
    bowl = np.sum((x - BOWL_CENTRE) ** 2, axis=-1)
    basin = 2.0 / (1.0 + np.sum((x - BASIN_CENTRE) ** 2, axis=-1) / BASIN_WIDTH**2)
    return bowl - basin


def bowl_basin4(noise_std: float = 0.0, seed: int = 0) -> Problem:
    """The bowl-and-basin function in 4 dimensions (ours, for the treed GP): minimum -0.79151."""
    space = Space([Real(f"x{i}", 0.0, 1.0) for i in range(4)])
    names = [f"x{i}" for i in range(4)]
    return Problem("bowl_basin4", space, lambda c: float(bowl_basin_value([c[n] for n in names])),
                   BOWL_BASIN_MINIMUM, noise_std, seed)


def _grid_then_brent(f, low: float, high: float) -> float:
    """The minimum of a 1-D function: a 1e6-point grid, then a bounded Brent search around the best point."""
    from scipy.optimize import minimize_scalar

    xs = np.linspace(low, high, 1_000_001)
    i = int(np.argmin(f(xs)))
    res = minimize_scalar(lambda x: float(f(x)), bounds=(xs[max(i - 1, 0)], xs[min(i + 1, len(xs) - 1)]),
                          method="bounded", options={"xatol": 1e-12})
    return min(float(res.fun), float(f(xs[i])))


def _compute_minima() -> tuple[float, float, float]:
    """Recompute the three stored minima (slow: dense grids and multi-start searches)."""
    from scipy.optimize import minimize

    rkhs_min = _grid_then_brent(lambda x: -rkhs_value(x), 0.0, 1.0)
    gramacy_lee_min = _grid_then_brent(gramacy_lee_value, 0.5, 2.5)
    rng = np.random.default_rng(0)
    starts = np.vstack([np.full(4, BASIN_CENTRE), np.full(4, BOWL_CENTRE), rng.uniform(size=(200, 4))])
    bowl_min = min(minimize(lambda x: float(bowl_basin_value(x)), s, method="L-BFGS-B", bounds=[(0, 1)] * 4,
                            options={"ftol": 1e-15, "gtol": 1e-12}).fun for s in starts)
    return rkhs_min, gramacy_lee_min, float(bowl_min)


if __name__ == "__main__":
    print("RKHS_MINIMUM = %.12f\nGRAMACY_LEE_MINIMUM = %.12f\nBOWL_BASIN_MINIMUM = %.12f" % _compute_minima())
