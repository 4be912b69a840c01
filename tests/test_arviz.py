"""ArviZ: the posterior converts to the installed major version's object (DataTree on 1.x, InferenceData on
0.x) with the same groups, names and dims; its log_likelihood group holds each surrogate's exact
leave-one-out terms, so that PSIS-LOO (az.loo, az.compare) is right for GPs. The CI's second job runs the
tests marked `arviz` against ArviZ 1.x."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer import Predictive

import inference
from inference.arviz_io import arviz_major, group_names
from optim.bench import get_problem
from optim.registry import SURROGATES
from tests.conftest import FAST_SAMPLER, fast_sample
from zoo import GP, Integer, Real, Space
from zoo.addtree import AddTree
from zoo.data import bucket_size, make_data
from zoo.gp import gp_cholesky

pytestmark = pytest.mark.arviz

CONDITIONAL = {"addtree", "addtree_shared", "addtree_yj", "addtree_yjw", "jenatton", "independent"}  # registered models of tree spaces
#: registered models that score a warp of y inferred per draw (zoo.base.OutputWarping): not Gaussian in y
WARPED = {"gp_yj", "addtree_yj", "gp_yjw", "addtree_yjw"}


MIXED_NUMERIC = Space([Real("a", 0.0, 1.0), Real("b", -2.0, 2.0), Integer("k", 0, 5)])


def test_to_arviz_groups_dims_and_no_padding(flat2):
    rng = np.random.default_rng(7)
    X = rng.random((9, 2))
    y = X.sum(1) + 0.1 * rng.standard_normal(9)
    post = fast_sample(GP(flat2), X, y, key=8)
    idata = post.to_arviz()
    expected_type = "DataTree" if arviz_major() >= 1 else "InferenceData"
    assert type(idata).__name__ == expected_type
    assert set(group_names(idata)) == {"posterior", "sample_stats", "log_likelihood", "observed_data",
                                       "constant_data"}
    assert list(idata.posterior["lengthscale"].coords["numeric_param"].values) == ["x0", "x1"]
    assert idata.posterior["lengthscale"].dims == ("chain", "draw", "numeric_param")
    assert idata.log_likelihood["y"].shape == (FAST_SAMPLER.num_chains, FAST_SAMPLER.num_samples, 9)
    assert idata.observed_data["y"].shape == (9,)
    assert idata.constant_data["X"].dims == ("obs", "column")
    assert np.allclose(idata.observed_data["y"].values, y)
    assert idata.sample_stats["diverging"].dtype == bool
    for name in ("lp", "acceptance_rate", "step_size", "n_steps", "energy"):
        assert name in idata.sample_stats
    # under each sample: the chain-rule terms sum to the joint log-likelihood of y (user units), and the
    # log_likelihood group holds log p(y_i | y_-i, theta), the Gaussian conditional on the other 8 points
    from scipy.stats import multivariate_normal, norm
    gp = GP(flat2)
    for c, d in [(0, 0), (1, 3)]:
        s = {k: v[c, d] for k, v in post.samples.items()}
        K = np.asarray(gp_cholesky(post.data, s, gp.kernel))[:9, :9]
        K = K @ K.T
        z = (y - post.data.y_mean) / post.data.y_std
        mean = s["mean"] * np.ones(9)
        joint = multivariate_normal(mean, K).logpdf(z) - 9 * np.log(post.data.y_std)
        assert float(post.log_likelihood()[c, d].sum()) == pytest.approx(joint, rel=1e-9)
        for i in range(9):
            o = np.delete(np.arange(9), i)
            w = np.linalg.solve(K[np.ix_(o, o)], K[o, i])
            loc, var = mean[i] + w @ (z[o] - mean[o]), K[i, i] - w @ K[o, i]
            exact = norm(loc, np.sqrt(var)).logpdf(z[i]) - np.log(post.data.y_std)
            assert float(idata.log_likelihood["y"][c, d, i]) == pytest.approx(exact, rel=1e-8, abs=1e-10)



# addtree, addtree_shared, additive and gp_saas score y with ExactGP's likelihood, as gp does: in the slow run only
SAME_LIKELIHOOD_AS_GP = {"addtree", "addtree_shared", "additive", "gp_saas"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SAME_LIKELIHOOD_AS_GP else n
                                  for n in sorted(set(SURROGATES) - WARPED)])
def test_leave_one_out_terms_are_the_conditionals_of_the_joint_likelihood(name):
    """For every registered surrogate and a draw of all its sites from the prior: each leave-one-out term
    equals log p(y_i | y_-i, theta) obtained from the joint alone. The joint (the sum of the chain-rule
    terms) is a quadratic f(t) = A t^2 + B t + C in y_i = y_i + t, read off exactly at t = -1, 0, 1, so
    p(y_i | y_-i) = exp(f(0)) / integral exp(f) = exp(B^2 / (4A)) sqrt(-A / pi). Only float64 rounding of
    sums of ~30 terms of size ~100 separates the two: tolerance 1e-7."""
    space = get_problem("jenatton_small").space if name in CONDITIONAL else MIXED_NUMERIC
    surrogate = SURROGATES[name](space)
    n = 11
    X = space.encode(space.sample(n, seed=1))
    y = np.random.default_rng(0).standard_normal(n)
    data = make_data(X, y, size=bucket_size(n, steps=surrogate.bucket_steps), fill_row=space.fill_row())
    predictive = jax.jit(Predictive(surrogate.model, num_samples=1))  # one compilation, not one per operation
    draw = predictive(jax.random.PRNGKey(3), data)
    sample = {k: v[0] for k, v in draw.items()}

    def joint(shift):  # [n, 3]: the joint log-likelihood with y_i moved by -1, 0, 1 (standardized units)
        def one(i, t):
            return surrogate.log_likelihood(sample, data._replace(y=jnp.asarray(data.y).at[i].add(t))).sum()
        return jax.vmap(lambda i: jax.vmap(lambda t: one(i, t))(shift))(np.arange(n))

    f = np.asarray(jax.jit(joint)(np.array([-1.0, 0.0, 1.0])))
    A, B = (f[:, 2] + f[:, 0] - 2 * f[:, 1]) / 2, (f[:, 2] - f[:, 0]) / 2
    assert np.all(A < 0)
    conditional = B**2 / (4 * A) + 0.5 * np.log(-A / np.pi) - np.log(data.y_std)
    loo = np.asarray(jax.jit(lambda s, d: surrogate.log_likelihood(s, d, loo=True))(sample, data))
    np.testing.assert_allclose(loo[:n], conditional, rtol=0, atol=1e-7)
    assert np.all(loo[n:] == 0)  # padded rows contribute nothing


def _prior_draw_and_data(name, n, key):
    space = get_problem("jenatton_small").space if name in CONDITIONAL else MIXED_NUMERIC
    surrogate = SURROGATES[name](space)
    X = space.encode(space.sample(n, seed=1))
    data = make_data(X, np.random.default_rng(0).standard_normal(n), size=bucket_size(n), fill_row=space.fill_row())
    draw = jax.jit(Predictive(surrogate.model, num_samples=1))(jax.random.PRNGKey(key), data)
    return surrogate, data, {k: v[0] for k, v in draw.items()}


# Add-Tree warps y with the same code as the GP: in the slow run only
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n.startswith("addtree") else n
                                  for n in sorted(WARPED)])
def test_leave_one_out_terms_of_a_warped_likelihood_are_its_conditionals(name):
    """A warped model is not Gaussian in y, so the conditional comes from the joint by quadrature: log p(y_i |
    y_-i) = log p(y) - log of the integral over y_i of p(y) (scipy.integrate.quad over the real line, relative
    error below 1e-9 as it reports it). Tolerance 1e-6 on the log."""
    from scipy import integrate

    n = 7
    surrogate, data, sample = _prior_draw_and_data(name, n, key=4)
    joint = jax.jit(lambda i, t: surrogate.log_likelihood(sample, data._replace(y=jnp.asarray(data.y).at[i].set(t)))
                    .sum())
    full = float(joint(0, data.y[0]))
    loo = np.asarray(jax.jit(lambda s, d: surrogate.log_likelihood(s, d, loo=True))(sample, data))
    for i in range(n):
        mass, _ = integrate.quad(lambda t: np.exp(float(joint(i, t)) - full), -np.inf, np.inf, epsrel=1e-11)
        assert loo[i] + np.log(data.y_std) == pytest.approx(-np.log(mass), abs=1e-6), (i, float(sample["yj_lambda"]))
    assert np.all(loo[n:] == 0)


@pytest.fixture(scope="module")
def two_fits():
    """gp and addtree on the same 30 evaluations with the compare example's fast settings (shared compilation):
    32 draws, as ArviZ 1.x's Pareto smoothing refuses fewer than 25."""
    problem = get_problem("jenatton_small", noise_std=0.05, seed=0)
    configs = problem.space.sobol(30, seed=3)
    X = problem.space.encode(configs)
    y = np.array([problem(c) for c in configs])
    return {name: inference.sample(model, X, y, key=0, num_warmup=80, num_samples=16, num_chains=2, max_tree_depth=5)
            for name, model in [("gp", GP(problem.space)), ("addtree", AddTree(problem.space))]}


def test_loo_and_compare_rank_two_surrogates_on_the_same_data(two_fits):
    """az.loo reads the log_likelihood group: its elpd is the PSIS estimate of sum_i log p(y_i | y_-i), which
    for these draws lies within a few nats of the plain importance-sampling estimate (no smoothing) computed
    here from the same terms; az.compare ranks both models by it."""
    import warnings

    import arviz as az
    from scipy.special import logsumexp

    idatas = {name: post.to_arviz() for name, post in two_fits.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 32 draws: ArviZ warns that Pareto smoothing is unreliable
        loos = {name: az.loo(idata) for name, idata in idatas.items()}
        table = az.compare(idatas)
    assert set(table.index) == {"gp", "addtree"}
    for name, post in two_fits.items():
        ll = post.log_likelihood(loo=True).reshape(-1, len(post.y))  # [S, n]
        # plain IS-LOO: p(y_i | y_-i) ~ 1 / mean_s (1 / p(y_i | y_-i, theta_s))
        is_loo = float(np.sum(-(logsumexp(-ll, axis=0) - np.log(ll.shape[0]))))
        elpd = float(loos[name].elpd_loo if arviz_major() < 1 else loos[name].elpd)
        assert np.isfinite(elpd)
        assert abs(elpd - is_loo) < 0.25 * abs(is_loo) + 5, (name, elpd, is_loo)
