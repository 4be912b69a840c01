"""Independent L-BFGS-B runs in lockstep (optim.lockstep): each row's run is the run it would make alone, the
rounds are batched calls, and a failing call or interrupt ends every run instead of leaving threads waiting."""

import threading

import numpy as np
import pytest
from scipy.optimize import minimize as scipy_minimize

from optim.lockstep import lockstep_lbfgsb

CENTRES = np.array([[0.2, 0.7, 0.5], [0.9, 0.1, 0.4], [0.5, 0.5, 0.5], [0.05, 0.95, 0.3], [0.6, 0.3, 0.8]])
#: per-row curvature from 1 to 1e3 (row 2's valley is narrow): the runs need different numbers of iterations
SCALES = np.array([1.0, 10.0, 1e3, 3.0, 100.0])


def wavy_bowls(X):
    """Row r: -(scaled distance to its centre)^2 + a ripple coupling its first two columns; exact gradients."""
    d = X - CENTRES[: len(X)]
    w = SCALES[: len(X), None] * np.array([1.0, 0.5, 2.0])
    ripple = 0.05 * np.sin(7 * X[:, 0]) * np.cos(5 * X[:, 1])
    v = -np.sum(w * d**2, 1) + ripple
    g = -2 * w * d
    g[:, 0] += 0.35 * np.cos(7 * X[:, 0]) * np.cos(5 * X[:, 1])
    g[:, 1] -= 0.25 * np.sin(7 * X[:, 0]) * np.sin(5 * X[:, 1])
    return v, g


def alone(X0, i, cols, maxiter):
    """Row i's run by itself: scipy's L-BFGS-B on that row's value, the other rows never looked at."""
    nfev = [0]

    def f(x):
        nfev[0] += 1
        X = X0.copy()
        X[i, cols] = x
        v, g = wavy_bowls(X)
        return -v[i], -g[i, cols]
    res = scipy_minimize(f, X0[i, cols], jac=True, method="L-BFGS-B", bounds=[(0.0, 1.0)] * len(cols),
                         options={"maxiter": maxiter})
    return res.x, nfev[0]


@pytest.mark.parametrize("cols", [np.array([0, 1, 2]), np.array([0, 2])])
def test_each_row_ends_where_its_own_run_ends_and_each_round_is_one_call(cols):
    """Bit for bit the run of each row alone (a joint problem over all rows, as the search was before, ends
    elsewhere: its iterates share one line search), with the other columns untouched, in as many batched calls as
    the longest run's evaluations."""
    X0 = np.random.default_rng(0).uniform(size=(5, 3))
    X, calls = lockstep_lbfgsb(wavy_bowls, X0, cols, maxiter=100)
    runs = [alone(X0, i, cols, 100) for i in range(len(X0))]
    for i, (x, _) in enumerate(runs):
        assert np.array_equal(X[i, cols], np.clip(x, 0, 1)), i
    fixed = np.setdiff1d(np.arange(3), cols)
    assert np.array_equal(X[:, fixed], X0[:, fixed])
    nfevs = [n for _, n in runs]
    assert calls == max(nfevs) and min(nfevs) < max(nfevs)  # the rows did stop at different rounds
    assert np.all(wavy_bowls(X)[0] >= wavy_bowls(X0)[0])


def test_maxiter_bounds_each_run_and_no_columns_means_no_calls():
    X0 = np.random.default_rng(1).uniform(size=(5, 3))
    X, calls = lockstep_lbfgsb(wavy_bowls, X0, np.array([0, 1, 2]), maxiter=2)
    assert all(np.array_equal(X[i], np.clip(alone(X0, i, np.arange(3), 2)[0], 0, 1)) for i in range(5))
    same, none = lockstep_lbfgsb(wavy_bowls, X0, np.array([], dtype=int), maxiter=100)
    assert none == 0 and np.array_equal(same, X0)


def test_a_failing_call_ends_every_run_and_is_raised_in_the_caller():
    """The third batched call raises: the caller gets that exception, and no run's thread is left waiting."""
    calls = [0]

    def fails_on_third(X):
        calls[0] += 1
        if calls[0] == 3:
            raise FloatingPointError("third call")
        return wavy_bowls(X)
    before = threading.active_count()
    with pytest.raises(FloatingPointError, match="third call"):
        lockstep_lbfgsb(fails_on_third, np.random.default_rng(2).uniform(size=(5, 3)), np.arange(3), 100)
    assert calls[0] == 3 and threading.active_count() == before


def test_an_interrupt_in_the_caller_releases_the_waiting_runs(monkeypatch):
    """KeyboardInterrupt while the caller waits for the runs (as Ctrl-C would arrive): it is raised, and every run
    thread ends instead of waiting for a round that will never come."""
    import optim.lockstep as lockstep

    started = threading.Event()
    real_join = threading.Thread.join

    def interrupted_join(self, timeout=None):
        if self.name.startswith("lbfgsb-start-"):
            started.wait(5)
            raise KeyboardInterrupt
        return real_join(self, timeout)

    def slow(X):
        started.set()
        return wavy_bowls(X)
    monkeypatch.setattr(lockstep.threading.Thread, "join", interrupted_join)
    with pytest.raises(KeyboardInterrupt):
        lockstep_lbfgsb(slow, np.random.default_rng(3).uniform(size=(5, 3)), np.arange(3), 100)
    monkeypatch.undo()
    for thread in [t for t in threading.enumerate() if t.name.startswith("lbfgsb-start-")]:
        thread.join(5)
        assert not thread.is_alive()


def test_a_surrogates_acquisition_gives_each_row_the_value_it_has_alone(flat2):
    """The driver needs a batched acquisition whose row values do not depend on the other rows: the integrated
    log-EI of a fitted GP, evaluated on 16 rows, gives each row exactly the value it has when the others are
    moved, so its lockstep runs are each row's run alone."""
    from optim.acquisition import LogEI
    from optim.integrated import AcquisitionFunction
    from tests.conftest import fast_sample
    from zoo import GP

    rng = np.random.default_rng(5)
    X = rng.uniform(size=(8, 2))
    y = np.sin(6 * X[:, 0]) + X[:, 1]
    acqf = AcquisitionFunction(fast_sample(GP(flat2), X, y), LogEI(), best=float(y.min()))
    rows = rng.uniform(size=(16, 2))
    v, g = acqf(rows)
    moved = rows.copy()
    moved[1:] = rng.uniform(size=(15, 2))
    v2, g2 = acqf(moved)
    assert v[0] == v2[0] and np.array_equal(g[0], g2[0])
