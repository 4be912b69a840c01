"""Rows near the incumbent for acquisition searches: a few of its inputs moved at random, so that a search
whose other rows are spread over the whole domain also scores small steps from the best point seen."""

from __future__ import annotations

import numpy as np

from optim.path_lbfgs import free_columns
from zoo.space import CATEGORICAL, INTEGER, Space

MOST_MOVED = 20  # a row moves at most this many inputs


def moved_inputs(n: int, D: int, rng: np.random.Generator) -> np.ndarray:
    """Boolean [n, D]: which inputs each of n rows moves; the count k is log-uniform on 1..min(D, 20)
    (P(k) = log((k + 1) / k) / log(K + 1)), so most rows move a few inputs and some move many."""
    top = min(D, MOST_MOVED)
    k = np.clip(np.floor(np.exp(rng.random(n) * np.log(top + 1.0))).astype(np.int64), 1, top)
    ranks = np.argsort(np.argsort(rng.random((n, D)), axis=1), axis=1)  # a uniform random order of the inputs
    return ranks < k[:, None]


def local_rows(incumbent: np.ndarray, n: int, rng: np.random.Generator, scales=(0.1, 0.1)) -> np.ndarray:
    """n rows near a row of [0, 1]^D, each with the inputs of `moved_inputs` moved by N(0, scale^2) and clipped
    to [0, 1]. `scales` = (smallest, largest): each row's scale is log-uniform between them (no draw when
    they are equal)."""
    D = len(incumbent)
    move = moved_inputs(n, D, rng)
    lo, hi = scales
    scale = hi if lo == hi else np.exp(rng.uniform(np.log(lo), np.log(hi), (n, 1)))
    return np.clip(incumbent + move * rng.normal(0.0, 1.0, (n, D)) * scale, 0.0, 1.0)


def mixed_local_rows(space: Space, incumbent: np.ndarray, n: int, rng: np.random.Generator,
                     scale: float = 0.1) -> np.ndarray:
    """n encoded rows near an encoded row of a mixed space, on its path: the inputs of `moved_inputs` among
    the path's free parameters (active, not decisions) change; a categorical one to another category drawn
    uniformly, a numeric one by N(0, scale^2) in the encoded [0, 1], clipped to it; an integer's step is
    rounded to its grid and is at least one grid step, so that a moved integer moves unless it is at a bound."""
    incumbent = np.asarray(incumbent, dtype=np.float64)
    path = space.paths[int(space.path_index(incumbent[None])[0])]
    free = np.flatnonzero(free_columns(space, path))
    if n == 0 or len(free) == 0:
        return np.zeros((0, space.dim))
    move = moved_inputs(n, len(free), rng)
    old = np.tile(incumbent[free], (n, 1))
    n_choices = space.n_choices[free]
    other = (old + rng.integers(1, np.maximum(n_choices, 2), size=old.shape)) % np.maximum(n_choices, 1)
    step = rng.normal(0.0, scale, old.shape)
    span = np.array([space.columns[j].high - space.columns[j].low if space.kinds[j] == INTEGER else 0 for j in free])
    grid = span > 0
    step[:, grid] = np.sign(step[:, grid]) * np.maximum(np.abs(np.round(step[:, grid] * span[grid])), 1) / span[grid]
    stepped = np.clip(old + step, 0.0, 1.0)
    new = np.where(space.kinds[free] == CATEGORICAL, other, stepped)
    rows = np.tile(incumbent, (n, 1))
    rows[:, free] = new
    rows[:, free] = np.where(move, space.round_encoded(rows)[:, free], old)  # snap the moved entries alone
    return rows
