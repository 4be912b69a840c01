"""Sampler correctness: prior reproduction without data, parameter recovery, moves, warm starts, ArviZ."""

import math

import arviz as az
import jax
import numpy as np
import pytest

import inference
from inference.moves import flip_one_bit
from tests.conftest import FAST_SAMPLER, fast_sample, gp_prior_draw, within_mc_error
from zoo import GP

SETTINGS = dict(num_warmup=300, num_samples=600, num_chains=4)


@pytest.fixture(scope="module")
def prior_posterior(flat2):
    gp = GP(flat2)
    return inference.sample(gp, np.zeros((0, 2)), np.zeros(0), key=11, **SETTINGS)


def test_without_data_the_sampler_reproduces_the_priors(prior_posterior, flat2):
    s = prior_posterior.samples
    mu_ls = math.sqrt(2) + 0.5 * math.log(2)
    for j in range(2):
        within_mc_error(np.log(s["lengthscale"][..., j]), mu_ls, math.sqrt(3), mu_ls)
    within_mc_error(np.log(s["outputscale"]), 0.0, 1.0, 0.0)
    within_mc_error(np.log(s["noise"]), -4.0, 1.0, -4.0)
    within_mc_error(s["mean"], 0.0, 1.0, 0.0)
    assert prior_posterior.stats["diverging"].mean() < 0.01


def test_nuts_recovers_generating_lengthscales(flat2):
    rng = np.random.default_rng(4)
    X = rng.random((30, 2))
    true_ls = np.array([0.15, 0.8])
    y = gp_prior_draw(X, true_ls, 1.0, 1e-4, rng)
    post = inference.sample(GP(flat2), X, y, key=5, **SETTINGS)
    ls = post.samples["lengthscale"].reshape(-1, 2)
    lo, hi = np.percentile(ls, [2.5, 97.5], axis=0)
    assert np.all(lo < true_ls) and np.all(true_ls < hi), (lo, hi)
    # the short lengthscale is identified much more tightly than the prior (prior 95% width ~ e^6.8)
    assert hi[0] / lo[0] < 10
    assert float(az.rhat(post.to_arviz(), var_names=["lengthscale"])["lengthscale"].max()) < 1.05


def test_flip_move_targets_its_distribution():
    """Bit-flip MH on independent Bernoulli(p) bits reproduces p (MC tolerance from the ESS)."""
    p = np.array([0.1, 0.5, 0.8, 0.95])
    logit = np.log(p) - np.log1p(-p)

    def log_density(v):
        return (v * logit).sum()

    def step(v, key):
        v, _ = flip_one_bit(key, v, log_density)
        return v, v
    _, draws = jax.lax.scan(step, np.zeros(4, dtype=np.int32), jax.random.split(jax.random.PRNGKey(0), 40000))
    draws = np.asarray(draws, dtype=float)
    for j in range(4):
        ess = float(az.ess(draws[None, :, j]))
        assert abs(draws[:, j].mean() - p[j]) < 4 * math.sqrt(p[j] * (1 - p[j]) / ess)


def test_warm_start_continues_each_chain(prior_posterior, flat2):
    rng = np.random.default_rng(6)
    X = rng.random((12, 2))
    y = np.sin(4 * X[:, 0])
    gp = GP(flat2)
    first = fast_sample(gp, X, y, key=1)  # the BO loop's cold and warm runs (compiled once for the suite)
    s = FAST_SAMPLER
    again = inference.sample(GP(flat2), np.vstack([X, [[0.5, 0.5]]]), np.append(y, 0.9), key=2,
                             num_warmup=s.warm_warmup, num_samples=s.num_samples, num_chains=s.num_chains,
                             thinning=s.thinning, max_tree_depth=s.max_tree_depth, init=first)
    assert again.num_chains == 2 and np.all(np.isfinite(again.stats["lp"]))
    # step sizes start from (and stay near) the adapted ones instead of restarting from 1.0
    assert np.all(np.abs(np.log(again.stats["step_size"][:, 0] / first.last_state.step_size)) < 2.5)
    with pytest.raises(ValueError, match="chains"):
        inference.sample(gp, X, y, key=3, num_warmup=10, num_samples=20, num_chains=3, init=first)


def test_bad_sampler_arguments(flat2):
    gp = GP(flat2)
    with pytest.raises(ValueError, match=r"\[n, 2\]"):
        inference.sample(gp, np.zeros((3, 5)), np.zeros(3), key=0)
    with pytest.raises(ValueError, match="num_samples"):
        inference.sample(gp, np.zeros((3, 2)), np.zeros(3), key=0, num_samples=0)
    with pytest.raises(ValueError, match="unknown discrete sites"):
        inference.sample(gp, np.zeros((3, 2)), np.zeros(3), key=0, moves={"trees": flip_one_bit})
