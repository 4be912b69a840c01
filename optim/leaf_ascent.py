"""The "leaf_ascent" optimizer: any integrated acquisition over tree-ensemble posteriors (BARK), maximized by
a Sobol pool and coordinate ascent over the forests' leaf intervals, with no MIP.

A forest's mean and variance are piecewise constant between its split thresholds, so any acquisition built on
them is too; moving one column changes the leaf of only the trees that split on it. This is the MIP optimizer's
warm start (``optim.mip.polished_pool_point``) returned as the answer. It serves the criteria the MIP cannot
write (log-EI, EI, PI); SCIP at 1-10 s never improved on this start for UCB in our runs (BENCHMARKS.md, "Fewer
forests in the MIP, and 10 s of SCIP in the BO loop"), so for those criteria nothing is lost by leaving it out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from optim.mip import polished_pool_point
from zoo.space import Space


@dataclass(frozen=True)
class LeafAscentConfig:
    """Knobs of the pool-and-ascent search (the same meaning and defaults as MIPConfig's)."""

    n_pool: int = 512  # Sobol pool scored by the integrated acquisition
    n_starts: int = 1  # best pool points polished by coordinate ascent
    max_sweeps: int = 3  # coordinate-ascent sweeps over the columns (each scores every leaf interval once)
    n_local: int = 0  # rows near the incumbent added to the pool, and the incumbent (as MIPConfig's)

    def __post_init__(self):
        for name in ("n_pool", "n_starts", "max_sweeps", "n_local"):
            value, least = getattr(self, name), 0 if name == "n_local" else 1
            if not (isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= least):
                kind = "a non-negative" if least == 0 else "a positive"
                raise ValueError(f"LeafAscentConfig.{name} must be {kind} integer, got {value!r}")


def optimize_leaf_ascent(acqf, space: Space, rng: np.random.Generator, config: LeafAscentConfig = LeafAscentConfig()):
    """(encoded row, its integrated acquisition value, info) for a surrogate that offers
    `zoo.base.ForestPosterior`; the value is that of `acqf` at the returned row."""
    t0 = time.perf_counter()
    _, _, x, value, v_pool = polished_pool_point(acqf, space, rng, config.n_pool, config.n_starts, config.max_sweeps,
                                                 config.n_local)
    return x, value, {"optimizer": "leaf_ascent", "pool_value": v_pool, "polished_value": value,
                      "seconds": time.perf_counter() - t0}
