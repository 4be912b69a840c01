"""Acquisition search that uses the tree structure of a conditional space.

Add-Tree-GP-UCB (000, Algorithm 2): the Add-Tree posterior is a sum of per-vertex components, and so
is the integrated UCB: u(x) = sum over vertices v on x's path of mean_s[-mu_s^v(x_v) + sqrt(beta_v)
sigma_s^v(x_v)] (for minimization). Each vertex's term is maximized on its own, in that vertex's low
dimension (independent problems), then summed along every root-to-leaf path; the best path and the
concatenation of its vertices' maximizers is the next point. beta_v = 0.2 d_v log(2t) with d_v the
dimension being optimized (000 Section 4.2). With `AddTree(share_like=True)` each group's shared term
is folded into the member vertex on the path (`AddTree.component_kernels`), so the split still holds.

Jenatton's two-step search (001 Section 3.2) first picks a path by the path-level acquisition, then
optimizes the leaf acquisition on that path only.

Each is a registered optimizer (optim.registry) that states the capability it needs: "vertex_ucb" needs
`zoo.base.AdditiveComponents` and UCB, "two_step" needs `zoo.base.PathPredictions`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from optim.integrated import ACQ_BATCH, AcquisitionFunction, compiled_prepare, evaluate_in_chunks, on_path
from optim.path_lbfgs import LBFGSConfig, optimize_path, optimize_region
from zoo.compiled import compiled


def _build_vertex_ucb(surrogate):
    def total(X, prepared, weights, sqrt_beta):
        mean, var = surrogate.predict_components(prepared, X)  # [S, V, N]
        per_vertex = jnp.mean(-mean + sqrt_beta[None, :, None] * jnp.sqrt(jnp.maximum(var, 1e-30)), axis=0)
        values = weights @ per_vertex  # [N]
        return jnp.sum(values), values

    def vg(prepared, X, weights, sqrt_beta):
        (_, values), grads = jax.value_and_grad(total, has_aux=True)(X, prepared, weights, sqrt_beta)
        return values, grads
    return jax.jit(vg)


class VertexUCB:
    """Integrated per-vertex UCB of an additive surrogate; `for_vertex(v)` acts like an AcquisitionFunction."""

    def __init__(self, posterior, t: int, dims, beta=None, batch: int = ACQ_BATCH, prepared=None):
        self.surrogate = posterior.surrogate
        self.batch = batch
        self._prepared = (prepared if prepared is not None
                          else compiled_prepare(self.surrogate)(posterior.flat_samples(), posterior.data))
        self._vg = compiled("vertex_ucb", _build_vertex_ucb, self.surrogate)
        dims = np.asarray(dims, dtype=np.float64)
        betas = np.full(len(dims), beta) if beta is not None else 0.2 * dims * np.log(2.0 * max(t, 1))
        self.sqrt_beta = np.sqrt(betas)
        self.n_evals = 0

    def for_vertex(self, v: int):
        weights = np.zeros(len(self.sqrt_beta))
        weights[v] = 1.0
        return self.weighted(weights)

    def weighted(self, weights) -> "WeightedUCB":
        """sum_v weights[v] * (integrated UCB of vertex v), with the AcquisitionFunction call interface."""
        return WeightedUCB(self, np.asarray(weights, dtype=np.float64))

    def _eval(self, X, weights):
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        vals, grads, self.n_evals = evaluate_in_chunks(
            lambda chunk: self._vg(self._prepared, chunk, weights, self.sqrt_beta), X, self.batch, self.n_evals)
        return vals, grads


class WeightedUCB:
    """A fixed weighting of a VertexUCB's per-vertex terms: call on rows -> (values, grads)."""

    def __init__(self, ucb: VertexUCB, weights: np.ndarray):
        self.ucb, self.weights = ucb, weights

    def __call__(self, X, dim=None):
        return self.ucb._eval(X, self.weights)

    def values(self, X, dim=None):
        return self.ucb._eval(X, self.weights)[0]

    def scores(self, X, batch=None, dim=None):
        """`values` (the per-vertex UCB has no cheaper values-only form)."""
        return self.values(X, dim)


def component_region(space, component):
    """(base row, free columns) for one component: the decisions of a path through it, its own columns free."""
    through = next(p for p in space.paths if component.name in p.nodes)
    free = np.zeros(space.dim, dtype=bool)
    free[component.columns] = True
    return space.path_row(through), free


def addtree_ucb_search(acqf: AcquisitionFunction, space, rng, config: LBFGSConfig = LBFGSConfig()):
    """The "vertex_ucb" optimizer, Algorithm 2 of 000 with integrated UCB: each component's UCB maximized
    on its own columns, then summed along every path; returns (encoded row, acquisition value, path index)."""
    components = acqf.surrogate.components
    dims = [len(c.columns) for c in components]
    ucb = VertexUCB(acqf.posterior, acqf.t, dims, acqf.acquisition.beta, prepared=acqf.prepared)
    best_rows, best_vals = [], []
    for v, component in enumerate(components):  # independent low-dimensional problems (parallelizable)
        x, val = optimize_region(ucb.for_vertex(v), space, *component_region(space, component), rng, config)
        best_rows.append(x)
        best_vals.append(val)
    totals = []
    for path in space.paths:
        row = space.path_row(path)
        total = 0.0
        for v, component in enumerate(components):
            if component.name in path.nodes:
                row[component.columns] = best_rows[v][component.columns]
                total += best_vals[v]
        totals.append((total, row))
    i = int(np.argmax([tv for tv, _ in totals]))
    return totals[i][1], totals[i][0], i


def two_step_search(acqf: AcquisitionFunction, space, rng, config: LBFGSConfig = LBFGSConfig()):
    """The "two_step" optimizer, Jenatton et al.'s search (001 Section 3.2): (encoded row, value, path index).

    Step 1 scores every path by the path acquisition of Eq. 6 (EI of b_p + z_p'c, c integrated out,
    averaged over posterior samples), maximized jointly over the path's shared inner-node
    parameters. Step 2 maximizes the leaf acquisition (Eq. 5) on the winning path only, over all
    of that path's parameters, shared ones included (multi-start L-BFGS-B).
    """
    model = acqf.surrogate
    path_acqf = acqf.with_moments("path")
    scores = []
    for path in space.paths:
        free = np.zeros(space.dim, dtype=bool)
        free[model.shared_columns(path)] = True
        _, value = optimize_region(path_acqf, space, space.path_row(path), free, rng, config)
        scores.append(value)
    i = int(np.argmax(scores))
    x, value = optimize_path(on_path(acqf, i), space, space.paths[i], rng, config)
    return x, value, i
