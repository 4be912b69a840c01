"""The per-path multi-start L-BFGS-B optimizer on acquisitions with known maximizers."""

import numpy as np
import pytest

from optim.path_lbfgs import LBFGSConfig, optimize_acquisition
from optim.bench.problems import jenatton_small
from zoo import Categorical, Integer, Real, Space

CONFIG = LBFGSConfig(n_raw=64, n_restarts=4, maxiter=50)


class QuadraticAcq:
    """-(sum_j w_j (x_j - t_j)^2) + bonus(row); exact gradients, NumPy only."""

    def __init__(self, target, weights, bonus=lambda X: 0.0):
        self.t, self.w, self.bonus = np.asarray(target), np.asarray(weights), bonus

    def __call__(self, X, dim=None):
        X = np.atleast_2d(X)
        v = -np.sum(self.w * (X - self.t) ** 2, 1) + self.bonus(X)
        return v, -2 * self.w * (X - self.t)

    def values(self, X, dim=None):
        return self(X)[0]


def test_finds_interior_maximum_of_flat_space():
    space = Space([Real("a", 0, 1), Real("b", 0, 1)])
    acq = QuadraticAcq([0.3, 0.77], [1.0, 1.0])
    x, v, path = optimize_acquisition(acq, space, np.random.default_rng(0), CONFIG)
    assert np.allclose(x, [0.3, 0.77], atol=1e-5) and v == pytest.approx(0, abs=1e-9)


def test_picks_the_best_path_on_a_conditional_space():
    space = jenatton_small().space
    # reward leaf x1=1,x3=1 (path 3) and pull x7 to 0.25 in unit scale; the decision columns carry the bonus
    j1, j3, j7 = space.col["x1"], space.col["x3"], space.col["x7"]
    target = space.fill_row()
    target[j7] = 0.25

    def bonus(X):
        return 1.0 * ((X[:, j1] == 1) & (X[:, j3] == 1))
    weights = np.zeros(space.dim)
    weights[j7] = 1.0
    x, v, path = optimize_acquisition(QuadraticAcq(target, weights, bonus), space, np.random.default_rng(1), CONFIG)
    config = space.decode(x)
    assert (config["x1"], config["x3"]) == (1, 1) and path == 3
    assert config["x7"] == pytest.approx(-0.5, abs=1e-4)
    assert v == pytest.approx(1.0, abs=1e-8)


@pytest.mark.parametrize("n_cats", [3, 40])  # enumerated (3 combos) and alternated (40 > enum_limit)
def test_categoricals_by_enumeration_and_alternation(n_cats):
    space = Space([Real("a", 0, 1), Categorical("c", tuple(range(n_cats)))])
    best_cat = n_cats - 2

    def bonus(X):
        return 0.5 * (X[:, 1] == best_cat)
    x, v, _ = optimize_acquisition(QuadraticAcq([0.6, 0.0], [1.0, 0.0], bonus), space,
                                   np.random.default_rng(2), CONFIG)
    assert space.decode(x)["c"] == best_cat and x[0] == pytest.approx(0.6, abs=1e-5)


def test_integers_are_rounded_and_value_is_at_the_returned_point():
    space = Space([Integer("k", 0, 10), Real("a", 0, 1)])
    acq = QuadraticAcq([0.33, 0.5], [1.0, 1.0])  # continuous optimum k = 3.3 -> 3
    x, v, _ = optimize_acquisition(acq, space, np.random.default_rng(3), CONFIG)
    assert space.decode(x)["k"] == 3
    assert v == pytest.approx(acq.values(x[None])[0])
