"""Sampler correctness: prior reproduction without data, parameter recovery, moves, warm starts, ArviZ."""

import math

import arviz as az
import jax
import numpy as np
import pytest

import inference
from inference.moves import flip_one_bit
from tests.conftest import fast_sample, gp_prior_draw, within_mc_error
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
    # the data identify the short lengthscale: the posterior sd of its log is below a quarter of the prior's
    # (sqrt 3), i.e. 30 points carry 16 prior-equivalents of information on it (it was 0.23 against the
    # bound 0.43; with ESS > 1000 the sd estimate's Monte Carlo error is about 2%, far inside that margin)
    log_short = np.log(post.samples["lengthscale"][..., 0])
    assert float(az.ess(log_short)) > 1000 and log_short.std() < math.sqrt(3) / 4, log_short.std()
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


@pytest.fixture(scope="module")
def warm_toy(flat2):
    """A cold 16-chain fit on 12 points and the data with a 13th point: the BO loop's warm-start situation."""
    rng = np.random.default_rng(6)
    X = rng.random((12, 2))
    y = np.sin(4 * X[:, 0]) + 0.5 * X[:, 1]
    first = inference.sample(GP(flat2), X, y, key=1, num_warmup=150, num_samples=10, num_chains=16, thinning=2,
                             max_tree_depth=5)
    return first, np.vstack([X, [[0.5, 0.5]]]), np.append(y, 0.9)


_WARM: dict = {}


def _warm(flat2, warm_toy, num_warmup):
    """The warm-started run after `num_warmup` sweeps (made once per length for the tests below)."""
    if num_warmup not in _WARM:
        first, X, y = warm_toy
        _WARM[num_warmup] = inference.sample(GP(flat2), X, y, key=2, num_warmup=num_warmup, num_samples=30,
                                             num_chains=16, max_tree_depth=5, init=first)
    return _WARM[num_warmup]


# 20 sweeps in the slow run only (suite time: a warm run compiled for it alone); 40 shares its run with the test below
@pytest.mark.parametrize("num_warmup", [pytest.param(20, marks=pytest.mark.slow), 40])
def test_after_a_warm_start_every_chain_accepts_at_a_sane_rate(flat2, warm_toy, num_warmup):
    """Every chain's mean acceptance over 30 sweeps is at least 0.5 (target 0.8). A chain with an adapted
    step size has per-sweep acceptance sd below 0.25, so its 30-sweep mean lies within 4 * 0.25 / sqrt(30)
    = 0.18 of its expectation, leaving 0.12 for dual averaging's own miss of the target. NumPyro's
    windowed schedule, which restarts the step size 10x too large at the last window's end, gave chains at
    0.00 (20 sweeps) and 0.35 (40 sweeps) here."""
    first = warm_toy[0]
    again = _warm(flat2, warm_toy, num_warmup)
    acceptance = again.stats["acceptance_rate"].mean(1)
    assert np.all(acceptance > 0.5), np.sort(acceptance)[:4]
    assert np.all(np.isfinite(again.stats["lp"]))
    with pytest.raises(ValueError, match="chains"):
        inference.sample(GP(flat2), warm_toy[1], warm_toy[2], key=3, num_warmup=10, num_samples=20, num_chains=3,
                         init=first)


def test_warm_started_draws_follow_the_posterior_of_a_long_cold_run(flat2, warm_toy):
    """16 chains x 30 draws after 40 warm-start sweeps against 4 x 600 cold draws on the same data (SETTINGS,
    compiled once for this module): each
    site's posterior mean (log scale) agrees within 4 standard errors of the difference, each from its ESS."""
    _, X, y = warm_toy
    warm = _warm(flat2, warm_toy, 40)
    cold = inference.sample(GP(flat2), X, y, key=4, **SETTINGS)
    for site in ("lengthscale", "outputscale", "noise", "mean"):
        a, b = warm.samples[site], cold.samples[site]
        a, b = (np.log(a), np.log(b)) if site != "mean" else (a, b)
        a, b = a.reshape(a.shape[:2] + (-1,)), b.reshape(b.shape[:2] + (-1,))
        for j in range(a.shape[-1]):
            se = math.sqrt(a[..., j].var() / float(az.ess(a[..., j])) + b[..., j].var() / float(az.ess(b[..., j])))
            assert abs(a[..., j].mean() - b[..., j].mean()) < 4 * se, (site, j, a[..., j].mean(), b[..., j].mean(), se)


def test_bad_sampler_arguments(flat2):
    gp = GP(flat2)
    with pytest.raises(ValueError, match=r"\[n, 2\]"):
        inference.sample(gp, np.zeros((3, 5)), np.zeros(3), key=0)
    with pytest.raises(ValueError, match="num_samples"):
        inference.sample(gp, np.zeros((3, 2)), np.zeros(3), key=0, num_samples=0)
    with pytest.raises(ValueError, match="unknown discrete sites"):
        inference.sample(gp, np.zeros((3, 2)), np.zeros(3), key=0, moves={"trees": flip_one_bit})


# the cold runs in the slow run only (suite time: a compilation each); the warm runs start from the suite's shared
# cold run; BARK's moves-only chains run batched, cold and warm, in the default run
@pytest.mark.parametrize("cold_too", [pytest.param(True, marks=pytest.mark.slow), False])
def test_sequential_and_batched_chains_are_the_same_chains(flat2, cold_too):
    """NUTS chains run in sequence on up to SEQUENTIAL_MAX_ROWS padded rows and batched (vmap) above. With the
    same key, a warm-started run of 2 chains from one state (and a cold run) gives the same draws either way,
    to rounding: the extra padding rows change the likelihood's sums in the last bits only (test_gp checks
    padding), while chains that got each other's keys or states would differ at O(1)."""
    from inference.sampler import SEQUENTIAL_MAX_ROWS

    rng = np.random.default_rng(11)
    X = rng.random((8, 2))
    y = np.sin(6 * X[:, 0]) + X[:, 1]
    kw = dict(num_samples=4, num_chains=2, thinning=1, max_tree_depth=3)
    seq, bat = SEQUENTIAL_MAX_ROWS, SEQUENTIAL_MAX_ROWS + 1  # either side of the switch
    start = fast_sample(GP(flat2), X, y, key=3)  # the warm start: the suite's compiled cold run on 8 rows
    pairs = [tuple(inference.sample(GP(flat2), X, y, 4, num_warmup=3, size=size, init=start, **kw)
                   for size in (seq, bat))]
    if cold_too:
        pairs.append(tuple(inference.sample(GP(flat2), X, y, 3, num_warmup=6, size=size, **kw) for size in (seq, bat)))
    for a, b in pairs:
        assert not np.allclose(a.samples["outputscale"][0], a.samples["outputscale"][1])  # two chains
        for site in ("lengthscale", "outputscale", "noise", "mean"):
            np.testing.assert_allclose(a.samples[site], b.samples[site], rtol=1e-6, err_msg=site)


def test_saas_posterior_finds_the_active_inputs():
    """GP(saas=True) on a draw that varies along 2 of 6 inputs: the 95% intervals of the two active lengthscales
    hold the truth, and every inert input's posterior median lengthscale is at least 10 times the longer active
    one's (a sampler that ignored the data would leave all six at the prior's median, about 3)."""
    from zoo import Real, Space
    rng = np.random.default_rng(8)
    X = rng.random((40, 6))
    true_ls = np.array([0.25, 0.4, 1e6, 1e6, 1e6, 1e6])
    y = gp_prior_draw(X, true_ls, 1.0, 1e-4, rng)
    space = Space([Real(f"x{i}", 0.0, 1.0) for i in range(6)])
    post = inference.sample(GP(space, saas=True), X, y, key=9, num_warmup=300, num_samples=300, num_chains=2)
    ls = np.asarray(post.samples["lengthscale"]).reshape(-1, 6)
    lo, hi = np.percentile(ls[:, :2], [2.5, 97.5], axis=0)
    assert np.all(lo < true_ls[:2]) and np.all(true_ls[:2] < hi), (lo, hi)
    median = np.median(ls, axis=0)
    assert median[2:].min() > 10 * median[:2].max(), median
    assert post.stats["diverging"].mean() < 0.01
    posterior = post.to_arviz().posterior  # what an ArviZ user sees: the shrinkage and the implied lengthscales
    assert posterior["saas_c"].dims[2:] == ("numeric_param",) and posterior["saas_tau"].dims == ("chain", "draw")
    assert list(posterior["lengthscale"].coords["numeric_param"].values) == list(space.names)


def _chains_posterior(flat2, lp_medians, tag: float, X=None):
    """A Posterior of len(lp_medians) chains x 3 draws with the given median log density per chain, every group
    marked chain by chain (value tag + chain index), on 4 fixed points of flat2 unless X is given."""
    from inference.posterior import Posterior, WarmStart
    from zoo.data import make_data

    X = np.array([[0.1, 0.2], [0.5, 0.5], [0.9, 0.3], [0.3, 0.8]]) if X is None else X
    y = X.sum(1)
    C = len(lp_medians)
    mark = tag + np.arange(C, dtype=float)
    lp = np.asarray(lp_medians, float)[:, None] + np.array([-1.0, 0.0, 1.0])[None, :]
    return Posterior(GP(flat2), make_data(X, y, size=8), X, y,
                     samples={"noise": np.repeat(mark[:, None], 3, 1)},
                     stats={"lp": lp, "step_size": np.repeat(mark[:, None], 3, 1)},
                     move_stats={},
                     last_state=WarmStart({"noise": mark}, {}, mark, np.repeat(mark[:, None], 2, 1)))


def test_best_chains_keeps_the_highest_median_log_densities_chain_by_chain(flat2):
    warm = _chains_posterior(flat2, [-50.0, -12.0], tag=0.0)
    cold = _chains_posterior(flat2, [-11.0, -30.0], tag=10.0)
    assert list(inference.best_chain_indices([warm, cold], 2)) == [1, 2]  # warm chain 1, cold chain 0
    kept = inference.best_chains([warm, cold], 2)
    np.testing.assert_array_equal(kept.samples["noise"][:, 0], [1.0, 10.0])  # every group follows its chain
    np.testing.assert_array_equal(np.median(kept.stats["lp"], 1), [-12.0, -11.0])
    np.testing.assert_array_equal(kept.stats["step_size"][:, 0], [1.0, 10.0])
    np.testing.assert_array_equal(kept.last_state.step_size, [1.0, 10.0])
    np.testing.assert_array_equal(kept.last_state.z["noise"], [1.0, 10.0])
    np.testing.assert_array_equal(kept.last_state.inverse_mass_matrix[:, 0], [1.0, 10.0])
    assert kept.num_chains == 2 and kept.num_samples == 3
    # ties keep the earlier chain; a chain whose log density is not finite ranks last
    tie = _chains_posterior(flat2, [-12.0, np.nan], tag=20.0)
    assert list(inference.best_chain_indices([warm, tie], 2)) == [1, 2]
    assert list(inference.best_chain_indices([tie, warm], 1)) == [0]


def test_best_chains_refuses_runs_it_cannot_compare(flat2):
    warm = _chains_posterior(flat2, [-5.0, -6.0], tag=0.0)
    other_data = _chains_posterior(flat2, [-1.0], tag=1.0, X=np.array([[0.2, 0.2], [0.4, 0.4], [0.6, 0.1], [0.9, 0.9]]))
    with pytest.raises(ValueError, match="different data"):
        inference.best_chains([warm, other_data], 2)
    with pytest.raises(ValueError, match=r"num_chains must be an integer in \[1, 2\]"):
        inference.best_chains([warm], 3)
    with pytest.raises(ValueError, match="at least one"):
        inference.best_chains([], 1)
