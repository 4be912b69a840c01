"""The `additive` surrogate (paper 002): the forest prior against exact enumeration, the graph moves
against that prior, message passing against brute force, zooming against a dense grid, and a BO run."""

import dataclasses
import itertools
import math

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from inference.moves import graphs
from optim.message_passing import component_labels, hybrid_rows, local_rows, max_sum, zoom_maximize
from zoo import Categorical, Integer, Node, Real, Space
from zoo.additive import Additive, forest_components
from zoo.forest_prior import ForestPrior, edge_count_log_probs, forest_counts, is_forest, sample_forest

D4_PAIRS = list(itertools.combinations(range(4), 2))


def _all_graphs(D):
    """Every symmetric adjacency on D vertices (2^(D(D-1)/2) of them)."""
    pairs = list(itertools.combinations(range(D), 2))
    for bits in itertools.product([False, True], repeat=len(pairs)):
        Z = np.zeros((D, D), dtype=bool)
        for (i, j), b in zip(pairs, bits):
            Z[i, j] = Z[j, i] = b
        yield Z


def _key(Z):
    return tuple(np.asarray(Z)[np.triu_indices(Z.shape[0], 1)].astype(int))


@pytest.fixture(scope="module")
def forests4():
    """The 38 forests on 4 labelled vertices with their exact prior probabilities for gamma = 0.3."""
    prior = ForestPrior(4, 0.3)
    graphs_ = list(_all_graphs(4))
    log_prob = jax.jit(lambda Z: prior.log_prob(Z))  # one compilation, not one per operation
    lp = np.array([float(log_prob(jnp.asarray(Z))) for Z in graphs_])
    keep = np.isfinite(lp)
    return {_key(Z): math.exp(v) for Z, v, k in zip(graphs_, lp, keep) if k}


def test_forest_prior_is_normalized_over_exactly_the_forests(forests4):
    assert forest_counts(4)[4] == (1, 6, 15, 16) and len(forests4) == 38  # 38 forests on K4
    assert sum(forests4.values()) == pytest.approx(1.0, abs=1e-12)
    triangle = np.zeros((4, 4), bool)
    for i, j in [(0, 1), (1, 2), (0, 2)]:
        triangle[i, j] = triangle[j, i] = True
    assert not bool(is_forest(jnp.asarray(triangle))) and ForestPrior(4).log_prob(jnp.asarray(triangle)) == -np.inf
    by_edges = np.zeros(4)
    for k, p in forests4.items():
        by_edges[sum(k)] += p
    np.testing.assert_allclose(by_edges, np.exp(edge_count_log_probs(4, 0.3)), rtol=1e-12)
    # the default prior: uniform number of edges, uniform forest given it
    uniform_log_prob = jax.jit(lambda Z: ForestPrior(4).log_prob(Z))
    uniform = np.array([float(uniform_log_prob(jnp.asarray(Z))) for Z in _all_graphs(4)])
    assert np.logaddexp.reduce(uniform[np.isfinite(uniform)]) == pytest.approx(0.0, abs=1e-12)
    assert np.exp(uniform[np.isfinite(uniform)]).max() == pytest.approx(1 / 4)  # the empty forest: P(e = 0) / 1


def _within(freq, p, n, z=4.5):
    """Binomial z-test of every frequency (n effective draws); z = 4.5 keeps the family-wise false alarm
    rate below 0.03% over 38 states."""
    p = np.asarray(p)
    return np.abs(np.asarray(freq) - p) <= z * np.sqrt(p * (1 - p) / n)


def test_exact_forest_sampler_matches_enumeration(forests4):
    rng = np.random.default_rng(0)
    n = 6000
    draws = [_key(sample_forest(4, 0.3, rng)) for _ in range(n)]  # independent draws
    keys = list(forests4)
    freq = np.array([draws.count(k) for k in keys]) / n
    assert np.all(_within(freq, [forests4[k] for k in keys], n))
    Z = ForestPrior(4, 0.3).sample(jax.random.PRNGKey(1), (3,))
    assert Z.shape == (3, 4, 4) and all(_key(z) in forests4 for z in np.asarray(Z))
    # inside jit and vmap (a jitted Predictive of the additive model draws the graph there): the same draws
    keys = jax.random.split(jax.random.PRNGKey(2), 3)
    traced = jax.jit(jax.vmap(lambda k: ForestPrior(4, 0.3).sample(k, (3,))))(keys)
    assert all(np.array_equal(traced[i], ForestPrior(4, 0.3).sample(keys[i], (3,))) for i in range(3))
    # the default prior: every edge count 0..6 equally often on 7 vertices (uniform forests given the count)
    counts = np.bincount([int(sample_forest(7, None, rng).sum()) // 2 for _ in range(3000)], minlength=7) / 3000
    assert np.all(_within(counts, np.full(7, 1 / 7), 3000))


def _run_moves(log_density, D, sweeps, key, step=None):
    """Graph sweeps (or one move `step` per sweep) on a target, from the empty forest; every state kept."""
    def body(Z, k):
        if step is None:
            Z, _ = graphs.graph_sweep(k, Z, log_density)
        else:
            Z, _, _ = step(k, Z, log_density(Z), log_density)
        return Z, Z
    _, chain = jax.jit(lambda k: jax.lax.scan(body, jnp.zeros((D, D), bool), jax.random.split(k, sweeps)))(key)
    return np.asarray(chain)


@pytest.mark.parametrize("move", ["toggle", "sweep"])
def test_graph_moves_target_a_tilted_forest_prior(forests4, move):
    """Target prior(Z) * exp(sum_ij w_ij Z_ij) with fixed random weights w (a stand-in likelihood that
    favours some edges): the chain's state frequencies match the exact law by enumeration of the 38
    forests. Fails with the toggle's Hastings term removed, with a mutation that always accepts, and
    with a mutation whose reconnection is not uniform."""
    w = np.random.default_rng(7).normal(size=(4, 4))
    w = jnp.asarray(np.triu(w, 1))
    prior = ForestPrior(4, 0.3)

    def log_density(Z):
        return prior.log_prob(Z) + jnp.sum(w * Z)
    keys = list(forests4)
    weight = np.array([forests4[k] * math.exp(sum(float(w[i, j]) * b for (i, j), b in zip(D4_PAIRS, k)))
                       for k in keys])
    exact = weight / weight.sum()
    step = graphs.toggle_step if move == "toggle" else None
    chain = _run_moves(log_density, 4, 40000, jax.random.PRNGKey(3), step)
    states = np.array([keys.index(_key(Z)) for Z in chain])
    indicators = (states[:, None] == np.arange(len(keys))[None, :]).astype(float)
    ess = min(float(az.ess(indicators[None, :, s])) for s in range(len(keys)) if indicators[:, s].any())
    assert ess > 2000, ess
    assert np.all(_within(indicators.mean(0), exact, ess))


def test_the_ablation_walk_ignores_the_data_and_keeps_the_prior(forests4):
    """`Additive(graph="prior")`'s move: under a log-density that strongly favours edge 0-1 the chain still
    visits forests with their prior frequencies (z-tests as above)."""
    prior = ForestPrior(4, 0.3)

    def favour_01(Z):
        return prior.log_prob(Z) + 5.0 * Z[0, 1]
    chain = _run_moves(favour_01, 4, 20000, jax.random.PRNGKey(4),
                       step=lambda k, Z, lp, ld: (*graphs.prior_graph_sweep(k, Z, ld, prior)[:1], lp, None))
    keys = list(forests4)
    states = np.array([keys.index(_key(Z)) for Z in chain])
    indicators = (states[:, None] == np.arange(len(keys))[None, :]).astype(float)
    ess = min(float(az.ess(indicators[None, :, s])) for s in range(len(keys)))
    assert np.all(_within(indicators.mean(0), [forests4[k] for k in keys], ess))


def test_forest_components_list_edges_then_isolated_vertices():
    Z = np.zeros((5, 5), bool)
    Z[0, 3] = Z[3, 0] = Z[3, 4] = Z[4, 3] = True
    a, b, pair, valid = map(np.asarray, forest_components(jnp.asarray(Z)))
    assert list(zip(a[:2], b[:2])) == [(0, 3), (3, 4)] and pair[:2].all() and not pair[2:].any()
    assert list(a[2:4]) == [1, 2] and valid.sum() == 4


def test_max_sum_equals_brute_force():
    rng = np.random.default_rng(5)
    D, R = 6, 3
    for trial in range(20):
        Z = sample_forest(D, 0.5, rng)
        i, j = np.nonzero(np.triu(Z, 1))
        edges = np.stack([i, j], 1)
        tables = rng.normal(size=(len(edges), R, R))
        unary = rng.normal(size=(D, R))
        x, value = max_sum(D, edges, tables, unary)
        best = max(sum(tables[e][c[a], c[b]] for e, (a, b) in enumerate(edges)) + sum(unary[v][c[v]] for v in range(D))
                   for c in itertools.product(range(R), repeat=D))
        direct = sum(tables[e][x[a], x[b]] for e, (a, b) in enumerate(edges)) + sum(unary[v][x[v]] for v in range(D))
        assert value == pytest.approx(best, abs=1e-12) and direct == pytest.approx(best, abs=1e-12)


def test_zooming_matches_a_dense_grid_on_a_two_edge_function():
    """f(x) = g(x0, x1) + h(x1, x2) with narrow optima (f spans [-116, -1.03] on the cube): over 20 seeds,
    4 levels of a 4-point grid (64 evaluations per term) reach a median within 0.02 (2e-4 of f's range)
    of the best point of a 200^3 grid, and beat a one-level 8-point grid of the same cost."""
    def g(u, v):
        return -((u - 0.731) ** 2) / 0.02 - (u - v + 0.2) ** 2 / 0.05

    def h(v, w):
        return -((v - 0.512) ** 2) / 0.1 - ((w - 0.137) ** 2) / 0.01

    edges = np.array([[0, 1], [1, 2]])

    def tables_at(points):
        pair = np.stack([g(points[0][:, None], points[1][None, :]), h(points[1][:, None], points[2][None, :])])
        return pair, np.zeros((3, points.shape[1]))
    grid = np.linspace(0, 1, 200)
    dense = (g(grid[:, None, None], grid[None, :, None]) + h(grid[None, :, None], grid[None, None, :])).max()
    values = [zoom_maximize(3, edges, tables_at, np.random.default_rng(s), grid=4, levels=4)[1] for s in range(20)]
    same_cost = [zoom_maximize(3, edges, tables_at, np.random.default_rng(s), grid=8, levels=1)[1] for s in range(20)]
    assert np.median(values) >= dense - 0.02 and np.median(values) > np.median(same_cost)
    x, v = zoom_maximize(3, edges, tables_at, np.random.default_rng(0), grid=4, levels=4)
    assert v == pytest.approx(g(x[0], x[1]) + h(x[1], x[2]))


def test_hybrid_rows_take_one_tree_of_the_candidate_each():
    """Trees {0, 2, 4}, {1, 5} and {3}: three rows, each the incumbent with one tree's inputs replaced."""
    edges = np.array([[0, 2], [2, 4], [1, 5]])
    labels = component_labels(edges, 6)
    assert labels[0] == labels[2] == labels[4] and labels[1] == labels[5] and len(set(labels.tolist())) == 3
    incumbent, candidate = np.zeros(6), np.arange(1.0, 7.0)
    rows = hybrid_rows(incumbent, candidate, labels)
    assert sorted(tuple(np.flatnonzero(r != incumbent)) for r in rows) == [(0, 2, 4), (1, 5), (3,)]
    for r in rows:
        moved = np.flatnonzero(r != incumbent)
        assert np.array_equal(r[moved], candidate[moved])


def test_local_rows_move_a_log_uniform_number_of_inputs_and_stay_in_the_box():
    """Each row moves k inputs by N(0, 0.1^2), clipped to [0, 1], with P(k) = log((k + 1) / k) / log 21 on 1..20
    (D = 50). Over 2,000 rows each of the 20 counts is within 5 binomial sd of its expectation, and the mean k
    (6.09, sd per row 5.4, so 0.12 for the mean) within 0.8; moving 20 inputs always, or one, fails."""
    rng = np.random.default_rng(0)
    centre = np.full(50, 0.5)  # 5 sd from either bound: no step is clipped
    rows = local_rows(centre, 2000, rng)
    k = (rows != centre).sum(axis=1)
    p = np.log(np.arange(2, 22) / np.arange(1, 21)) / np.log(21.0)
    counts = np.bincount(k, minlength=21)[1:]
    assert k.min() >= 1 and k.max() <= 20
    assert np.all(np.abs(counts - 2000 * p) < 5 * np.sqrt(2000 * p * (1 - p)))
    assert abs(k.mean() - np.sum(np.arange(1, 21) * p)) < 0.8
    steps = (rows - centre)[rows != centre]
    assert abs(steps.std() - 0.1) < 0.005  # ~12,000 steps: the sd's relative standard error is ~0.65%
    edge = local_rows(np.full(50, 0.01), 100, rng)
    assert edge.min() == 0.0 and edge.max() <= 1.0  # steps past a bound stop at it
    assert np.all((local_rows(np.full(3, 0.5), 50, rng) != 0.5).sum(axis=1) <= 3)  # D < 20: at most D inputs


def test_local_rows_with_a_range_of_scales_draw_each_rows_scale_log_uniformly():
    """scales = (0.01, 0.1): each row's step sd s is log-uniform on [0.01, 0.1]. A step is s z with z ~ N(0, 1),
    so log |step| = log s + log |z|: mean log(sqrt(0.001)) - 0.635 = -4.089 (E log|z| = -(gamma + log 2) / 2) and
    variance (log 10)^2 / 12 + pi^2 / 8 = 0.442 + 1.234 = 1.675. Over 2,000 rows (~12,000 steps; a row's steps
    share its s, and E k^2 / (E k)^2 = 1.79 for the log-uniform k) the mean's sd is sqrt(0.442 * 1.79 / 2000 +
    1.234 / 12000) = 0.022, so it must be within 0.11 (5 sd); the sample variance's sd is about 0.03 (the fourth
    cumulant of log|z| is pi^4 / 16), so within 0.15. One scale of 0.1, or of 0.01, misses the mean by 1.15; one
    of sqrt(0.001) (the log-midpoint) misses the variance by 0.44."""
    rng = np.random.default_rng(1)
    centre = np.full(50, 0.5)  # 0.5 / 0.1 = 5 largest sd from either bound: clipping is negligible
    rows = local_rows(centre, 2000, rng, (0.01, 0.1))
    log_steps = np.log(np.abs((rows - centre)[rows != centre]))
    assert abs(log_steps.mean() - (np.log(np.sqrt(0.001)) - 0.635)) < 0.11
    assert abs(log_steps.var() - (np.pi ** 2 / 8 + np.log(10.0) ** 2 / 12)) < 0.15
    same = local_rows(centre, 2000, np.random.default_rng(1), (0.1, 0.1))
    assert np.array_equal(same, local_rows(centre, 2000, np.random.default_rng(1)))  # equal bounds: no draw


def test_additive_refuses_categorical_and_conditional_spaces():
    with pytest.raises(ValueError, match="flat spaces of Real and Integer.*'bark'"):
        Additive(Space([Real("a", 0, 1), Categorical("c", ("x", "y"))]))
    with pytest.raises(ValueError, match="conditional"):
        Additive(Space(Node("r", choice="k", children={"a": Node("a", (Real("x", 0, 1),)), "b": Node("b")})))
    Additive(Space([Real("a", 0, 1), Integer("k", 0, 4)]))  # integers are fine


def test_the_lengthscale_prior_is_the_one_given_and_a_journal_rebuilds_it():
    """The lengthscale site's prior is LogNormal(log 0.15, 1) by default, the zoo's 2-D prior (median 5.8) with
    `lengthscale_prior=None`, LogNormal(log m, sd) with (m, sd): checked on 20,000 draws each, the median of the
    log draws within 0.05 of its target (about 4 standard errors of a sample median, sd 1.25 / sqrt(60,000); the
    two priors' medians are 3.6 apart). Bad values are refused when the model is made. A journal record rebuilds
    the model, and a record written before the option existed rebuilds the prior that run used (None)."""
    from numpyro import handlers

    from optim.registry import surrogate_from_dict, surrogate_to_dict
    from zoo.data import make_data

    space = Space([Real(f"x{i}", 0, 1) for i in range(3)])
    data = make_data(np.zeros((0, 3)), np.zeros(0), size=4, fill_row=space.fill_row())
    key = jax.random.PRNGKey(0)

    def log_median(model):
        conditioned = handlers.condition(model.model, data=model.init_discrete(key, data))
        site = handlers.trace(handlers.seed(conditioned, key)).get_trace(data)["lengthscale"]
        return float(np.median(np.log(np.asarray(site["fn"].sample(key, (20_000,))))))

    default, hvarfner, given = Additive(space), Additive(space, lengthscale_prior=None), \
        Additive(space, lengthscale_prior=(0.5, 2.0))
    assert abs(log_median(default) - math.log(0.15)) < 0.05 and default.name == "additive"
    assert abs(log_median(hvarfner) - (math.sqrt(2) + 0.5 * math.log(2))) < 0.05  and hvarfner.name == "additive"
    assert abs(log_median(given) - math.log(0.5)) < 0.1  # sd 2: twice the standard error
    for model in (default, hvarfner, given):
        assert surrogate_from_dict(surrogate_to_dict(model), space) == model
    old = surrogate_to_dict(hvarfner)
    del old["options"]["lengthscale_prior"]
    assert surrogate_from_dict(old, space) == hvarfner
    assert surrogate_from_dict(old, space, given=hvarfner) is hvarfner
    with pytest.raises(ValueError, match="differs in lengthscale_prior"):
        surrogate_from_dict(old, space, given=default)
    for bad in ((0.15,), (-0.1, 1.0), (0.15, float("nan")), ("0.15", 1.0), (True, 1.0), 0.15):
        with pytest.raises(ValueError, match="lengthscale_prior"):
            Additive(space, lengthscale_prior=bad)


def test_message_passing_settings_are_checked_when_made():
    from optim.message_passing import MessagePassingConfig

    assert MessagePassingConfig(n_polish=0, maxiter=0).n_polish == 0  # no polish: the best candidate as scored
    for bad in ({"grid": 0}, {"levels": 1.5}, {"structures": -1}, {"n_raw": 0}, {"n_polish": -1}, {"maxiter": None},
                {"hybrids": 1}, {"n_local": -1}, {"local_scales": (0.1, 0.01)}, {"local_scales": (0.0, 0.1)},
                {"local_scales": 0.1}, {"local_scales": (0.1, 2.0)}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            MessagePassingConfig(**bad)
    assert MessagePassingConfig(local_scales=[0.01, 0.1]).local_scales == (0.01, 0.1)  # a journal's list, as saved


def test_kernel_is_the_sum_of_the_forest_components():
    """002 Eq. 2 and 7: a 2-D RBF per edge with variance s_i^2 + s_j^2, a 1-D RBF per isolated dimension."""
    space = Space([Real(f"x{i}", 0, 1) for i in range(5)])
    model = Additive(space)
    rng = np.random.default_rng(0)
    X1, X2 = rng.random((4, 5)), rng.random((3, 5))
    Z = np.zeros((5, 5), bool)
    for i, j in [(0, 2), (2, 4)]:
        Z[i, j] = Z[j, i] = True
    ell, s = rng.uniform(0.2, 1.0, 5), rng.uniform(0.3, 1.0, 5)

    def rbf(cols):
        d = sum((X1[:, None, c] - X2[None, :, c]) ** 2 / ell[c] ** 2 for c in cols)
        return np.exp(-0.5 * d)
    expected = ((s[0] ** 2 + s[2] ** 2) * rbf([0, 2]) + (s[2] ** 2 + s[4] ** 2) * rbf([2, 4])
                + s[1] ** 2 * rbf([1]) + s[3] ** 2 * rbf([3]))
    params = {"graph": jnp.asarray(Z), "lengthscale": jnp.asarray(ell), "scale": jnp.asarray(s)}
    np.testing.assert_allclose(np.asarray(model.kernel(X1, X2, params)), expected, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(model.kernel_diag(X1, params)),
                               np.full(4, 2 * s[2] ** 2 + s[0] ** 2 + s[4] ** 2 + s[1] ** 2 + s[3] ** 2), rtol=1e-12)


@pytest.mark.slow  # suite time; message passing is checked against brute force in the default run
def test_bo_with_message_passing_beats_random_search_and_reports_the_integrated_value():
    from optim import BayesOpt, minimize
    from optim.integrated import AcquisitionFunction
    from tests.conftest import FAST_SAMPLER
    from tests.trace_runs import FAST_MESSAGE_PASSING as config
    from tests.trace_runs import FLAT6 as space
    from tests.trace_runs import additive_objective as _additive_target

    # one (cold) MCMC fit, then its draws conditioned on each new point (refit_every): one compilation
    sampler = dataclasses.replace(FAST_SAMPLER, refit_every=100)
    run = minimize(_additive_target, space, surrogate="additive", budget=18, n_init=8, seed=0,
                   sampler=sampler, optimizer=config, progress=False)
    randoms = [minimize(_additive_target, space, surrogate="random", budget=18, n_init=8, seed=s,
                        progress=False).best_value for s in range(10)]
    assert run.best_value < np.median(randoms), (run.best_value, randoms)
    proposed = [h for h in run.history if h["source"] == "bo"]
    assert len(proposed) == 10 and all(h["optimizer_info"]["structures"] == 2 for h in proposed)
    assert proposed[0]["fit_seconds"] > 0 and all(h["fit_seconds"] < 0.5 for h in proposed[1:])  # no refit
    # the reported acquisition value is the integrated UCB (over every posterior sample) at the returned point
    opt = BayesOpt(space, "additive", seed=1, n_init=8, sampler=FAST_SAMPLER, optimizer=config)
    for h in run.history[:8]:
        opt.tell(h["config"], h["value"])
    c = opt.ask()
    acqf = AcquisitionFunction(opt.posterior, opt.acquisition, best=min(h["value"] for h in run.history[:8]), t=1)
    opt.tell(c, _additive_target(c))
    assert opt.history[-1]["acq_value"] == pytest.approx(acqf.values(space.encode(c)[None], 2)[0], rel=1e-9)
    # without the polish (n_polish=0) the best scored candidate is returned as it is, at its integrated value
    unpolished = BayesOpt(space, "additive", seed=1, n_init=8, sampler=FAST_SAMPLER,
                          optimizer=dataclasses.replace(config, n_polish=0))
    for h in run.history[:8]:
        unpolished.tell(h["config"], h["value"])
    c = unpolished.ask()
    acqf = AcquisitionFunction(unpolished.posterior, unpolished.acquisition,
                               best=min(h["value"] for h in run.history[:8]), t=1)
    unpolished.tell(c, _additive_target(c))
    # the returned row is the best scored one, scored again alone (another padded batch: rounding at most)
    assert unpolished.history[-1]["optimizer_info"]["polish_gain"] == pytest.approx(0.0, abs=1e-12)
    assert unpolished.history[-1]["acq_value"] == pytest.approx(acqf.values(space.encode(c)[None], 2)[0], rel=1e-9)


@pytest.mark.slow
def test_posterior_edge_probabilities_recover_a_known_forest():
    """Data from an additive GP draw on a known forest (D = 6: edges 0-1, 1-2, 3-4; 5 isolated), 120 points,
    noise sd 0.05, three data seeds: every true edge has posterior probability above 0.5 and every other
    pair below 0.5 (the issue's criterion). Measured 2026-11-23: 1.00 on every true edge and at most 0.02
    elsewhere, so the 0.5 line is far outside the Monte Carlo error of 200 draws. With 60 points the
    posterior is diffuse for seed 0 (true edges 0.41, 0.61, 0.70; one false edge 0.33)."""
    import inference
    from optim.bench.problems.additive import AdditiveGPFunction

    edges = np.array([[0, 1], [1, 2], [3, 4]])
    true = np.zeros((6, 6), bool)
    true[edges[:, 0], edges[:, 1]] = True
    upper = np.triu(np.ones((6, 6), bool), 1)
    space = Space([Real(f"x{i}", 0, 1) for i in range(6)])
    for seed in range(3):
        rng = np.random.default_rng(seed)
        fn = AdditiveGPFunction(6, edges, rng)
        X = rng.random((120, 6))
        y = fn(X) + 0.05 * rng.standard_normal(120)
        post = inference.sample(Additive(space), X, y, key=seed, num_warmup=300, num_samples=100, num_chains=2,
                                thinning=2)
        P = Additive(space).edge_probabilities(post.samples)
        assert np.all(P[true] > 0.5) and np.all(P[upper & ~true] < 0.5), (seed, np.round(P, 2))


def test_each_chain_starts_from_its_own_random_forest():
    """Over-dispersed starts: random_forest_start gives forests (acyclic, symmetric, no loops) that differ
    between keys, with p (D - 1) = 4.5 edges on average (1000 draws on D = 10: SE of the mean below 0.05,
    the bound 0.3 is 6 SEs)."""
    from zoo.additive import random_forest_start

    draws = np.asarray(jax.jit(jax.vmap(lambda k: random_forest_start(k, 10)))(
        jax.random.split(jax.random.PRNGKey(0), 1000)))
    assert np.all(np.asarray(jax.jit(jax.vmap(is_forest))(jnp.asarray(draws))))
    assert np.all(draws == np.swapaxes(draws, 1, 2)) and not draws[:, np.arange(10), np.arange(10)].any()
    edges = np.triu(draws, 1).sum((1, 2))
    assert abs(edges.mean() - 4.5) < 0.3, edges.mean()
    assert len({d.tobytes() for d in draws[:8]}) == 8
