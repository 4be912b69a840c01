"""Prior reproduction for the registered surrogates that have no hand-written check of their own (GP, Jenatton,
BARK and the treed GP have theirs): without data, the sampler's draws of every continuous site follow the
site's prior, compared element by element with independent draws from that prior."""

import math

import arviz as az
import jax
import numpy as np
import pytest
from numpyro import handlers
from numpyro.distributions import constraints

import inference
from optim.bench.problems import jenatton_small
from optim.registry import SURROGATES
from zoo.data import make_data

PRIOR_DRAWS = 4000


def _prior_draws(surrogate, data, key):
    """Independent prior draws [PRIOR_DRAWS, ...] of each continuous sample site, from the site's own
    distribution in one trace of the model (the discrete sites at their initial values). This assumes a
    continuous site's prior does not depend on another site, as in every registered model; a dependent prior
    would show up as a failure, not a pass."""
    model = handlers.condition(surrogate.model, data=surrogate.init_discrete(key, data))
    trace = handlers.trace(handlers.seed(model, key)).get_trace(data)
    out = {}
    for name, site in trace.items():
        if site["type"] == "sample" and not site["is_observed"] and name not in surrogate.discrete_sites:
            key, sub = jax.random.split(key)
            out[name] = (np.asarray(site["fn"].sample(sub, (PRIOR_DRAWS,))), site["fn"].support)
    return out


def _compare(mcmc, prior, label):
    """Mean and the shares below the prior's 10%, 50% and 90% quantiles agree within 4 standard errors of
    the difference: the MCMC part from the ESS of each functional, the prior part from PRIOR_DRAWS independent
    draws. A 4-SE band is left by chance with probability 6e-5 per check."""
    ess = float(az.ess(mcmc))
    se = math.sqrt(mcmc.var() / ess + prior.var() / len(prior))
    assert abs(mcmc.mean() - prior.mean()) < 4 * se, (label, mcmc.mean(), prior.mean(), se)
    for p in (0.1, 0.5, 0.9):
        below = (mcmc < np.quantile(prior, p)) * 1.0
        se = math.sqrt(p * (1 - p) / float(az.ess(below)) + p * (1 - p) / len(prior))
        assert abs(below.mean() - p) < 4 * se, (label, p, below.mean(), se)


def _compare_sites(post, prior, name):
    """`_compare` on every element of every site in `prior` ({site: (draws, support)}), positive sites on the log
    scale; and almost no divergent transitions."""
    for site, (draws, support) in prior.items():
        mcmc = np.asarray(post.samples[site], dtype=np.float64)
        positive = support is constraints.positive
        mcmc, draws = (np.log(mcmc), np.log(draws)) if positive else (mcmc, draws)
        mcmc, draws = mcmc.reshape(mcmc.shape[:2] + (-1,)), draws.reshape(len(draws), -1)
        for j in range(draws.shape[1]):
            _compare(mcmc[..., j], draws[:, j], f"{name}:{site}[{j}]")
    assert post.stats["diverging"].mean() < 0.01


# slow (suite time: each compiles a sampler of its own): the default run reproduces the GP's prior (test_inference)
# and calibrates Add-Tree with shared terms by SBC (test_calibration)
@pytest.mark.slow
@pytest.mark.parametrize("name", ["addtree", "addtree_shared", "independent", "additive", "additive_ls2d"])
def test_without_data_the_sampler_reproduces_the_prior(name):
    """Power: the same check on `inference.tempered(addtree, 0.5)` (the sampler targets the prior squared-
    rooted, each log-normal about 1.4 times too wide) failed 14 of its element checks. "additive_ls2d" is
    `Additive` with the zoo's 2-D lengthscale prior (`lengthscale_prior=None`, its default until 2026-11-27)."""
    from zoo import Real, Space
    from zoo.additive import Additive

    flat = name.startswith("additive")
    space = Space([Real(f"x{i}", 0.0, 1.0) for i in range(3)]) if flat else jenatton_small().space
    surrogate = Additive(space, lengthscale_prior=None) if name == "additive_ls2d" else SURROGATES[name](space)
    post = inference.sample(surrogate, np.zeros((0, space.dim)), np.zeros(0), key=5, num_warmup=200,
                            num_samples=400, num_chains=2)
    data = make_data(np.zeros((0, space.dim)), np.zeros(0), size=post.data.mask.shape[0], fill_row=space.fill_row())
    prior = _prior_draws(surrogate, data, jax.random.PRNGKey(6))
    assert prior, name
    _compare_sites(post, prior, name)


def _saas_prior_check(surrogate, key=7):
    """Draws of GP(saas=True) without data against independent prior draws: every sample site, and the
    deterministic lengthscale (tau c)^(-1/2) against the same transform of the prior's tau and c draws."""
    space = surrogate.space
    post = inference.sample(surrogate, np.zeros((0, space.dim)), np.zeros(0), key=key, num_warmup=200,
                            num_samples=400, num_chains=2)
    data = make_data(np.zeros((0, space.dim)), np.zeros(0), size=post.data.mask.shape[0], fill_row=space.fill_row())
    prior = _prior_draws(surrogate, data, jax.random.PRNGKey(key + 1))
    assert {"saas_tau", "saas_c", "outputscale", "noise", "mean"} <= set(prior), sorted(prior)
    tau, c = prior["saas_tau"][0], prior["saas_c"][0]
    prior["lengthscale"] = (1.0 / np.sqrt(tau[:, None] * c), constraints.positive)
    _compare_sites(post, prior, "gp_saas")


def test_without_data_the_saas_gp_reproduces_its_prior():
    """The SAAS prior's half-Cauchy scales (log |Cauchy| has exponential tails) through NUTS. Power: the same
    check on `inference.tempered(GP(space, saas=True), 0.75)` (a proper target, wider than the prior) failed at
    its first site (saas_tau: 82.5% of draws below the prior's 90% quantile, 4.4 standard errors off)."""
    from zoo import GP, Real, Space

    _saas_prior_check(GP(Space([Real(f"x{i}", 0.0, 1.0) for i in range(3)]), saas=True))
