"""The "grid" optimizer: the integrated acquisition scored on a scrambled Sobol grid, the best grid points
polished by L-BFGS-B (004 Sec. 3.3: EI on a d-dimensional Sobol grid of 20,000 points, as Spearmint).

It needs nothing of the surrogate beyond its predictions, and suits surrogates whose acquisition is
piecewise (a treed GP's changes abruptly at its split points, where gradient starts alone can stall):
the dense grid finds the right cell, L-BFGS-B the best point in it. The grid is scored in fixed-size
value-only batches (`AcquisitionFunction.scores`), compiled once per data bucket.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optim.integrated import on_path
from optim.path_lbfgs import (
    LBFGSConfig,
    free_columns,
    lbfgs_polish,
    random_rows,
    screen_paths,
)
from zoo.space import CATEGORICAL, Space


@dataclass(frozen=True)
class GridConfig:
    """Grid size per path (004: 20,000; here 2^14), how many of its best points are polished, and the polish budget."""

    n_grid: int = 16384  # 004 uses 20,000; a power of two keeps the Sobol points balanced
    n_polish: int = 4
    maxiter: int = 50
    batch: int = 2048  # rows per compiled value-only call
    max_paths: int | None = 8  # conditional spaces: paths searched in full (the rest screened, see path_lbfgs)

    def __post_init__(self):
        for name in ("n_grid", "n_polish", "batch"):
            v = getattr(self, name)
            if not (isinstance(v, int) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not (isinstance(self.maxiter, int) and self.maxiter >= 0):
            raise ValueError(f"maxiter must be an integer >= 0, got {self.maxiter!r}")


def optimize_grid(acqf, space: Space, rng: np.random.Generator, config: GridConfig = GridConfig()):
    """Maximize the acquisition on every (screened) path: a Sobol grid, then L-BFGS-B from its best points
    over the numeric columns; integers rounded and re-scored, so the value returned is the acquisition
    at the returned row. Returns (encoded row, value, info)."""
    paths = screen_paths(acqf, space, rng, LBFGSConfig(max_paths=config.max_paths))
    best_x, best_v, best_path, grid_best = None, -np.inf, 0, -np.inf
    for k in paths:
        path = space.paths[k]
        free = free_columns(space, path)
        num = np.flatnonzero(free & (space.kinds != CATEGORICAL))
        dim = int(free.sum())
        local = on_path(acqf, k)
        grid = random_rows(space, path, config.n_grid, rng)
        v = local.scores(grid, batch=config.batch, dim=dim)
        top = grid[np.argsort(-v, kind="stable")[: config.n_polish]]
        polished = space.round_encoded(lbfgs_polish(local, top.copy(), num, config.maxiter, dim))
        candidates = np.vstack([polished, top])
        cv = local.values(candidates, dim)
        i = int(np.argmax(cv))
        grid_best = max(grid_best, float(np.max(v)))
        if cv[i] > best_v:
            best_x, best_v, best_path = candidates[i], float(cv[i]), k
    return best_x, best_v, {"path": best_path, "grid_best": grid_best}
