"""The Add-Tree kernel (000, Definition 4) against a direct implementation; PSD; disjoint paths."""

import numpy as np
import pytest

from optim.problems import jenatton_large, jenatton_small
from zoo.addtree import AddTree


def np_matern52(a, b, ls):
    d = np.sqrt(np.sum(((np.asarray(a) - np.asarray(b)) / ls) ** 2))
    return (1 + np.sqrt(5) * d + 5 / 3 * d**2) * np.exp(-np.sqrt(5) * d)


def direct_addtree(space, model, params, a, b):
    """Definition 4: sum over the vertices on the common part of both paths (root to their LCA)."""
    pa, pb = space.active_path(a).nodes, space.active_path(b).nodes
    common = [u for u, w in zip(pa, pb) if u == w]
    total, i = 0.0, 0
    for v, (name, num, _, _, _) in enumerate(model.vertices):
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
              "variance": rng.uniform(0.1, 1.5, len(model.vertices))}
    configs = space.sample(40, seed=1)
    X = space.encode(configs)
    K = np.asarray(model.kernel(X, X, params))
    direct = np.array([[direct_addtree(space, model, params, a, b) for b in configs] for a in configs])
    assert np.allclose(K, direct, atol=1e-12)
    assert np.linalg.eigvalsh(K).min() > -1e-9
    assert np.allclose(np.asarray(model.kernel_diag(X, params)), np.diag(K))


def test_disjoint_paths_below_a_parameterless_root_are_uncorrelated():
    space = jenatton_small().space
    model = AddTree(space)
    params = {"lengthscale": np.ones(len(model.num_cols)), "variance": np.ones(len(model.vertices))}
    left = space.encode({"x1": 0, "x2": 0, "x4": 0.1, "r8": 0.5})
    right = space.encode({"x1": 1, "x3": 1, "x7": 0.1, "r9": 0.5})
    sibling = space.encode({"x1": 0, "x2": 1, "x5": 0.1, "r8": 0.5})
    K = np.asarray(model.kernel(np.stack([left, right, sibling]), np.stack([left, right, sibling]), params))
    assert K[0, 1] == 0.0 and K[1, 2] == 0.0
    assert K[0, 2] == pytest.approx(1.0)  # siblings share only vertex x1=0 (owning r8, equal values)
    assert [v[0] for v in model.vertices] == ["x1=0", "x1=0,x2=0", "x1=0,x2=1", "x1=1", "x1=1,x3=0", "x1=1,x3=1"]


def test_algorithm_2_matches_brute_force_over_paths():
    """Per-vertex maximization + sum along paths (000, Algorithm 2) equals the best joint per-path maximum."""
    import inference
    from optim.lbfgs import LBFGSConfig, optimize_path
    from optim.tree_search import VertexUCB, addtree_ucb_search

    problem = jenatton_small()
    space = problem.space
    configs = space.sobol(12, seed=3)
    X, y = space.encode(configs), [problem(c) for c in configs]
    model = AddTree(space)
    post = inference.sample(model, X, y, key=0, num_warmup=80, num_samples=8, num_chains=2)
    config = LBFGSConfig(n_raw=128, n_restarts=4, maxiter=60)
    x, value, path_idx = addtree_ucb_search(post, space, np.random.default_rng(0), config, t=5)
    dims = [len(v[1]) + len(v[2]) for v in model.vertices]
    ucb = VertexUCB(post, 5, dims)
    brute = []
    for path in space.paths:
        on_path = np.array([float(v[0] in path.nodes) for v in model.vertices])
        _, best = optimize_path(ucb.weighted(on_path), space, path, np.random.default_rng(1), config)
        brute.append(best)
    assert path_idx == int(np.argmax(brute))
    assert value == pytest.approx(max(brute), abs=1e-6)
    on_chosen = np.array([float(v[0] in space.paths[path_idx].nodes) for v in model.vertices])
    assert ucb.weighted(on_chosen).values(x[None])[0] == pytest.approx(value, abs=1e-9)
