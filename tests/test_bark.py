"""BARK (003): the BART tree prior, tree MH moves, the forest kernel, the MIP acquisition optimizer."""

import math

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from inference import sample
from inference.moves.tree_moves import forest_sweep, propose
from optim.acquisition import UCB
from optim.integrated import AcquisitionFunction
from optim.mip import MIPConfig, optimize_mip
from zoo import Categorical, Integer, Real, Space
from zoo.bark import BARK, ForestKernelLikelihood, noise_prior
from zoo.data import make_data
from zoo.heap_trees import (CHANGE, GROW, PRUNE, BARTPrior, TreeSpec, all_domains, category_index, exists, leaf_count,
                            compiled_router, node_domain, route, rule_log_prob, shared_leaf_fraction, singly_internal,
                            split_probabilities, tree_log_prob)
from zoo.linalg import JITTER, NOISE_FLOOR

MIXED = Space([Real("a", 0.0, 1.0), Real("b", -2.0, 3.0), Integer("k", 0, 3), Categorical("c", ("x", "y", "z", "w"))])


@pytest.fixture(scope="module")
def prior_forests():
    spec = TreeSpec.from_space(MIXED, max_depth=4)
    return spec, np.asarray(jax.jit(BARTPrior(spec, 400).sample)(jax.random.PRNGKey(0)))


class Jitted:
    """The tree helpers of one spec, jitted once (eager dispatch of their loops costs seconds per call)."""

    def __init__(self, spec):
        self.tree_log_prob = jax.jit(lambda t: tree_log_prob(spec, t))
        self.node_domain = jax.jit(lambda t, i: node_domain(spec, t, i))
        self.rule_log_prob = jax.jit(lambda lo, hi, reach, row: rule_log_prob(spec, lo, hi, reach, row))
        self.singly_internal = jax.jit(lambda t: singly_internal(spec, t))
        self.exists = jax.jit(lambda t: exists(spec, t))
        self.growable = jax.jit(lambda t: exists(spec, t) & (t[:, 0] < 0.5)
                                & (split_probabilities(spec, *all_domains(spec, t), jnp.asarray(spec.depth)) > 0))


def test_noise_prior_puts_q_below_one():
    d = noise_prior(3.0, 0.9)
    ig = stats.invgamma(float(d.concentration), scale=float(d.rate))
    assert ig.cdf(1.0) == pytest.approx(0.9, abs=1e-12)
    assert float(d.concentration) == 1.5 and float(d.rate) == pytest.approx(0.29219, abs=1e-5)


def test_the_bo_loop_maximizes_ucb_with_the_authors_kappa_unless_told_otherwise():
    """kappa = sqrt(beta) = 1.96 fixed (003's public code), not UCB's own beta_t; a user's choice still wins."""
    from optim import BayesOpt

    space = Space([Real("a", 0.0, 1.0), Categorical("c", ("x", "y"))])
    assert BayesOpt(space, "bark").acquisition == UCB(beta=3.8416)  # 1.96 ** 2
    assert BayesOpt(space, "bark", acquisition="ucb").acquisition == UCB()


def test_prior_draws_are_valid_trees(prior_forests):
    spec, forests = prior_forests
    lp = np.asarray(jax.jit(jax.vmap(lambda t: tree_log_prob(spec, t)))(jnp.asarray(forests)))
    assert np.all(np.isfinite(lp))
    # categorical splits: both sides keep at least one of the categories that reach the node
    jit = Jitted(spec)
    for tree in forests[:100]:
        for i in np.flatnonzero(np.asarray(jit.exists(tree)) & (tree[:, 0] > 0.5)):
            lo, hi, reach = (np.asarray(a) for a in jit.node_domain(jnp.asarray(tree), i))
            f = int(tree[i, 1])
            if spec.kinds[f] == 2:
                left = reach[f] & (tree[i, 3:] > 0.5)
                assert 0 < left.sum() < reach[f].sum()
            else:
                assert lo[f] < tree[i, 2] < hi[f]


def test_each_chain_starts_from_its_own_prior_draw():
    """Over-dispersed starts: chains get different forests and noises, each a valid prior draw, so r_hat
    compares chains that began apart."""
    s = BARK(MIXED, num_trees=5, max_depth=4)
    data = make_data(np.zeros((0, MIXED.dim)), np.zeros(0), size=8, fill_row=MIXED.fill_row())
    starts = jax.jit(jax.vmap(lambda k: s.init_discrete(k, data)))(jax.random.split(jax.random.PRNGKey(0), 4))
    noise, forests = np.asarray(starts["noise"]), np.asarray(starts["forest"])
    assert len(np.unique(noise)) == 4 and np.all(noise > 0)
    assert len({f.tobytes() for f in forests}) == 4
    lp = jax.jit(jax.vmap(jax.vmap(lambda t: tree_log_prob(s.spec, t))))(jnp.asarray(forests))
    assert np.all(np.isfinite(np.asarray(lp)))


def _walk_to_leaf(spec, tree, x) -> int:
    """Heap index of the leaf that row x reaches, by a plain Python walk (independent of route())."""
    node = 0
    while tree[node, 0] > 0.5:
        f = int(tree[node, 1])
        if spec.kinds[f] == 2:
            left = tree[node, 3 + int(category_index(spec, x)[f])] > 0.5
        else:
            left = x[f] <= tree[node, 2]
        node = 2 * node + (1 if left else 2)
    return node


def test_forest_kernel_matches_a_direct_loop_and_is_psd(prior_forests):
    spec, forests = prior_forests
    forest = forests[:20]
    X = MIXED.encode(MIXED.sample(30, seed=3))
    K = np.asarray(jax.jit(shared_leaf_fraction)(*(2 * [compiled_router(spec)(jnp.asarray(forest), jnp.asarray(X))])))
    direct = np.zeros((30, 30))
    for tree in forest:
        leaf = np.array([_walk_to_leaf(spec, tree, x) for x in X])
        direct += leaf[:, None] == leaf[None, :]
    np.testing.assert_allclose(K, direct / len(forest), atol=1e-12)
    assert np.linalg.eigvalsh(K).min() > -1e-10
    np.testing.assert_allclose(np.diag(K), 1.0)


def test_grow_from_a_stump_has_the_appendix_h_ratio():
    """Two real features: w0 = 1 and w1* = 1, and the rule terms cancel (Pr(rule) = 1/2 times the threshold
    density), so Eq. 6 x Eq. 7 = alpha (1 - alpha 2^-beta)^2 / (1 - alpha) whatever rule is drawn."""
    spec = TreeSpec.from_space(Space([Real("a", 0.0, 1.0), Real("b", 0.0, 1.0)]), max_depth=4, alpha=0.9, beta=1.5)
    stump = jnp.zeros((spec.n_nodes, spec.width))
    expected = math.log(0.9 * (1 - 0.9 * 2**-1.5) ** 2 / (1 - 0.9))
    prop = jax.jit(lambda k, t: propose(spec, k, t))
    for seed in range(20):
        p = prop(jax.random.PRNGKey(seed), stump)
        if int(p.kind) == GROW:
            assert float(p.log_prior_ratio + p.log_transition_ratio) == pytest.approx(expected, abs=1e-12)
            back = prop(jax.random.PRNGKey(1000 + seed), p.tree)
            if int(back.kind) == PRUNE:  # the inverse move has the inverse ratio
                assert float(back.log_prior_ratio + back.log_transition_ratio) == pytest.approx(-expected, abs=1e-12)
        else:
            assert not bool(p.possible)  # a stump cannot be pruned or changed


def test_proposals_are_valid_and_their_prior_ratio_is_exact(prior_forests):
    spec, forests = prior_forests
    counts = {GROW: 0, PRUNE: 0, CHANGE: 0}
    prop = jax.jit(lambda k, t: propose(spec, k, t))
    jit = Jitted(spec)
    for s in range(150):
        tree = jnp.asarray(forests[s])
        p = prop(jax.random.PRNGKey(s), tree)
        if not bool(p.possible):
            continue
        counts[int(p.kind)] += 1
        new_lp, old_lp = float(jit.tree_log_prob(p.tree)), float(jit.tree_log_prob(tree))
        assert np.isfinite(new_lp)  # every proposed tree is a valid tree (rules inside their sub-domains)
        assert float(p.log_prior_ratio) == pytest.approx(new_lp - old_lp, abs=1e-9)
        # transition ratio: recount the targets of the move and its inverse by hand
        def n_growable(t):
            return int(np.sum(np.asarray(jit.growable(t))))
        i = int(p.node)
        lo, hi, reach = jit.node_domain(tree, i)
        if int(p.kind) == GROW:
            expected = (math.log(n_growable(tree)) - float(jit.rule_log_prob(lo, hi, reach, p.tree[i]))
                        - math.log(int(np.sum(np.asarray(jit.singly_internal(p.tree))))))
        elif int(p.kind) == PRUNE:
            expected = (math.log(int(np.sum(np.asarray(jit.singly_internal(tree))))) - math.log(n_growable(p.tree))
                        + float(jit.rule_log_prob(lo, hi, reach, tree[i])))
        else:
            expected = float(jit.rule_log_prob(lo, hi, reach, tree[i]) - jit.rule_log_prob(lo, hi, reach, p.tree[i]))
        assert float(p.log_transition_ratio) == pytest.approx(expected, abs=1e-9)
    assert min(counts.values()) >= 10


def test_lowrank_update_agrees_with_a_fresh_cholesky(prior_forests):
    spec, forests = prior_forests
    X = MIXED.encode(MIXED.sample(40, seed=5))
    data = make_data(X, np.sin(3 * X[:, 0]) + X[:, 2], size=64)
    m, noise = 20, jnp.array(0.05)
    forest = jnp.asarray(forests[:m])
    leaves = compiled_router(spec)(forest, data.X)
    plug = {u: ForestKernelLikelihood(m, u, noise, data.mask, data.y) for u in ("lowrank", "cholesky")}
    init = {u: jax.jit(plug[u].init) for u in plug}
    low, chol = init["lowrank"](leaves), init["cholesky"](leaves)
    prop = jax.jit(lambda k, t: propose(spec, k, t))
    route_rows = jax.jit(lambda t: route(spec, t, data.X))
    delta = {u: jax.jit(plug[u].delta) for u in plug}
    checked = 0
    for s in range(40):
        t = s % m
        p = prop(jax.random.PRNGKey(s), forest[t])
        if not bool(p.possible):
            continue
        new_t = route_rows(p.tree)
        d_low, low_new = delta["lowrank"](low, t, p.kind, p.node, leaves[t], new_t)
        d_chol, chol_new = delta["cholesky"](chol, t, p.kind, p.node, leaves[t], new_t)
        assert float(d_low) == pytest.approx(float(d_chol), abs=1e-8)
        # accept every move: the cached inverse keeps tracking the exact one
        forest, leaves = forest.at[t].set(p.tree), leaves.at[t].set(new_t)
        low, chol = low_new, chol_new
        checked += 1
    fresh = init["lowrank"](leaves)
    np.testing.assert_allclose(np.asarray(low.Ainv), np.asarray(fresh.Ainv), atol=1e-7)
    assert float(low.logdet) == pytest.approx(float(fresh.logdet), abs=1e-8)
    assert checked >= 25


@pytest.mark.slow  # suite time (two compiled sweeps); the default route's updates are checked against a fresh
# factorization per proposal, the cholesky route's computation, by the test above in the default run
def test_both_likelihood_routes_give_the_same_chain():
    X = MIXED.encode(MIXED.sample(20, seed=1))
    y = np.cos(4 * X[:, 0])
    forests = []
    for update in ("lowrank", "cholesky"):
        s = BARK(MIXED, num_trees=8, max_depth=4, update=update)
        data = make_data(X, y)
        ctx = s.move_context(data, {}, {"forest": jnp.zeros(s.forest_prior().event_shape), "noise": jnp.array(0.1)})
        sweep = jax.jit(lambda k, f, ctx=ctx: forest_sweep(k, f, None, ctx))
        f = ctx.forest
        for k in range(10):
            f, _ = sweep(jax.random.PRNGKey(k), f)
        forests.append(np.asarray(f))
    np.testing.assert_array_equal(forests[0], forests[1])


def _ess_z(draws, target):
    """z-score of the mean of `draws` [chains, draws] against `target`, with ArviZ's effective sample size."""
    ess = float(az.ess(np.asarray(draws, dtype=np.float64)[None] if draws.ndim == 1 else draws))
    return (np.mean(draws) - target) / (np.std(draws) / math.sqrt(ess) + 1e-300), ess


@pytest.mark.slow  # suite time; the moves' exact prior ratios are checked in the default run
@pytest.mark.arviz  # CI runs it again against ArviZ 1.x
def test_without_data_the_chains_reproduce_the_prior(prior_forests):
    """No observations: grow / prune / change must leave the BART prior invariant and the noise walk
    the inverse-gamma prior. Compared with direct prior draws; tolerances from the chains' ESS."""
    spec, direct = prior_forests
    s = BARK(MIXED, num_trees=5, max_depth=4)
    post = sample(s, np.zeros((0, MIXED.dim)), np.zeros(0), 7, num_warmup=100, num_samples=600, num_chains=4,
                  thinning=2)
    leaves = np.asarray(leaf_count(spec, post.samples["forest"]))  # [C, S, m]
    ref = np.asarray(leaf_count(spec, direct))
    ref_more = np.asarray(leaf_count(spec, jax.jit(BARTPrior(spec, 20000).sample)(jax.random.PRNGKey(9))))
    ref = np.concatenate([ref, ref_more])
    for k in (1, 2, 3, 4):  # P(leaves == k) and P(leaves > 4), per-tree indicators averaged over trees
        ind = (leaves == k).mean(-1) if k < 4 else (leaves >= 4).mean(-1)
        target = (ref == k).mean() if k < 4 else (ref >= 4).mean()
        z, ess = _ess_z(ind, target)
        assert abs(z) < 4.5, (k, ind.mean(), target, ess)
    noise = post.samples["noise"]
    ig = stats.invgamma(1.5, scale=float(noise_prior().rate))
    for q in (0.1, 0.5, 0.9):
        z, ess = _ess_z((noise < ig.ppf(q)).astype(float), q)
        assert abs(z) < 4.5, (q, (noise < ig.ppf(q)).mean(), ess)
    idata = post.to_arviz()
    for name in ("noise", "leaves", "depth", "total_leaves", "splits"):
        assert name in idata.posterior
    assert idata.posterior["leaves"].dims[-1] == "tree" and list(idata.posterior["splits"].coords["feature"].values) == MIXED.names
    for name in ("accept_grow", "accept_prune", "accept_change", "accept_noise"):
        assert name in idata.sample_stats
    summary = az.summary(idata, var_names=["noise", "total_leaves"], kind="diagnostics")
    assert np.all(summary["r_hat"] < 1.1)


class _NoObservations:
    """The noise walk's context with no data: its target is the noise prior alone."""

    def __init__(self, prior):
        self.noise_prior = prior

    def noise_free_kernel(self):
        return jnp.zeros((1, 1))

    def noise_loglik(self, K, noise):
        return jnp.zeros(())


def test_without_data_the_noise_walk_reproduces_the_noiseless_lognormal_prior():
    """deterministic=True gives BARK the zoo's LogNormal(NOISELESS_PRIOR) on the noise variance; the walk on log
    noise must leave it invariant. 4 chains x 3000 sweeps from the prior's median; z-scores of the mean of log noise
    and of P(log noise < loc +- scale) against the LogNormal, with ArviZ's ESS (|z| < 4.5: a 1-in-10^5 miss for a
    correct walk). Dropping the walk's Jacobian term log(v) moves log noise to N(loc - scale^2, scale^2), a shift of
    one prior sd: |z| of about 45 at this ESS (checked by hand once)."""
    from inference.moves.noise import noise_walk
    from zoo.base import NOISELESS_PRIOR

    s = BARK(MIXED).noiseless()
    assert s.noise_prior == NOISELESS_PRIOR and BARK(MIXED).noise_prior is None  # the original keeps 003's prior
    loc, scale = NOISELESS_PRIOR
    context = _NoObservations(s.noise_dist)

    @jax.jit
    def chain(key):
        def sweep(v, k):
            v, _ = noise_walk(k, v, None, context)
            return v, v
        return jax.lax.scan(sweep, jnp.exp(loc), jax.random.split(key, 3000))[1]

    log_noise = np.log(np.asarray(jax.vmap(chain)(jax.random.split(jax.random.PRNGKey(4), 4))))  # [4, 3000]
    z, ess = _ess_z(log_noise, loc)
    assert abs(z) < 4.5, (log_noise.mean(), ess)
    for edge, target in ((loc - scale, stats.norm.cdf(-1.0)), (loc + scale, stats.norm.cdf(1.0))):
        z, ess = _ess_z((log_noise < edge).astype(float), target)
        assert abs(z) < 4.5, (edge, (log_noise < edge).mean(), target, ess)


def test_the_noiseless_form_is_its_own_model_and_bad_noise_priors_are_refused():
    """Its own compiled identity (config_key) and journal record; the BO loop switches to it only when told."""
    from optim import BayesOpt
    from zoo.base import NOISELESS_PRIOR

    plain, exact = BARK(MIXED), BARK(MIXED).noiseless()
    assert plain.config_key() != exact.config_key() and "noise_prior" not in plain.options()
    assert exact.options()["noise_prior"] == list(NOISELESS_PRIOR)
    assert float(exact.noise_dist.loc) == NOISELESS_PRIOR[0] and float(exact.noise_dist.scale) == NOISELESS_PRIOR[1]
    assert BayesOpt(MIXED, "bark", deterministic=True).surrogate.noise_prior == NOISELESS_PRIOR
    assert BayesOpt(MIXED, "bark").surrogate.noise_prior is None
    for bad in [(0.0, 0.0), (0.0, -1.0), (1.0, 2.0, 3.0)]:
        with pytest.raises(ValueError, match="noise_prior must be"):
            BARK(MIXED, noise_prior=bad)


@pytest.fixture(scope="module")
def small_bark_acqf():
    space = Space([Real("a", 0.0, 1.0), Integer("k", 0, 4), Categorical("c", ("x", "y", "z"))])
    X = space.encode(space.sample(12, seed=2))
    y = np.where(X[:, 0] > 0.6, 1.0, 0.0) + 0.3 * X[:, 1] - 0.5 * (X[:, 2] == 1)
    s = BARK(space, num_trees=3, max_depth=3)
    # test_calibration's reduced BARK calibration settings on the same model and bucket: one compiled run for both
    post = sample(s, X, y, 3, num_warmup=150, num_samples=8, num_chains=2, thinning=25)
    return space, AcquisitionFunction(post, UCB(beta=2.0), best=float(y.min()))


def test_predictions_equal_the_direct_gp_formulas(small_bark_acqf):
    """The table-based predict (sums of per-leaf rows) against Eq. 10b-c written out with the kernel matrix."""
    space, acqf = small_bark_acqf
    post, s = acqf.posterior, acqf.surrogate
    Xq = space.encode(space.sample(9, seed=4))
    mean, var = post.predict(Xq)
    d = post.data
    n = len(post.y)
    router = compiled_router(s.spec)
    for i, (forest, noise) in enumerate(zip(post.flat_samples()["forest"], post.flat_samples()["noise"])):
        lx, lq = np.asarray(router(forest, d.X[:n])), np.asarray(router(forest, Xq))
        K = (lx[:, :, None] == lx[:, None, :]).mean(0) + (noise + NOISE_FLOOR + JITTER) * np.eye(n)
        k = (lx[:, :, None] == lq[:, None, :]).mean(0)
        ys = (post.y - d.y_mean) / d.y_std
        m_direct = d.y_mean + d.y_std * k.T @ np.linalg.solve(K, ys)
        v_direct = d.y_std**2 * (1.0 - np.sum(k * np.linalg.solve(K, k), axis=0))
        tol = 100 * np.finfo(float).eps * np.linalg.cond(K) * d.y_std * max(1.0, np.abs(ys).max())  # solve error
        np.testing.assert_allclose(mean[i], m_direct, rtol=0, atol=tol)
        np.testing.assert_allclose(var[i], np.maximum(v_direct, 1e-12 * d.y_std**2), rtol=0, atol=tol * d.y_std)


def threshold_grid(acqf) -> np.ndarray:
    """Brute force on small_bark_acqf's space: one row per cell of the grid of the forests' split thresholds on
    the real column, every integer and category. Every leaf box of every tree is a union of these cells, so the
    acquisition's maximum over them is its global maximum."""
    forests = np.asarray(acqf.surrogate.forest_posterior(acqf.prepared).forests)
    split = forests[..., 0] > 0.5
    edges = np.concatenate([[0.0], np.unique(forests[..., 2][split & (forests[..., 1] == 0)]), [1.0]])
    return np.array([[a, k / 4, c] for a in 0.5 * (edges[:-1] + edges[1:]) for k in range(5) for c in range(3)])


@pytest.mark.parametrize("formulation", ["tangent", "nonlinear"])
def test_mip_finds_the_brute_force_optimum_and_reports_the_value_at_its_point(small_bark_acqf, formulation):
    """Both ways of writing the variance constraint (Eq. 10c) end optimal at the brute-force maximum: tangent
    planes that cut off a feasible point, or too few of them (sigma left at 1), would end elsewhere."""
    space, acqf = small_bark_acqf
    x, value, info = optimize_mip(acqf, space, np.random.default_rng(0),
                                  MIPConfig(time_limit=30.0, gap=0.0, n_pool=64, formulation=formulation))
    assert info["fallback"] is None and info["status"] == "optimal", info
    assert info["mip_value"] == pytest.approx(value, abs=1e-6)  # MIP objective == acquisition at the point
    assert float(acqf.values(x[None])[0]) == pytest.approx(value, abs=1e-12)
    assert float(acqf.values(threshold_grid(acqf)).max()) == pytest.approx(value, abs=1e-9)
    assert space.validate(space.decode(x))


def test_mip_on_a_subset_of_the_forests_maximizes_their_ucb_and_is_judged_by_all(small_bark_acqf):
    """MIPConfig(forests=2) writes 2 of the 16 posterior forests into the MIP (the first and the last draw:
    both chains). Solved to optimality, its value is the brute-force maximum of those two forests' integrated
    UCB (the subset's own acquisition, not the full one); the point is re-scored by all 16 forests."""
    import optim.mip as mip
    space, acqf = small_bark_acqf
    seen = []
    mip.PROBLEM_HOOKS.append(seen.append)
    try:
        x, value, info = optimize_mip(acqf, space, np.random.default_rng(0),
                                      MIPConfig(time_limit=30.0, gap=0.0, n_pool=64, forests=2))
    finally:
        mip.PROBLEM_HOOKS.remove(seen.append)
    p = seen[0]
    assert p["S"] == 2 and p["forest_indices"] == [0, 15] and info["mip_forests"] == 2
    assert info["status"] == "optimal", info
    grid = threshold_grid(acqf)
    mean, var = acqf.posterior.predict(grid)  # per draw, user units
    subset_ucb = np.mean(-mean[[0, 15]] + np.sqrt(p["beta"] * var[[0, 15]]), axis=0)
    assert info["mip_value"] == pytest.approx(subset_ucb.max(), abs=1e-6)
    assert info["mip_point_value"] <= float(acqf.values(grid).max()) + 1e-12  # scored by the full acquisition
    assert value == pytest.approx(max(info["polished_value"], info["mip_point_value"]), abs=1e-12)
    assert float(acqf.values(x[None])[0]) == pytest.approx(value, abs=1e-12)
    with pytest.raises(ValueError, match="forests"):
        MIPConfig(forests=0)


def test_scip_runs_without_nlp_and_with_default_separation_only_under_a_long_time_limit(small_bark_acqf):
    """No NLP relaxation at any limit (Ipopt's METIS ordering corrupted SCIP's heap); one root separation
    round under short limits, so the root LP ends early; SCIP's default from LONG_SOLVE_SECONDS on, which gave
    smaller gaps on captured problems (optim/_scip_worker.py)."""
    from optim import _scip_worker
    from optim.mip import build_problem
    space, acqf = small_bark_acqf
    x0 = space.encode(space.sample(1, seed=0))[0]
    rounds = {}
    for limit in (0.0, 1.0, _scip_worker.LONG_SOLVE_SECONDS):
        model = _scip_worker.build(build_problem(acqf, space, MIPConfig(time_limit=limit), x0, seed=0))[0]
        rounds[limit] = model.getParam("separating/maxroundsroot")
        assert model.getParam("limits/time") == limit
        assert model.getParam("nlp/disable")  # no Ipopt: its METIS ordering corrupted SCIP's heap
    assert rounds[0.0] == rounds[1.0] == 1
    assert rounds[_scip_worker.LONG_SOLVE_SECONDS] != 1  # SCIP's own default (-1: unlimited rounds)


def test_problem_hooks_see_the_mip_whose_start_objective_is_the_polished_value(small_bark_acqf):
    """A benchmark records the MIPs through PROBLEM_HOOKS; the warm start's objective in the MIP (standardized,
    mapped back to the user's units) is the acquisition value of the polished start."""
    import optim.mip as mip
    from optim._scip_worker import start_objective
    space, acqf = small_bark_acqf
    seen = []
    mip.PROBLEM_HOOKS.append(seen.append)
    try:
        _, _, info = optimize_mip(acqf, space, np.random.default_rng(0), MIPConfig(n_pool=64, time_limit=0.5))
    finally:
        mip.PROBLEM_HOOKS.remove(seen.append)
    assert len(seen) == 1 and seen[0]["formulation"] == "tangent"
    p = seen[0]
    assert -p["y_mean"] + p["y_std"] * start_objective(p) == pytest.approx(info["polished_value"], abs=1e-8)
    with pytest.raises(ValueError, match="formulation"):
        MIPConfig(formulation="socp")


def test_mip_falls_back_to_the_pool_when_the_solver_fails(small_bark_acqf, monkeypatch):
    import optim.mip as mip
    space, acqf = small_bark_acqf
    monkeypatch.setattr(mip, "run_worker", lambda problem, timeout: {"status": "crashed: exit -6"})
    x, value, info = optimize_mip(acqf, space, np.random.default_rng(0), MIPConfig(n_pool=64))
    assert info["fallback"].startswith("no MIP solution") and value == pytest.approx(info["polished_value"])
    assert info["polished_value"] >= info["pool_value"] and float(acqf.values(x[None])[0]) == pytest.approx(value)
    with pytest.raises(ValueError, match="UCB only"):
        from optim.acquisition import LogEI
        optimize_mip(AcquisitionFunction(acqf.posterior, LogEI(), best=0.0), space, np.random.default_rng(0))


def test_polish_ends_where_no_single_column_change_improves(small_bark_acqf):
    from optim.mip import coordinate_candidates, describe_forests, polish
    space, acqf = small_bark_acqf
    spec = acqf.surrogate.spec
    description = describe_forests(np.asarray(acqf.surrogate.forest_posterior(acqf.prepared).forests), spec)
    candidates = coordinate_candidates(space, spec, description["thresholds"])
    assert set(candidates[2]) == {0.0, 1.0, 2.0} and set(candidates[1]) <= {k / 4 for k in range(5)}
    X0 = space.encode(space.sample(3, seed=5))
    v0 = acqf.values(X0)
    X, v = polish(acqf, space, candidates, X0, v0, max_sweeps=50)
    assert np.all(v >= v0) and np.allclose(acqf.values(X), v)
    for x, value in zip(X, v):
        for j, values in candidates.items():
            trial = np.repeat(x[None], len(values), axis=0)
            trial[:, j] = values
            assert acqf.values(trial).max() <= value + 1e-12


def test_leaf_ascent_maximizes_the_integrated_log_ei_and_reports_its_value_at_its_point(small_bark_acqf):
    """The "leaf_ascent" optimizer (the MIP's warm start, for criteria the MIP cannot write) on the integrated
    log-EI: from the 4 best of a 64-point pool, it ends at the maximum over every cell of the threshold grid (75
    cells; the acquisition is constant on each), and reports the value at the row it returns. A polish that
    moved a column without re-scoring it, or an unrepaired pool, would stop short or report another value."""
    from optim.acquisition import LogEI
    from optim.leaf_ascent import LeafAscentConfig, optimize_leaf_ascent

    space, ucb = small_bark_acqf
    acqf = AcquisitionFunction(ucb.posterior, LogEI(), best=float(np.min(ucb.posterior.y)))
    x, value, info = optimize_leaf_ascent(acqf, space, np.random.default_rng(0),
                                          LeafAscentConfig(n_pool=64, n_starts=4, max_sweeps=20))
    assert info["optimizer"] == "leaf_ascent" and value >= info["pool_value"]
    assert float(acqf.values(x[None])[0]) == pytest.approx(value, abs=1e-12) and space.validate(space.decode(x))
    assert float(acqf.values(threshold_grid(acqf)).max()) == pytest.approx(value, abs=1e-9)
    with pytest.raises(ValueError, match="n_starts must be a positive integer"):
        LeafAscentConfig(n_starts=0)


def test_rows_near_the_incumbent_join_the_pool_that_starts_the_polish(small_bark_acqf):
    """With `n_local` the pool holds the incumbent and rows near it, so the pool's best is at least the
    incumbent's acquisition; the one-point Sobol pool alone (n_local = 0, same seed) is below it here, so a
    pool that left the rows out would fail. Without `n_local` the search draws exactly as before."""
    from optim.leaf_ascent import LeafAscentConfig, optimize_leaf_ascent

    space, acqf = small_bark_acqf
    at_incumbent = float(acqf.values(acqf.incumbent[None])[0])
    plain = optimize_leaf_ascent(acqf, space, np.random.default_rng(0), LeafAscentConfig(n_pool=1, max_sweeps=1))
    near = optimize_leaf_ascent(acqf, space, np.random.default_rng(0), LeafAscentConfig(n_pool=1, max_sweeps=1,
                                                                                         n_local=16))
    assert plain[2]["pool_value"] < at_incumbent <= near[2]["pool_value"] <= near[1]
    x_mip, v_mip, info = optimize_mip(acqf, space, np.random.default_rng(0), MIPConfig(n_pool=1, max_sweeps=1,
                                                                                       n_local=16))
    assert info["pool_value"] == pytest.approx(near[2]["pool_value"]) and v_mip >= info["polished_value"] - 1e-9
    with pytest.raises(ValueError, match="n_local must be a non-negative integer"):
        LeafAscentConfig(n_local=-1)
    with pytest.raises(ValueError, match="n_local must be an integer of at least 0"):
        MIPConfig(n_local=1.5)


def test_a_draw_that_cannot_predict_is_replaced_before_pool_and_coordinate_scores_rank_points(small_bark_acqf):
    """The values-only paths of the MIP search (`scores` for the Sobol pool, `coordinate_scores` for the polish)
    repair a posterior with a failed draw as the value-and-gradient path does: the draw gets the first working
    draw's sites, and the scores equal those of that repaired posterior exactly. Without the repair every score
    is NaN, and NaN wins argmax."""
    import dataclasses

    space, acqf = small_bark_acqf
    post = acqf.posterior

    def with_draw(source):  # draw (chain 0, draw 0) given a NaN noise variance, or draw (0, 1)'s sites
        samples = {k: np.array(v) for k, v in post.samples.items()}
        for name, v in samples.items():
            v[0, 0] = np.nan if source is None and name == "noise" else v[source or (0, 0)]
        return AcquisitionFunction(dataclasses.replace(post, samples=samples, _cache={}), UCB(beta=2.0),
                                   best=float(post.y.min()))
    X = space.encode(space.sample(6, seed=8))
    every_tree = np.arange(48, dtype=np.int32)  # 16 draws x 3 trees: all re-routed, whichever forests they hold
    candidates = np.linspace(0.05, 0.95, 7)
    broken, repaired = with_draw(None), with_draw((0, 1))
    pool = broken.scores(X)
    assert broken.failed_samples == 1 and np.array_equal(pool, repaired.scores(X)), pool
    broken = with_draw(None)
    column = broken.coordinate_scores(X[0], 0, candidates, every_tree, size=(16, 48))
    assert broken.failed_samples == 1 and np.all(np.isfinite(column))
    assert np.array_equal(column, repaired.coordinate_scores(X[0], 0, candidates, every_tree, size=(16, 48)))


def test_coordinate_scores_re_route_only_the_trees_that_split_on_the_column(small_bark_acqf):
    """Moving one column through `coordinate_moments` (only the trees splitting on it re-routed) gives the
    values of scoring the whole rows, and the polish that uses it ends at the same points."""
    from optim.mip import column_trees, coordinate_candidates, describe_forests, polish
    space, acqf = small_bark_acqf
    spec = acqf.surrogate.spec
    description = describe_forests(np.asarray(acqf.surrogate.forest_posterior(acqf.prepared).forests), spec)
    candidates = coordinate_candidates(space, spec, description["thresholds"])
    trees = column_trees(description)
    live = {(s * 3 + t, split[1]) for s, forest in enumerate(description["trees"])  # 3 trees per forest
            for t, tree in enumerate(forest) for split in tree["splits"]}
    assert live == {(int(i), j) for j, idx in trees.items() for i in idx}
    X0 = space.encode(space.sample(4, seed=6))
    for x in X0:
        for j, values in candidates.items():
            trial = np.repeat(x[None], len(values), axis=0)
            trial[:, j] = values
            fast = acqf.coordinate_scores(x, j, values, trees.get(j, np.zeros(0, np.int32)), size=(16, 48))
            np.testing.assert_allclose(fast, acqf.scores(trial), rtol=0, atol=1e-12)
    v0 = acqf.scores(X0)
    _, v_slow = polish(acqf, space, candidates, X0, v0, max_sweeps=50)
    X_fast, v_fast = polish(acqf, space, candidates, X0, v0, max_sweeps=50, trees=trees)
    np.testing.assert_allclose(v_fast, v_slow, rtol=0, atol=1e-12)
    np.testing.assert_allclose(acqf.scores(X_fast), v_fast, rtol=0, atol=1e-12)
