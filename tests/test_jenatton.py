"""Jenatton et al.'s semi-parametric model (001, Section 2): the fast Eq. 3 route against the dense Eq. 4."""

import jax
import numpy as np
import numpyro
import pytest
from scipy.stats import multivariate_normal

from optim.bench.problems import jenatton_small
from zoo.data import make_data
from tests.conftest import FAST_SAMPLER, fast_sample, jitted, within_mc_error
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
    fast = float(jitted(model).log_marginal(data, params))
    n = len(y)
    dense_cov = np.asarray(jitted(model).dense_covariance(data, params))[:n, :n]
    b = np.asarray(jitted(model).leaf_onehot(data.X) @ params["offset"])[:n]
    dense = multivariate_normal(b, dense_cov).logpdf(data.y[:n])
    assert fast == pytest.approx(dense, rel=1e-9)
    # the pointwise (chain-rule) log-likelihood sums to the same value, shifted to user units
    assert float(np.sum(model.log_likelihood(params, data))) == pytest.approx(dense - n * np.log(data.y_std), rel=1e-9)


def test_without_shared_weights_it_is_independent_gps(setup):
    space, X, y, _, params = setup
    model = Jenatton(space, shared=False)
    data = make_data(X, y, fill_row=space.fill_row())
    total = 0.0
    leaf = np.asarray(jitted(model).leaf_onehot(data.X)).argmax(1)[: len(y)]
    K = np.asarray(jitted(model).block_kernel(data.X, data.X, params))[: len(y), : len(y)]
    for p in range(4):
        idx = np.flatnonzero(leaf == p)
        cov = K[np.ix_(idx, idx)] + (params["noise"] + 1e-6 + 1e-8) * np.eye(len(idx))
        total += multivariate_normal(np.full(len(idx), params["offset"][p]), cov).logpdf(data.y[idx])
    assert float(jitted(model).log_marginal(data, params)) == pytest.approx(total, rel=1e-9)
    assert np.all(np.asarray(jitted(model).block_kernel(data.X, data.X, params))[np.ix_(leaf == 0, leaf == 1)] == 0)


@pytest.fixture(scope="module")
def posterior(setup):
    space, X, y, model, _ = setup
    return fast_sample(model, X, y)  # shares its compiled run with the jenatton trace run


@pytest.mark.arviz  # CI runs it again against ArviZ 1.x
def test_sampler_runs_and_predicts(setup, posterior):
    space, X, y, model, _ = setup
    post = posterior
    assert post.samples["c"].shape == (FAST_SAMPLER.num_chains, FAST_SAMPLER.num_samples, model.n_features)
    mean, var = post.predict(X[:5])
    assert mean.shape == (FAST_SAMPLER.num_chains * FAST_SAMPLER.num_samples, 5) and np.all(var > 0)
    # each training value is plausible under the model's own posterior predictive (a mixture over samples):
    # within 4 predictive sds, the variance being the mean latent variance plus the noise (user units) plus
    # the spread of the sample means
    noise = post.samples["noise"].reshape(-1)[:, None] * post.data.y_std**2
    sd = np.sqrt((var + noise).mean(0) + mean.var(0))
    assert np.all(np.abs(mean.mean(0) - y[:5]) < 4 * sd), (mean.mean(0) - y[:5], sd)
    idata = post.to_arviz()
    assert list(idata.posterior["c"].coords["feature"].values) == [
        "root:intercept", "x1=0:intercept", "x1=0:r8", "x1=1:intercept", "x1=1:r9"]
    assert list(idata.posterior["offset"].coords["leaf"].values)[0] == "x1=0,x2=0"


def _dense_terms(model, data, params, n):
    """The Eq. 4 joint written out directly: prior mean b, covariance of y, and Z (real rows only)."""
    b = np.asarray(jitted(model).leaf_onehot(data.X) @ params["offset"])[:n]
    Z = np.asarray(jitted(model).feature_matrix(data.X))[:n]
    Ky = np.asarray(jitted(model).dense_covariance(data, params))[:n, :n]
    return b, Z, Ky


def _stack(params, S=1):
    return {k: np.stack([np.asarray(v)] * S) for k, v in params.items()}


def test_predictions_integrate_c_exactly(setup):
    """Eq. 5 (leaf GP given c plus the c posterior) equals conditioning the dense Eq. 4 GP on y."""
    space, X, y, model, params = setup
    data = make_data(X, y, fill_row=space.fill_row())
    n = len(y)
    b, Z, Ky = _dense_terms(model, data, params, n)
    Xq = space.encode(space.sample(9, seed=11))
    Kq = np.asarray(jitted(model).block_kernel(Xq, data.X, params))[:, :n]
    Zq = np.asarray(jitted(model).feature_matrix(Xq))
    kqx = Kq + params["sigma_c"] ** 2 * Zq @ Z.T
    onehot_q = np.asarray(jitted(model).leaf_onehot(Xq))
    kqq = onehot_q @ params["leaf_variance"] + params["sigma_c"] ** 2 * np.sum(Zq**2, 1)
    bq = onehot_q @ params["offset"]
    mean_dense = bq + kqx @ np.linalg.solve(Ky, data.y[:n] - b)
    var_dense = kqq - np.sum(kqx * np.linalg.solve(Ky, kqx.T).T, 1)
    mean, var = model.predict(_stack(params), data, Xq)
    np.testing.assert_allclose(np.asarray(mean[0]), data.y_mean + data.y_std * mean_dense, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(np.asarray(var[0]), data.y_std**2 * var_dense, rtol=1e-6, atol=1e-10)


def test_path_ei_equals_its_monte_carlo_estimate(setup):
    """Eq. 6 integrated over kernel-parameter samples against draws of c from p(c | y, theta), the
    latter computed from the dense joint of (c, y) rather than the Lambda_c route."""
    from optim.acquisition import EI

    space, X, y, model, params = setup
    data = make_data(X, y, fill_row=space.fill_row())
    n = len(y)
    rng = np.random.default_rng(0)
    samples = [dict(params), dict(params, sigma_c=np.float64(0.3), offset=params["offset"] + 0.2),
               dict(params, noise=np.float64(0.2))]
    stacked = {k: np.stack([np.asarray(s[k]) for s in samples]) for k in params}
    # one row per path, with its shared parameter set to a few values
    rows = space.encode([dict(c, r8=0.3) if "r8" in c else dict(c, r9=0.8) for c in space.sample(40, seed=3)])
    rows = rows[np.unique(np.asarray(jitted(model).leaf_onehot(rows)).argmax(1), return_index=True)[1]]
    mean, var = jax.jit(lambda s, d, r: model.path_predict_prepared(model.prepare(s, d), r))(stacked, data, rows)
    best = float(np.max(mean))  # an incumbent that leaves every path some improvement
    exact = np.asarray(EI()(mean, var, best))
    draws, mc, se2 = 100_000, np.zeros((len(samples), len(rows))), np.zeros(len(rows))
    for k, s in enumerate(samples):
        b, Z, Ky = _dense_terms(model, data, s, n)
        cov_cy = s["sigma_c"] ** 2 * Z.T  # Cov(c, y)
        c_mean = cov_cy @ np.linalg.solve(Ky, data.y[:n] - b)
        c_cov = s["sigma_c"] ** 2 * np.eye(Z.shape[1]) - cov_cy @ np.linalg.solve(Ky, cov_cy.T)
        c = rng.multivariate_normal(c_mean, c_cov, size=draws)
        onehot, features = np.asarray(jitted(model).leaf_onehot(rows)), np.asarray(jitted(model).feature_matrix(rows))
        level = (onehot @ s["offset"])[None] + c @ features.T
        improvement = np.maximum(best - (data.y_mean + data.y_std * level), 0.0)
        mc[k] = improvement.mean(0)
        se2 += improvement.var(0) / draws
    se = np.sqrt(se2) / len(samples)  # standard error of the sample average
    assert len(rows) == 4 and np.all(exact > 1e-4)
    assert np.all(np.abs(exact - mc.mean(0)) < 4 * se), (exact, mc.mean(0), se)


def test_two_step_search_picks_the_best_path_then_its_leaf(setup, posterior):
    """Step 1 equals a brute-force grid over each path's shared parameter; step 2 returns a point of
    that path whose reported value is the leaf acquisition there."""
    from optim.integrated import AcquisitionFunction
    from optim.acquisition import LogEI
    from optim.path_lbfgs import LBFGSConfig
    from optim.conditional_search import two_step_search

    space, X, y, model, _ = setup
    acqf = AcquisitionFunction(posterior, LogEI(), best=float(np.min(y)))
    x, value, i = two_step_search(acqf, space, np.random.default_rng(0), LBFGSConfig(n_raw=64, n_restarts=4))
    path_acqf = acqf.with_moments("path")
    grid = np.linspace(0, 1, 401)
    scores = []
    for path in space.paths:
        rows = np.tile(space.path_row(path), (len(grid), 1))
        rows[:, model.shared_columns(path)[0]] = grid
        scores.append(path_acqf.values(rows).max())
    assert i == int(np.argmax(scores)) and np.sort(scores)[-1] - np.sort(scores)[-2] > 1e-6
    assert int(space.path_index(x[None])[0]) == i
    assert value == pytest.approx(float(acqf.values(x[None])[0]), rel=1e-9, abs=1e-12)
    # the leaf step improves on the incumbent path point it started from
    assert value >= acqf.values(space.path_row(space.paths[i])[None])[0] - 1e-9


def test_categorical_inner_parameters_are_one_hot_features():
    """001 Section 2.4: a categorical shared parameter enters z as a one-hot block."""
    pytest.importorskip("sklearn")
    from optim.bench.problems.ml import mlp_space

    space = mlp_space()
    model = Jenatton(space)
    config = space.sample(1, seed=0)[0]
    config.update(preprocessing="l2_rows", activation="tanh")
    z = np.asarray(jitted(model).feature_matrix(space.encode([config])))[0]
    _, coords = model.arviz_dims()
    labels = dict(zip(coords["feature"], z))
    assert labels["root:preprocessing=l2_rows"] == 1 and labels["root:preprocessing=none"] == 0
    assert labels["root:activation=tanh"] == 1 and sum(v for k, v in labels.items() if "activation" in k) == 1
    assert len(z) == model.n_features == len(coords["feature"])
    with pytest.raises(ValueError, match="categorical"):
        from zoo.space import Categorical, Node, Space
        Jenatton(Space(Node("root", choice="a", children={
            0: Node("l", params=(Categorical("k", ("u", "v")),)), 1: Node("r")})))


def test_c_is_drawn_from_its_exact_conditional(setup):
    """The non-centred site: c = c_mean + A c_white with A A' = Cov(c | y, theta) computed from the dense
    joint of (c, y), so c | y, theta ~ N(c_mean, Lambda_c^-1) exactly as the centred form (001 Sec. 2.2)."""
    space, X, y, model, params = setup
    data = make_data(X, y, fill_row=space.fill_row())
    n, d = len(y), model.n_features

    def c_of(white):
        values = {**params, "c_white": white}
        trace = numpyro.handlers.trace(numpyro.handlers.substitute(model.model, data=values)).get_trace(data)
        return np.asarray(trace["c"]["value"])
    c_mean = c_of(np.zeros(d))
    A = np.stack([c_of(e) - c_mean for e in np.eye(d)], axis=1)
    b, Z, Ky = _dense_terms(model, data, params, n)
    cov_cy = params["sigma_c"] ** 2 * Z.T
    np.testing.assert_allclose(c_mean, cov_cy @ np.linalg.solve(Ky, data.y[:n] - b), rtol=1e-6, atol=1e-9)
    exact = params["sigma_c"] ** 2 * np.eye(d) - cov_cy @ np.linalg.solve(Ky, cov_cy.T)
    np.testing.assert_allclose(A @ A.T, exact, rtol=1e-6, atol=1e-10)


def _prior_reproduction(num_samples, num_chains):
    """No data: every site follows its prior (lengthscale, leaf variance, offset, noise, sigma_c) and
    c / sigma_c is standard normal."""
    import inference
    from zoo.priors import LENGTHSCALE_SCALE, lengthscale_loc

    space = jenatton_small().space
    model = Jenatton(space)
    post = inference.sample(model, np.zeros((0, space.dim)), np.zeros(0), key=3, num_warmup=300,
                            num_samples=num_samples, num_chains=num_chains)
    s = post.samples
    for j, leaf in enumerate(model.leaves):  # one numeric parameter per leaf of jenatton_small
        loc = lengthscale_loc(len(leaf.numeric_cols))
        within_mc_error(np.log(s["lengthscale"][..., j]), loc, LENGTHSCALE_SCALE, loc)
    for p in range(len(model.leaves)):
        within_mc_error(np.log(s["leaf_variance"][..., p]), 0.0, 1.0, 0.0)
        within_mc_error(s["offset"][..., p], 0.0, 1.0, 0.0)
    within_mc_error(np.log(s["noise"]), -4.0, 1.0, -4.0)
    within_mc_error(np.log(s["sigma_c"]), -1.0, 1.0, -1.0)
    for k in range(model.n_features):
        within_mc_error(s["c"][..., k] / s["sigma_c"], 0.0, 1.0, 0.0)
    assert post.stats["diverging"].mean() < 0.01


def test_without_data_the_sampler_reproduces_the_prior():
    _prior_reproduction(num_samples=500, num_chains=2)


@pytest.mark.slow
def test_without_data_the_prior_is_reproduced_at_a_size_that_catches_a_funnel():
    """4 x 3000 draws: the centred c gave mean log sigma_c -0.840 +- 0.034 here (z = 4.4, ESS 749); the
    non-centred c gives -0.998 (ESS 24k)."""
    _prior_reproduction(num_samples=3000, num_chains=4)


@pytest.mark.parametrize("shared", [True, False])
def test_a_flat_space_has_no_shared_features_and_still_fits_and_predicts(shared):
    """A space without decisions has no inner node: the tree GP is one leaf GP, with a zero-length c."""
    from zoo import Real, Space
    space = Space([Real("x0", 0.0, 1.0), Real("x1", 0.0, 1.0)])
    model = Jenatton(space, shared=shared)
    X = space.encode(space.sample(8, seed=0))
    assert model.feature_matrix(X).shape == (8, 0)
    post = fast_sample(model, X, np.sin(3 * X[:, 0]) + X[:, 1])
    flat = post.flat_samples()  # merges chains and draws, the zero-length c included
    assert all(v.shape[0] == FAST_SAMPLER.num_chains * FAST_SAMPLER.num_samples for v in flat.values())
    mean, var = post.predict(X[:3])
    assert mean.shape == var.shape == (FAST_SAMPLER.num_chains * FAST_SAMPLER.num_samples, 3) and np.all(var > 0)
