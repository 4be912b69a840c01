"""Jenatton et al.'s semi-parametric model (001, Section 2): the fast Eq. 3 route against the dense Eq. 4."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

import inference
from optim.problems import jenatton_small
from zoo.data import make_data
from zoo.jenatton import Jenatton


@pytest.fixture(scope="module")
def setup():
    problem = jenatton_small()
    space = problem.space
    configs = space.sample(23, seed=4)
    X, y = space.encode(configs), np.array([problem(c) for c in configs])
    rng = np.random.default_rng(5)
    model = Jenatton(space)
    params = {"lengthscale": rng.uniform(0.2, 1.5, len(model.leaf_cols)), "leaf_variance": rng.uniform(0.3, 2, 4),
              "offset": rng.normal(size=4), "noise": np.float64(0.03), "sigma_c": np.float64(0.7)}
    return space, X, y, model, params


def test_fast_marginal_likelihood_equals_the_dense_formula(setup):
    space, X, y, model, params = setup
    data = make_data(X, y, fill_row=space.fill_row())
    fast = float(model.log_marginal(data, params))
    n = len(y)
    dense_cov = np.asarray(model.dense_covariance(data, params))[:n, :n]
    b = np.asarray(model.leaf_onehot(data.X) @ params["offset"])[:n]
    dense = multivariate_normal(b, dense_cov).logpdf(data.y[:n])
    assert fast == pytest.approx(dense, rel=1e-9)
    # the pointwise (chain-rule) log-likelihood sums to the same value, shifted to user units
    assert float(np.sum(model.log_likelihood(params, data))) == pytest.approx(dense - n * np.log(data.y_std), rel=1e-9)


def test_without_shared_weights_it_is_independent_gps(setup):
    space, X, y, _, params = setup
    model = Jenatton(space, shared=False)
    data = make_data(X, y, fill_row=space.fill_row())
    total = 0.0
    leaf = np.asarray(model.leaf_onehot(data.X)).argmax(1)[: len(y)]
    K = np.asarray(model.block_kernel(data.X, data.X, params))[: len(y), : len(y)]
    for p in range(4):
        idx = np.flatnonzero(leaf == p)
        cov = K[np.ix_(idx, idx)] + (params["noise"] + 1e-6 + 1e-8) * np.eye(len(idx))
        total += multivariate_normal(np.full(len(idx), params["offset"][p]), cov).logpdf(data.y[idx])
    assert float(model.log_marginal(data, params)) == pytest.approx(total, rel=1e-9)
    assert np.all(np.asarray(model.block_kernel(data.X, data.X, params))[np.ix_(leaf == 0, leaf == 1)] == 0)


def test_sampler_runs_and_predicts(setup):
    space, X, y, model, _ = setup
    post = inference.sample(model, X, y, key=0, num_warmup=60, num_samples=10, num_chains=2)
    assert post.samples["c"].shape == (2, 10, model.n_features)
    mean, var = post.predict(X[:5])
    assert mean.shape == (20, 5) and np.all(var > 0)
    assert np.abs(mean.mean(0) - y[:5]).max() < 0.2  # close to noiseless training values
    idata = post.to_arviz()
    assert list(idata.posterior["c"].coords["feature"].values) == [
        "root:intercept", "x1=0:intercept", "x1=0:r8", "x1=1:intercept", "x1=1:r9"]
    assert list(idata.posterior["offset"].coords["leaf"].values)[0] == "x1=0,x2=0"
