"""Multi-start L-BFGS-B over the numeric columns of each path of a (conditional) space.

For each root-to-leaf path: decisions are fixed, inactive columns hold their fill value, and the
acquisition is maximized over the path's active numeric columns (relaxed integers included) from
the best points of a scrambled Sobol pool, all starts in one batched L-BFGS-B problem (with
`independent_starts`, one run per start, stepped together: optim.lockstep). Active
categorical parameters are enumerated when their combinations are few, otherwise alternated with
the numeric search (coordinate ascent over categories). Integers are rounded at the end and the
rounded candidates re-scored, so the returned value is the acquisition at the returned point.

A space with more than `max_paths` paths (a deep conditional space has hundreds) is screened first:
every path gets a small Sobol pool, all pools are scored together in large value-only batches, and
only the `max_paths` paths with the best pool points get the full search. The cost then grows with
the number of paths only through the cheap screening pool.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize as scipy_minimize
from scipy.stats import qmc

from optim.integrated import on_path
from optim.lockstep import lockstep_lbfgsb
from zoo.space import CATEGORICAL, Path, Space


@dataclass(frozen=True)
class LBFGSConfig:
    """Knobs of the acquisition optimizer."""

    n_raw: int = 512  # Sobol pool per path (and per categorical assignment)
    n_restarts: int = 16  # L-BFGS-B starts taken from the best pool points
    maxiter: int = 100
    enum_limit: int = 4  # enumerate categorical combinations up to this many (each costs a pool + L-BFGS-B)
    alternations: int = 2  # rounds of categorical coordinate ascent otherwise
    max_paths: int | None = 8  # paths given the full search; more are screened first (None: every path)
    screen_raw: int = 128  # Sobol points per path in the screening pool
    #: epsilon-greedy over paths: the probability that a proposal's path is drawn at random (each decision
    #: uniform, as `Space.sample` draws) instead of chosen by the acquisition; the point on that path still
    #: maximizes the acquisition there. 0 (the default) never explores
    explore_paths: float = 0.0
    #: rows near the incumbent (optim.local_rows.mixed_local_rows), and the incumbent, added to the pool of the
    #: incumbent's path, so that the starts can include small steps from the best point seen (0: the Sobol pool only;
    #: the "lbfgs" optimizer's alone). Tried on Jenatton's functions: no gain (BENCHMARKS.md, "Rows near the incumbent
    #: in the path-wise search")
    n_local: int = 0
    #: one L-BFGS-B run per start, the runs stepped together so that each round is one batched call
    #: (optim.lockstep), instead of one L-BFGS-B problem over the sum of all starts (the default). The search took
    #: 1.1-2.8 times less time per iteration on the conditional family (BENCHMARKS.md, "Independent starts stepped
    #: by one thread"); over 24 paired runs its regret leaned worse (p = 0.09), so it is not the default
    independent_starts: bool = False

    def __post_init__(self):
        if not isinstance(self.independent_starts, bool):
            raise ValueError(f"independent_starts must be True or False, got {self.independent_starts!r}")
        if self.independent_starts:
            from optim.lockstep import check_routine

            reason = check_routine()
            if reason is not None:
                raise ValueError(f"independent_starts=True needs scipy's L-BFGS-B routine, which this scipy does not "
                                 f"offer as optim.lockstep expects: {reason}. Leave independent_starts=False.")
        if isinstance(self.n_local, bool) or not isinstance(self.n_local, (int, np.integer)) or self.n_local < 0:
            raise ValueError(f"n_local must be an integer >= 0, got {self.n_local!r}")
        if self.max_paths is not None and (not isinstance(self.max_paths, int) or self.max_paths < 1):
            raise ValueError(f"max_paths must be a positive integer or None, got {self.max_paths!r}")
        if isinstance(self.explore_paths, bool) or not isinstance(self.explore_paths, (int, float)) \
                or not 0.0 <= self.explore_paths <= 1.0:
            raise ValueError(f"explore_paths must be a probability in [0, 1], got {self.explore_paths!r}")


def lbfgs_polish(acqf, X0, cols, maxiter, dim, independent: bool = False):
    """Maximize acqf over X[:, cols] in [0,1] from every row of X0 at once: one L-BFGS-B problem over the sum (the
    acquisition is separable over rows), or with `independent` one run per row (optim.lockstep)."""
    if independent:
        return lockstep_lbfgsb(lambda rows: acqf(rows, dim), X0, cols, maxiter)[0]
    if len(cols) == 0:
        return X0
    X = X0.copy()

    def f(flat):
        X[:, cols] = flat.reshape(len(X), len(cols))
        v, g = acqf(X, dim)
        return -np.sum(v), -g[:, cols].ravel()

    res = scipy_minimize(f, X0[:, cols].ravel(), jac=True, method="L-BFGS-B",
                         bounds=[(0.0, 1.0)] * (len(X) * len(cols)), options={"maxiter": maxiter})
    X[:, cols] = np.clip(res.x.reshape(len(X), len(cols)), 0.0, 1.0)
    return X


def _coordinate_ascent(acqf, X, cat_cols, n_choices, dim):
    """For each row, set each categorical column in turn to its best value."""
    for j in cat_cols:
        k = int(n_choices[j])
        trial = np.repeat(X, k, axis=0)
        trial[:, j] = np.tile(np.arange(k), len(X))
        v = acqf.values(trial, dim).reshape(len(X), k)
        X[:, j] = np.argmax(v, axis=1)
    return X


def free_columns(space: Space, path: Path) -> np.ndarray:
    """Boolean [D]: the columns an optimizer may move on a path (its active parameters, not its decisions)."""
    free = path.active.copy()
    free[[space.col[name] for name in path.decisions]] = False
    return free


def optimize_path(acqf, space: Space, path: Path, rng: np.random.Generator, config: LBFGSConfig,
                  extra: np.ndarray | None = None):
    """Best encoded row and its value on one path (`extra`: encoded rows on it that join its Sobol pool)."""
    return optimize_region(acqf, space, space.path_row(path), free_columns(space, path), rng, config, extra)


def optimize_region(acqf, space: Space, base: np.ndarray, free: np.ndarray, rng: np.random.Generator,
                    config: LBFGSConfig, extra: np.ndarray | None = None):
    """Best encoded row and its value when only the `free` columns [D] of the row `base` move (a path's
    parameters, one vertex's, the shared parameters of a path): numeric ones by multi-start L-BFGS-B
    from a Sobol pool, categorical ones enumerated or alternated. `extra` rows (on the same path) join the pool
    of the categorical assignment they hold, or every pool when categories alternate."""
    num = np.flatnonzero(free & (space.kinds != CATEGORICAL))
    cat = np.flatnonzero(free & (space.kinds == CATEGORICAL)).astype(np.int64)
    dim = len(num) + len(cat)
    n_combos = int(np.prod(space.n_choices[cat])) if len(cat) else 1
    assignments = (list(itertools.product(*[range(int(space.n_choices[j])) for j in cat]))
                   if n_combos <= config.enum_limit else [None])
    best_x, best_v = None, -np.inf
    for assignment in assignments:
        pool = np.tile(base, (config.n_raw, 1))
        if len(num):
            pool[:, num] = qmc.Sobol(len(num), scramble=True, rng=rng).random(config.n_raw)
        if len(cat):
            pool[:, cat] = (np.array(assignment) if assignment is not None
                            else rng.integers(0, space.n_choices[cat], size=(config.n_raw, len(cat))))
        if extra is not None and len(extra):
            held = extra if assignment is None else extra[np.all(extra[:, cat] == np.array(assignment), axis=1)]
            pool = np.vstack([pool, held])
        v = acqf.scores(pool, batch=config.n_raw, dim=dim)  # values only, one call for the whole pool
        starts = pool[np.argsort(-v)[: config.n_restarts]]
        X = lbfgs_polish(acqf, starts, num, config.maxiter, dim, config.independent_starts)
        if assignment is None:
            for _ in range(config.alternations):
                X = _coordinate_ascent(acqf, X, cat, space.n_choices, dim)
                X = lbfgs_polish(acqf, X, num, config.maxiter, dim, config.independent_starts)
        X = np.vstack([space.round_encoded(X), pool[:1]])
        v = acqf.values(X, dim)
        i = int(np.argmax(v))
        if v[i] > best_v:
            best_x, best_v = X[i], float(v[i])
    return best_x, best_v


def random_rows(space: Space, path: Path, n: int, rng: np.random.Generator) -> np.ndarray:
    """n encoded rows on a path: Sobol numeric columns, uniform categories, everything else fixed."""
    free = free_columns(space, path)
    num = np.flatnonzero(free & (space.kinds != CATEGORICAL))
    cat = np.flatnonzero(free & (space.kinds == CATEGORICAL))
    rows = np.tile(space.path_row(path), (n, 1))
    if len(num):
        rows[:, num] = qmc.Sobol(len(num), scramble=True, rng=rng).random(n)
    if len(cat):
        rows[:, cat] = rng.integers(0, space.n_choices[cat], size=(n, len(cat)))
    return space.round_encoded(rows)


def screen_paths(acqf, space: Space, rng: np.random.Generator, config: LBFGSConfig) -> list[int]:
    """Indices of the paths worth a full search: every path when there are at most `max_paths`, else the
    `max_paths` whose best point in a `screen_raw` Sobol pool scores highest (pools scored together,
    grouped by the dimension the acquisition is told)."""
    n_paths = len(space.paths)
    if config.max_paths is None or n_paths <= config.max_paths:
        return list(range(n_paths))
    dims = np.array([int(free_columns(space, p).sum()) for p in space.paths])
    best = np.empty(n_paths)
    for d in np.unique(dims):
        members = np.flatnonzero(dims == d)
        pool = np.concatenate([random_rows(space, space.paths[k], config.screen_raw, rng) for k in members])
        best[members] = acqf.scores(pool, dim=int(d)).reshape(len(members), config.screen_raw).max(axis=1)
    return sorted(np.argsort(-best, kind="stable")[: config.max_paths].tolist())


def optimize_acquisition(acqf, space: Space, rng: np.random.Generator, config: LBFGSConfig = LBFGSConfig()):
    """The "lbfgs" optimizer: maximize an acquisition over the paths of the space (the screened ones when
    there are many); return (encoded row, value, path index). Needs nothing of the surrogate beyond its
    predictions (each path's search uses the cheaper `AcquisitionFunction.on_path` where the surrogate has it).
    With `config.explore_paths` > 0, a proposal searches one randomly drawn path with that probability."""
    if config.explore_paths > 0 and len(space.paths) > 1 and rng.random() < config.explore_paths:
        k = int(space.path_index(space.encode(space.sample(1, rng)))[0])
        x, value = optimize_path(on_path(acqf, k), space, space.paths[k], rng, config)
        return x, value, k
    paths = screen_paths(acqf, space, rng, config)
    home, near = None, None
    if config.n_local:  # the incumbent's path is searched, its pool joined by the incumbent and rows near it
        from optim.local_rows import mixed_local_rows

        incumbent = acqf.incumbent
        home = int(space.path_index(incumbent[None])[0])
        near = np.vstack([incumbent[None], mixed_local_rows(space, incumbent, config.n_local, rng)])
        paths = sorted(set(paths) | {home})
    results = [optimize_path(on_path(acqf, k), space, space.paths[k], rng, config, near if k == home else None)
               for k in paths]
    i = int(np.argmax([v for _, v in results]))
    return results[i][0], results[i][1], paths[i]
