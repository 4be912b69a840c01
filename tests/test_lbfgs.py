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

    def scores(self, X, batch=1024, dim=None):
        return self(X)[0]


def test_finds_interior_maximum_of_flat_space():
    space = Space([Real("a", 0, 1), Real("b", 0, 1)])
    acq = QuadraticAcq([0.3, 0.77], [1.0, 1.0])
    x, v, path = optimize_acquisition(acq, space, np.random.default_rng(0), CONFIG)
    assert np.allclose(x, [0.3, 0.77], atol=1e-5) and v == pytest.approx(0, abs=1e-9)


def _path3_acquisition(space, pulled):
    """On Jenatton small: a bonus of 1 on the leaf x1=1, x3=1 (path 3, carried by the decision columns), and the
    columns `pulled` drawn to the fill row's values, x7 to 0.25 in unit scale."""
    j1, j3 = space.col["x1"], space.col["x3"]
    target = space.fill_row()
    target[space.col["x7"]] = 0.25

    def bonus(X):
        return 1.0 * ((X[:, j1] == 1) & (X[:, j3] == 1))
    weights = np.zeros(space.dim)
    weights[[space.col[name] for name in pulled]] = 1.0
    return QuadraticAcq(target, weights, bonus)


def test_picks_the_best_path_on_a_conditional_space():
    space = jenatton_small().space
    acq = _path3_acquisition(space, ["x7"])
    x, v, path = optimize_acquisition(acq, space, np.random.default_rng(1), CONFIG)
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


@pytest.mark.parametrize("max_paths", [None, 3])
def test_a_many_path_space_is_screened_and_still_finds_the_best_path(monkeypatch, max_paths):
    """16 paths: with max_paths=3 only 3 get the full search, chosen by a shared Sobol screening pool."""
    import optim.path_lbfgs as path_lbfgs
    from optim.bench.runner import binary_tree_space

    space = binary_tree_space(4)[0]  # 16 paths, 31 reals, 15 decisions
    winner = space.paths[11]
    cols = [space.col[n] for n in winner.decisions]
    idx = np.array([space.columns[c].index(v) for c, v in zip(cols, winner.decisions.values())])
    x_leaf = space.col[space.nodes[winner.leaf].params[0].name]
    target = space.fill_row()
    target[x_leaf] = 0.3
    weights = np.zeros(space.dim)
    weights[x_leaf] = 1.0
    acq = QuadraticAcq(target, weights, lambda X: 1.0 * np.all(X[:, cols] == idx, axis=1))
    searched = []
    full_search = path_lbfgs.optimize_path
    monkeypatch.setattr(path_lbfgs, "optimize_path",
                        lambda a, s, p, r, c, e=None: searched.append(p.index) or full_search(a, s, p, r, c, e))
    x, v, path = optimize_acquisition(acq, space, np.random.default_rng(4), LBFGSConfig(n_raw=64, n_restarts=4,
                                                                                         max_paths=max_paths))
    assert path == 11 and space.active_path(space.decode(x)).index == 11
    assert v == pytest.approx(1.0, abs=1e-8) and v == pytest.approx(acq.values(x[None])[0])
    assert len(searched) == (16 if max_paths is None else 3) and 11 in searched


def test_explore_paths_draws_a_random_path_at_its_rate_and_maximizes_the_acquisition_there():
    space = jenatton_small().space  # two binary decisions: Space.sample draws each of the 4 paths with p = 1/4
    acq = _path3_acquisition(space, ["x4", "x5", "x6", "x7"])
    config = LBFGSConfig(n_raw=16, n_restarts=2, maxiter=30, explore_paths=0.5)
    rng, n = np.random.default_rng(0), 400
    paths = []
    for _ in range(n):
        x, v, path = optimize_acquisition(acq, space, rng, config)
        assert space.path_index(x[None])[0] == path and v == pytest.approx(acq.values(x[None])[0], abs=1e-12)
        paths.append(path)
    freq = np.bincount(paths, minlength=4) / n
    expected = np.array([0.125, 0.125, 0.125, 0.625])  # explored 1/2 x 1/4 each, plus the greedy choice of path 3
    # binomial standard errors sqrt(p (1 - p) / 400) are 0.017 and 0.024; 4 of them bound a correct sampler's
    # frequencies with room to spare, and a sampler that never explores (0, 0, 0, 1) or always does is far outside
    assert np.all(np.abs(freq - expected) <= 4 * np.sqrt(expected * (1 - expected) / n)), freq
    assert optimize_acquisition(acq, space, rng, LBFGSConfig(n_raw=16, n_restarts=2, maxiter=30))[2] == 3


@pytest.mark.parametrize("bad", [-0.1, 1.5, True, "0.2"])
def test_explore_paths_must_be_a_probability(bad):
    with pytest.raises(ValueError, match="explore_paths"):
        LBFGSConfig(explore_paths=bad)


class SpikeAcq:
    """On Jenatton small: a broad bump of height 0.5 on path 0 (sd 0.3 around (r8, x4) = (0.5, 0.5)) and a spike of
    height 1 on path 3 (sd 0.004 around (r9, x7) = (0.8, 0.3)), with the incumbent 0.004 from the spike's centre.
    Exact gradients; NumPy only."""

    def __init__(self, space):
        self.space = space
        col = space.col
        self.parts = [  # (height, sd, decisions, columns, centre)
            (0.5, 0.3, {col["x1"]: 0, col["x2"]: 0}, [col["r8"], col["x4"]], np.array([0.5, 0.5])),
            (1.0, 0.004, {col["x1"]: 1, col["x3"]: 1}, [col["r9"], col["x7"]], np.array([0.8, 0.3]))]
        self.incumbent = space.fill_row()
        self.incumbent[[col["x1"], col["x3"]]] = 1
        self.incumbent[[col["r9"], col["x7"]]] = [0.8028, 0.2972]

    def __call__(self, X, dim=None):
        X = np.atleast_2d(X)
        v, g = np.zeros(len(X)), np.zeros_like(X)
        for height, sd, decisions, cols, centre in self.parts:
            on = np.all([X[:, j] == d for j, d in decisions.items()], axis=0)
            diff = X[:, cols] - centre
            bump = on * height * np.exp(-0.5 * np.sum(diff ** 2, 1) / sd ** 2)
            v, g[:, cols] = v + bump, g[:, cols] - bump[:, None] * diff / sd ** 2
        return v, g

    def values(self, X, dim=None):
        return self(X)[0]

    def scores(self, X, batch=1024, dim=None):
        return self(X)[0]


def test_rows_near_the_incumbent_join_its_paths_pool_and_find_a_spike_the_sobol_pool_misses():
    """A 64-point Sobol pool per path lands within 2.5 sd of the spike with probability about 64 pi 0.01^2 = 0.02,
    and L-BFGS-B from elsewhere sees no gradient: without `n_local` the search returns the bump (0.5). With the
    incumbent and 8 rows near it in path 3's pool, it returns the spike's top (1.0)."""
    space = jenatton_small().space
    acq = SpikeAcq(space)
    x, v, path = optimize_acquisition(acq, space, np.random.default_rng(0), CONFIG)
    assert path == 0 and v == pytest.approx(0.5, abs=1e-6)
    x, v, path = optimize_acquisition(acq, space, np.random.default_rng(0),
                                      LBFGSConfig(n_raw=64, n_restarts=4, maxiter=50, n_local=8))
    assert path == 3 and v == pytest.approx(1.0, abs=1e-6)
    assert np.allclose(x[[space.col["r9"], space.col["x7"]]], [0.8, 0.3], atol=1e-4)
    with pytest.raises(ValueError, match="n_local"):
        LBFGSConfig(n_local=-1)
