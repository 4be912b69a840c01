"""Independent L-BFGS-B runs in lockstep (optim.lockstep): each row's run is scipy's run of that row alone, the
rounds are batched calls, and the private routine it drives is checked before the option is taken."""

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
    """Bit for bit the run of each row alone (the default search's joint problem over all rows ends elsewhere: its
    iterates share one line search), with the other columns untouched, in as many batched calls as the longest
    run's evaluations."""
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


def test_the_driver_repeats_scipys_minimize_with_this_scipy_and_the_option_is_checked():
    """check_routine compares the driver with scipy.optimize.minimize once per process; LBFGSConfig takes the
    option only where it passes, and refuses a non-boolean."""
    from optim.lockstep import check_routine
    from optim.path_lbfgs import LBFGSConfig

    assert check_routine() is None
    assert LBFGSConfig(independent_starts=True).independent_starts
    for bad in (1, np.bool_(True), "yes"):  # a NumPy bool would not survive the journal's JSON
        with pytest.raises(ValueError, match="independent_starts must be True or False"):
            LBFGSConfig(independent_starts=bad)


def test_a_broken_routine_is_reported_and_the_option_refused(monkeypatch):
    """A routine that does not behave as scipy's (a future scipy's private module) is found by the check, and
    LBFGSConfig(independent_starts=True) says why instead of searching with it."""
    import optim.lockstep as lockstep
    from optim.path_lbfgs import LBFGSConfig

    real = lockstep._routine()

    def looser_stop(m, x, lower, upper, kinds, f, g, factr, *rest):  # stops on a relative change 1e6 times larger
        return real(m, x, lower, upper, kinds, f, g, factr * 1e6, *rest)
    monkeypatch.setattr(lockstep, "_routine", lambda: looser_stop)
    lockstep.check_routine.cache_clear()
    try:
        assert "ended at" in lockstep.check_routine()
        with pytest.raises(ValueError, match="needs scipy's L-BFGS-B routine"):
            LBFGSConfig(independent_starts=True)
        monkeypatch.setattr(lockstep, "_routine", lambda: None)
        lockstep.check_routine.cache_clear()
        assert "could not be driven" in lockstep.check_routine()
    finally:
        monkeypatch.undo()
        lockstep.check_routine.cache_clear()
    assert lockstep.check_routine() is None


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


@pytest.mark.parametrize("n_cats", [3, 40])  # categories enumerated, and alternated with the numeric search
def test_the_path_wise_search_with_independent_starts_finds_the_known_maxima(n_cats):
    """optimize_acquisition with LBFGSConfig(independent_starts=True): the best path of Jenatton small and its
    point, and a category with its real, as test_lbfgs checks for the default search."""
    from optim.bench.problems import jenatton_small
    from optim.path_lbfgs import LBFGSConfig, optimize_acquisition
    from tests.test_lbfgs import QuadraticAcq, _path3_acquisition
    from zoo import Categorical, Real, Space

    config = LBFGSConfig(n_raw=64, n_restarts=4, maxiter=50, independent_starts=True)
    space = jenatton_small().space
    x, v, path = optimize_acquisition(_path3_acquisition(space, ["x7"]), space, np.random.default_rng(1), config)
    assert path == 3 and space.decode(x)["x7"] == pytest.approx(-0.5, abs=1e-4) and v == pytest.approx(1.0, abs=1e-8)
    flat = Space([Real("a", 0, 1), Categorical("c", tuple(range(n_cats)))])
    acq = QuadraticAcq([0.6, 0.0], [1.0, 0.0], lambda X: 0.5 * (X[:, 1] == n_cats - 2))
    x, v, _ = optimize_acquisition(acq, flat, np.random.default_rng(2), config)
    assert flat.decode(x)["c"] == n_cats - 2 and x[0] == pytest.approx(0.6, abs=1e-5)
