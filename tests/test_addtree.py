"""The Add-Tree kernel (000, Definition 4) against a direct implementation; PSD; disjoint paths."""

import jax
import numpy as np
import pytest

from optim.bench.problems import jenatton_large, jenatton_small
from tests.conftest import fast_sample, jitted
from zoo.addtree import AddTree


def np_matern52(a, b, ls):
    d = np.sqrt(np.sum(((np.asarray(a) - np.asarray(b)) / ls) ** 2))
    return (1 + np.sqrt(5) * d + 5 / 3 * d**2) * np.exp(-np.sqrt(5) * d)


def direct_addtree(space, model, params, a, b):
    """Definition 4: sum over the vertices on the common part of both paths (root to their LCA)."""
    pa, pb = space.active_path(a).nodes, space.active_path(b).nodes
    common = [u for u, w in zip(pa, pb) if u == w]
    total, i = 0.0, 0
    for v, vertex in enumerate(model.components):
        name, num = vertex.name, vertex.numeric_cols
        ls = params["lengthscale"][i:i + len(num)]
        i += len(num)
        if name in common:
            params_v = [space.names[j] for j in num]
            ua = [space.columns[space.col[n]].to_unit(a[n]) for n in params_v]
            ub = [space.columns[space.col[n]].to_unit(b[n]) for n in params_v]
            total += params["variance"][v] * np_matern52(ua, ub, ls)
    return total


@pytest.mark.parametrize("problem", [jenatton_small(), jenatton_large()])
def test_kernel_equals_definition_4_and_is_psd(problem):
    space = problem.space
    model = AddTree(space)
    rng = np.random.default_rng(0)
    params = {"lengthscale": rng.uniform(0.2, 2.0, len(model.num_cols)),
              "variance": rng.uniform(0.1, 1.5, len(model.components))}
    configs = space.sample(40, seed=1)
    X = space.encode(configs)
    K = np.asarray(jitted(model).kernel(X, X, params))
    direct = np.array([[direct_addtree(space, model, params, a, b) for b in configs] for a in configs])
    assert np.allclose(K, direct, atol=1e-12)
    assert np.allclose(np.asarray(jitted(model).data_kernel(X, X, params)), direct, atol=1e-12)  # stacked by shape
    assert np.linalg.eigvalsh(K).min() > -1e-9
    assert np.allclose(np.asarray(jitted(model).kernel_diag(X, params)), np.diag(K))


def test_disjoint_paths_below_a_parameterless_root_are_uncorrelated():
    space = jenatton_small().space
    model = AddTree(space)
    params = {"lengthscale": np.ones(len(model.num_cols)), "variance": np.ones(len(model.components))}
    left = space.encode({"x1": 0, "x2": 0, "x4": 0.1, "r8": 0.5})
    right = space.encode({"x1": 1, "x3": 1, "x7": 0.1, "r9": 0.5})
    sibling = space.encode({"x1": 0, "x2": 1, "x5": 0.1, "r8": 0.5})
    K = np.asarray(jitted(model).kernel(np.stack([left, right, sibling]), np.stack([left, right, sibling]), params))
    assert K[0, 1] == 0.0 and K[1, 2] == 0.0
    assert K[0, 2] == pytest.approx(1.0)  # siblings share only vertex x1=0 (owning r8, equal values)
    assert [v.name for v in model.components] == ["x1=0", "x1=0,x2=0", "x1=0,x2=1", "x1=1", "x1=1,x3=0", "x1=1,x3=1"]


@pytest.mark.parametrize("share_like", [pytest.param(False, marks=pytest.mark.slow), True])  # True folds the groups in
def test_algorithm_2_matches_brute_force_over_paths(share_like):
    """Per-vertex maximization + sum along paths (000, Algorithm 2) equals the best joint per-path maximum;
    with share_like the shared terms are folded into their members."""
    from optim.path_lbfgs import LBFGSConfig, optimize_path
    from optim.acquisition import UCB
    from optim.conditional_search import VertexUCB, addtree_ucb_search
    from optim.integrated import AcquisitionFunction

    problem = jenatton_small()
    space = problem.space
    configs = space.sobol(12, seed=3)
    X, y = space.encode(configs), [problem(c) for c in configs]
    model = AddTree(space, share_like=share_like)
    post = fast_sample(model, X, y)  # shares its compiled run with the addtree / addtree_shared trace runs
    config = LBFGSConfig(n_raw=128, n_restarts=4, maxiter=60)
    acqf = AcquisitionFunction(post, UCB(), best=float(np.min(y)), t=5)
    x, value, path_idx = addtree_ucb_search(acqf, space, np.random.default_rng(0), config)
    dims = [len(v.columns) for v in model.components]
    ucb = VertexUCB(post, 5, dims)
    brute = []
    for path in space.paths:
        on_path = np.array([float(v.name in path.nodes) for v in model.components])
        _, best = optimize_path(ucb.weighted(on_path), space, path, np.random.default_rng(1), config)
        brute.append(best)
    assert path_idx == int(np.argmax(brute))
    assert value == pytest.approx(max(brute), abs=1e-6)
    on_chosen = np.array([float(v.name in space.paths[path_idx].nodes) for v in model.components])
    assert ucb.weighted(on_chosen).values(x[None])[0] == pytest.approx(value, abs=1e-9)
    # the components sum to the posterior mean up to the constant mean (per sample), at any point
    samples = post.flat_samples()
    Xq = space.encode(space.sample(20, seed=7))
    comp_mean, _ = jax.jit(lambda s, d, X: model.predict_components(model.prepare(s, d), X))(samples, post.data, Xq)
    mean, _ = model.predict(samples, post.data, Xq)
    offset = np.asarray(mean) - np.asarray(comp_mean).sum(axis=1)
    assert np.allclose(offset, offset[:, :1], atol=1e-9)


def test_interaction_terms_follow_appendix_e():
    """000 Appendix E: each leaf adds sigma^2 * delta_leaf * prod_v k_v over its path's vertices;
    points on different leaves get no interaction covariance, and the kernel stays PSD."""
    space = jenatton_small().space
    base, model = AddTree(space), AddTree(space, interactions=True)
    assert not model.additive and base.additive and len(model.interaction_terms) == 4
    rng = np.random.default_rng(2)
    params = {"lengthscale": rng.uniform(0.2, 2.0, len(model.num_cols)),
              "variance": rng.uniform(0.1, 1.5, len(model.components)),
              "interaction_lengthscale": rng.uniform(0.2, 2.0, len(model.interaction_cols)),
              "interaction_variance": rng.uniform(0.1, 1.0, 4)}
    configs = space.sample(30, seed=3)
    X = space.encode(configs)
    extra = np.asarray(jitted(model).kernel(X, X, params)) - np.asarray(jitted(base).kernel(X, X, params))
    leaf = space.path_index(X)
    names = [t[0] for t in model.interaction_terms]
    j = 0
    for t, (name, groups, _, _) in enumerate(model.interaction_terms):
        cols = np.concatenate(groups)
        ls = params["interaction_lengthscale"][j:j + len(cols)]
        j += len(cols)
        on = np.array([space.active_path(c).leaf == name for c in configs])
        for a in np.flatnonzero(on):
            for b in np.flatnonzero(on):
                want = params["interaction_variance"][t]
                for g in groups:  # product of per-vertex Matern kernels
                    k = [list(cols).index(c) for c in g]
                    want *= np_matern52(X[a, g], X[b, g], ls[k])
                assert extra[a, b] == pytest.approx(want, abs=1e-12)
    # zero up to rounding: `extra` is the difference of two compiled kernels whose shared additive part XLA
    # may fuse differently (1 ulp of K's O(1) entries is 2e-16; the bound is the one used for the terms above)
    assert np.all(np.abs(extra[leaf[:, None] != leaf[None, :]]) < 1e-12)
    assert sorted(names) == sorted(p.leaf for p in space.paths)
    K = np.asarray(jitted(model).kernel(X, X, params))
    assert np.linalg.eigvalsh(K).min() > -1e-9
    assert np.allclose(np.asarray(jitted(model).kernel_diag(X, params)), np.diag(K))
    with pytest.raises(ValueError, match="additive"):
        model.predict_components(None, X)


def test_shared_terms_align_the_parameters_of_like_vertices():
    """share_like: one term per group of like vertices (leaves with equally many numeric parameters;
    inner vertices at one depth with equally many): pairs whose paths pass through members gain
    sigma_g^2 k_g(u(x), u(x')) on the members' parameters in declared order, other pairs nothing; the
    kernel stays PSD; sigma_g = 0 gives back Add-Tree."""
    from zoo import Integer, Node, Real, Space

    space = Space(Node("root", choice="kind", children={
        "A": Node("A", params=(Real("a0", 0.0, 1.0),), choice="ka", children={
            "p": Node("p", params=(Real("a1", 0.0, 1.0), Real("a2", -1.0, 1.0))),
            "r": Node("r", params=(Real("c1", 0.0, 1.0),))}),
        "B": Node("B", params=(Real("b0", 5.0, 6.0),), choice="kb", children={
            "q": Node("q", params=(Real("b1", 2.0, 4.0), Integer("b2", 1, 10))),
            "t": Node("t", params=(Integer("d1", 0, 20),))})}))
    base, model = AddTree(space), AddTree(space, share_like=True)
    groups = [[model.components[v].name for v in g] for g in model.vertex_groups]
    assert sorted(groups) == [["A", "B"], ["p", "q"], ["r", "t"]] and model.additive
    aligned = {"A": ("a0",), "B": ("b0",), "p": ("a1", "a2"), "q": ("b1", "b2"), "r": ("c1",), "t": ("d1",)}
    rng = np.random.default_rng(4)
    ls = {tuple(g): rng.uniform(0.3, 1.5, len(aligned[g[0]])) for g in groups}
    sv = {tuple(g): v for g, v in zip(groups, (0.7, 0.4, 1.1))}
    params = {"lengthscale": rng.uniform(0.2, 2.0, len(model.num_cols)),
              "variance": rng.uniform(0.1, 1.5, len(model.components)),
              "shared_lengthscale": np.concatenate([ls[tuple(g)] for g in groups]),
              "shared_variance": np.array([sv[tuple(g)] for g in groups])}
    configs = space.sample(30, seed=5)
    X = space.encode(configs)
    K = np.asarray(jitted(model).kernel(X, X, params))
    extra = K - np.asarray(jitted(base).kernel(X, X, params))

    def unit(config, vertex):
        return [space.columns[space.col[n]].to_unit(config[n]) for n in aligned[vertex]]
    for i, a in enumerate(configs):
        for j, b in enumerate(configs):
            pa, pb = space.active_path(a).nodes, space.active_path(b).nodes
            want = 0.0
            for g in groups:
                va, vb = [v for v in g if v in pa], [v for v in g if v in pb]
                if va and vb:
                    want += sv[tuple(g)] * np_matern52(unit(a, va[0]), unit(b, vb[0]), ls[tuple(g)])
            assert extra[i, j] == pytest.approx(want, abs=1e-12)
    assert np.linalg.eigvalsh(K).min() > -1e-9
    assert np.allclose(np.asarray(jitted(model).kernel_diag(X, params)), np.diag(K))
    off = dict(params, shared_variance=np.zeros(3))
    K_off, K_base = np.asarray(jitted(model).kernel(X, X, off)), np.asarray(jitted(base).kernel(X, X, params))
    assert np.allclose(K_off, K_base, atol=1e-15)
    # folded into the member on each row's path, the components add up to the kernel along that path
    comp = np.asarray(jitted(model).component_kernels(X, X, params))
    assert np.allclose(comp.sum(axis=0), K, atol=1e-12)
    assert np.allclose(comp[:, np.arange(30), np.arange(30)].sum(axis=0), np.diag(K), atol=1e-12)


def test_share_like_refuses_a_space_without_like_vertices(mixed_space):
    with pytest.raises(ValueError, match="same number of numeric parameters"):
        AddTree(mixed_space, share_like=True)


@pytest.mark.slow  # suite time; the shared terms are checked by Algorithm 2 vs brute force in the default run
@pytest.mark.arviz  # CI runs it again against ArviZ 1.x
def test_a_leaf_seen_once_borrows_its_siblings_shape():
    """Jenatton small with 6 points on each of three leaves and one on x1=0,x2=0 (at x4 = -0.76): the
    plain Add-Tree leaf GP can only extrapolate that single value, so it predicts far above the
    optimum 0.1 at x4 = 0; with share_like the bowl learned on the other leaves carries over and the
    prediction is at least 0.2 closer to the truth. The posterior converts to ArviZ with the new sites.
    (Sampled with the FAST settings: the compiled runs are those of the addtree / addtree_shared traces.)"""
    problem = jenatton_small()
    space = problem.space
    configs = [c for c in space.sobol(64, seed=2) if (c["x1"], c.get("x2", c.get("x3"))) != (0, 0)]
    per_leaf = {}
    for c in configs:
        per_leaf.setdefault((c["x1"], c.get("x2", c.get("x3"))), [])
        if len(per_leaf[(c["x1"], c.get("x2", c.get("x3")))]) < 6:
            per_leaf[(c["x1"], c.get("x2", c.get("x3")))].append(c)
    train = [c for leaf in per_leaf.values() for c in leaf] + [{"x1": 0, "x2": 0, "x4": -0.76, "r8": 0.36}]
    X, y = space.encode(train), np.array([problem(c) for c in train])
    at_optimum = space.encode([{"x1": 0, "x2": 0, "x4": 0.0, "r8": 0.0}])
    error = {}
    for share in (False, True):
        post = fast_sample(AddTree(space, share_like=share), X, y)
        error[share] = abs(float(post.predict(at_optimum)[0].mean()) - 0.1)
    assert error[True] < error[False] - 0.2, error
    idata = post.to_arviz()
    assert idata.posterior["shared_variance"].dims[-1] == "vertex_group"
    assert list(idata.posterior["shared_lengthscale"].coords["shared_param"].values) == ["r8/r9", "x4/x5/x6/x7"]


@pytest.mark.slow  # 60-160 s: in the marked run
def test_addtree_regresses_better_than_independent_gps_at_20_points():
    """000 Fig. 4 at 20 training points on the Jenatton function: Add-Tree's test MSE is lower than
    independent GPs' (one-sided paired Wilcoxon over 6 seeds, p < 0.05; the smallest possible p is
    1/64). Independent leaf GPs share nothing across leaves and, with c = 0, ignore r8/r9."""
    from scipy.stats import wilcoxon

    from optim.bench.runner import regression_cell
    from tests.conftest import FAST_SAMPLER

    mse = {m: np.array([regression_cell(m, "jenatton_small", 20, seed, sampler=FAST_SAMPLER)["mse"]
                        for seed in range(6)]) for m in ("addtree", "independent")}
    assert wilcoxon(mse["addtree"], mse["independent"], alternative="less").pvalue < 0.05


def prior_posterior(model, X, y, n_draws=3, seed=0):
    """A Posterior whose draws are prior draws of the hyperparameters: enough to compare two ways of predicting."""
    from numpyro import handlers

    from inference.posterior import Posterior
    from zoo.data import make_data

    draws = []
    for key in jax.random.split(jax.random.PRNGKey(seed), n_draws):
        trace = handlers.trace(handlers.seed(model.sample_hyperparameters, key)).get_trace()
        draws.append({k: np.asarray(s["value"]) for k, s in trace.items() if s["type"] in ("sample", "deterministic")})
    samples = {k: np.stack([d[k] for d in draws])[None] for k in draws[0]}
    data = make_data(X, y, size=32, fill_row=model.space.fill_row())
    return Posterior(model, data, X, y, samples, {"lp": np.zeros((1, n_draws))}, {}, None)


@pytest.mark.parametrize("kwargs", [pytest.param({}, marks=pytest.mark.slow), {"share_like": True, "pooled": True}])
def test_predictions_from_one_paths_terms_equal_the_full_ones(kwargs):
    """`data_kernel` equals `kernel`. `predict_on_path` sums only the kernel terms of one path (its vertices, and with
    share_like the groups of its members); on that path's rows its means, variances and acquisition gradients must
    equal the full model's, and the per-path optimizer that uses it must report the full integrated acquisition at
    the point it returns. conditional_11: 6 vertices on 4 paths, categoricals inside leaves, 2 groups of like
    vertices."""
    from optim.acquisition import LogEI
    from optim.bench.problems import get_problem
    from optim.integrated import AcquisitionFunction
    from optim.path_lbfgs import LBFGSConfig, optimize_acquisition, random_rows
    from zoo.base import PathLocalPredictions, offers

    problem = get_problem("conditional_11")
    space = problem.space
    model = AddTree(space, **kwargs)
    assert offers(model, PathLocalPredictions) and not offers(AddTree(space, interactions=True), PathLocalPredictions)
    assert len(model.cat_cols) and (model.vertex_groups or not kwargs)
    configs = space.sample(14, seed=2)
    post = prior_posterior(model, space.encode(configs), np.array([problem(c) for c in configs]))
    draw, X = {k: v[0, 0] for k, v in post.samples.items()}, post.data.X
    # the likelihood's kernel (vertices stacked by their numbers of columns) is the same kernel
    assert np.allclose(jax.jit(model.data_kernel)(X, X, draw), jax.jit(model.kernel)(X, X, draw), rtol=0, atol=1e-12)
    acqf = AcquisitionFunction(post, LogEI(), best=float(np.min(post.y)))
    rng = np.random.default_rng(0)
    for k, path in enumerate(space.paths):
        rows = random_rows(space, path, 16, rng)
        local = acqf.on_path(k)
        assert local is not acqf
        (v_full, g_full), (v_path, g_path) = acqf(rows), local(rows)
        # the same sums in another order, equal to rounding: deep in log-EI's tail the rounding of the mean (1e-15
        # relative) is magnified, up to 1.5e-10 on values and 5e-11 relative on gradients of size 300 here; a
        # dropped term changes both at order 1
        assert np.allclose(v_path, v_full, rtol=0, atol=1e-8) and np.allclose(g_path, g_full, rtol=1e-8, atol=1e-8)
        assert np.allclose(local.scores(rows), v_full, rtol=0, atol=1e-8)
    x, value, k = optimize_acquisition(acqf, space, np.random.default_rng(1), LBFGSConfig(n_raw=64, n_restarts=2,
                                                                                            maxiter=20))
    assert space.active_path(space.decode(x)).index == k
    assert acqf(x[None])[0][0] == pytest.approx(value, abs=1e-9)
