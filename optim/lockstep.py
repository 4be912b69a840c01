"""Independent L-BFGS-B runs from many starts, stepped together so that each round of their requests is one
batched acquisition call (`LBFGSConfig(independent_starts=True)`).

The path-wise search's default runs its starts as one L-BFGS-B problem over the sum of their values: one line
search, one curvature memory and one stopping rule for all of them. Independent runs per start reached the same
best values in several times fewer batched calls in a scratch comparison (BENCHMARKS.md, "Independent L-BFGS-B
starts in lockstep"), but scipy's `minimize` cannot be paused, and running each start in its own thread cost as
much as it saved. Here one
thread keeps the state of every run and steps each through scipy's reverse-communication routine, the one
`scipy.optimize.minimize(method="L-BFGS-B")` itself drives, until it asks for f and g; the rows asked for are then
evaluated in one call. Each run is, step for step, scipy's run of that start alone. On the conditional family the
search took 1.5-2.7 times less time per iteration for auto's pick this way (BENCHMARKS.md, "Independent starts
stepped by one thread").

That routine (`scipy.optimize._lbfgsb.setulb`) is not public API: `check_routine` compares this driver with
`scipy.optimize.minimize` on a small problem once per process, and the option is refused with the reason where
they differ or the routine is missing.
"""

from __future__ import annotations

import functools

import numpy as np

#: scipy.optimize.minimize's L-BFGS-B defaults: memory, ftol / machine epsilon, projected-gradient tolerance,
#: line-search steps, function evaluations
MEMORY, FACTR, PGTOL, MAXLS, MAXFUN = 10, 2.220446049250313e-09 / np.finfo(float).eps, 1e-5, 20, 15000
#: the routine's task codes, as scipy's own driver loop reads them: evaluate f and g at x; a new iterate
FG, NEW_X = 3, 1


class _Run:
    """One start's L-BFGS-B state: the arrays scipy's routine reads and writes between calls."""

    def __init__(self, x0: np.ndarray):
        n, m = len(x0), MEMORY
        self.x = np.clip(np.array(x0, dtype=np.float64), 0.0, 1.0)
        self.f, self.g = np.array(0.0), np.zeros(n)
        self.wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m)
        self.iwa = np.zeros(3 * n, np.int32)
        self.task, self.ln_task = np.zeros(2, np.int32), np.zeros(2, np.int32)
        self.lsave, self.isave, self.dsave = np.zeros(4, np.int32), np.zeros(44, np.int32), np.zeros(29)
        self.iterations, self.evaluations, self.running = 0, 0, True

    def advance(self, routine, bounds, maxiter: int) -> bool:
        """Step until the run asks for f and g at self.x (True) or stops (False), as scipy's driver loop does."""
        lower, upper, kinds = bounds
        while self.running:
            routine(MEMORY, self.x, lower, upper, kinds, self.f, self.g, FACTR, PGTOL, self.wa, self.iwa, self.task,
                    self.lsave, self.isave, self.dsave, MAXLS, self.ln_task)
            if self.task[0] == FG:
                return True
            if self.task[0] != NEW_X:
                self.running = False
            else:
                self.iterations += 1
                self.running = self.iterations < maxiter and self.evaluations <= MAXFUN
        return False


def _routine():
    from scipy.optimize import _lbfgsb  # scipy's own L-BFGS-B routine (see the module docstring)

    return _lbfgsb.setulb


def lockstep_lbfgsb(fun, X0: np.ndarray, cols: np.ndarray, maxiter: int) -> tuple[np.ndarray, int]:
    """Maximize each row of `fun` over its columns `cols` in [0, 1], one L-BFGS-B run per row of X0.

    `fun(X)` maps rows [N, D] to (values [N], gradients [N, D]) and must give a row the same value whatever the
    other rows hold (each round evaluates every row, the finished ones at their ends). Returns the rows with their
    `cols` at each run's end (the other columns as in X0) and the number of batched calls made.
    """
    X = np.array(X0, dtype=np.float64)
    cols = np.asarray(cols, dtype=np.int64)
    if len(cols) == 0 or len(X) == 0:
        return X, 0
    routine = _routine()
    bounds = (np.zeros(len(cols)), np.ones(len(cols)), np.full(len(cols), 2, np.int32))  # 2: both bounds
    runs = [_Run(X[i, cols]) for i in range(len(X))]
    calls = 0
    while True:
        asking = [i for i, run in enumerate(runs) if run.advance(routine, bounds, maxiter)]
        if not asking:
            break
        for i, run in enumerate(runs):
            X[i, cols] = run.x
        values, grads = fun(X)
        calls += 1
        for i in asking:
            runs[i].f = np.array(-float(values[i]))
            runs[i].g = -np.asarray(grads[i, cols], dtype=np.float64)
            runs[i].evaluations += 1
    for i, run in enumerate(runs):
        X[i, cols] = np.clip(run.x, 0.0, 1.0)
    return X, calls


@functools.lru_cache(maxsize=1)
def check_routine() -> str | None:
    """None if this driver repeats `scipy.optimize.minimize(method="L-BFGS-B")` bit for bit on a small bounded
    problem with this scipy, else why not (the routine is private to scipy and may change between versions)."""
    from scipy.optimize import minimize

    centre, weight = np.array([0.3, 1.4, -0.2]), np.array([1.0, 30.0, 5.0])

    def value_and_grad(x):  # maximized: a ripple on a bowl whose optimum lies outside the box in two columns
        d = x - centre
        return -np.sum(weight * d * d, -1) + 0.1 * np.sin(5 * x[..., 0]), \
            -2 * weight * d + np.stack([0.5 * np.cos(5 * x[..., 0]), 0 * x[..., 0], 0 * x[..., 0]], -1)

    x0 = np.array([0.9, 0.1, 0.6])
    try:
        ours, _ = lockstep_lbfgsb(lambda X: value_and_grad(X), x0[None], np.arange(3), 100)
    except Exception as error:  # noqa: BLE001 (reported, not raised: the caller says what to do)
        return f"scipy's L-BFGS-B routine could not be driven ({type(error).__name__}: {error})"
    theirs = minimize(lambda x: tuple(-a for a in value_and_grad(x)), x0, jac=True, method="L-BFGS-B",
                      bounds=[(0.0, 1.0)] * 3, options={"maxiter": 100}).x
    if not np.array_equal(ours[0], np.clip(theirs, 0.0, 1.0)):
        return f"driving scipy's L-BFGS-B routine ended at {ours[0]}, scipy.optimize.minimize at {theirs}"
    return None
