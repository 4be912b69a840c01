"""The `additive` surrogate: a GP that is a sum of 1-D and 2-D parts over a sampled dependency forest
(Han, Arora & Scarlett 2021, paper 002), for high-dimensional continuous spaces.

Generative model (standardized y):

- ``graph`` ~ ForestPrior(D, gamma): a forest over the D inputs (zoo.forest_prior). By default the
  number of edges is uniform and the forest uniform given it (ours: under the paper's independent
  edges with gamma = 1/2, 002 Sec. 3.2, nearly all prior mass is on spanning trees; `gamma=0.5` gives
  that prior). Discrete; moved by inference.moves.graphs.
- ``lengthscale`` [D] and ``scale`` [D]: per-dimension kernel parameters shared by every component
  (002 Sec. 4.1). ``lengthscale`` ~ LogNormal(log 0.15, 1) by default (`lengthscale_prior=(median, sd)`
  sets another; `None` gives the zoo's prior for a 2-D kernel, median 5.8, the default until 2026-11-27).
  ``scale`` ~ HalfNormal(1/sqrt D), so the prior variance of f summed over dimensions stays about 1
  whatever D is. With that scale, a component whose lengthscale is far longer than the box varies by a
  small fraction of 1/sqrt D across it, so the 2-D kernel's prior favoured near-linear parts that the
  data could not bend: on Styblinski–Tang-50, Star-20 and Hartmann-6 among 14 inert inputs the short
  prior lowered the regret at 100 evaluations on each of 10 seeds (BENCHMARKS, "A shorter lengthscale
  prior for `additive`"; the median 0.15 was picked on Styblinski–Tang-50 among 5.8, 1, 0.3 and 0.15).
- ``noise`` (variance) and ``mean`` as the baseline GP.
- f = sum over components (Eq. 1-2): an edge (i, j) of the forest gives a 2-D RBF component with
  variance scale_i^2 + scale_j^2 (Eq. 7 writes its amplitude as sqrt(sum sigma_i^2); we read that as
  the component's standard deviation), an isolated dimension i a 1-D RBF component with variance
  scale_i^2. A dimension on some edge has no 1-D component of its own.

The kernel is built from the padded edge list of the forest (at most D - 1 edges), so a likelihood
costs O(D n^2) for the kernel plus the Cholesky. Per-component posterior moments (Eq. 3) serve the
message-passing optimizer through `zoo.base.DependencyForest`.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo.base import DependencyForest, NoiselessForm, Prepared, StructureMoves
from zoo.data import Data
from zoo.forest_prior import ForestPrior
from zoo.gp import ExactGP, GPArrays
from zoo.priors import lengthscale_prior
from zoo.space import CATEGORICAL, Space

COMPONENT_DIM = 2  # the largest component: what the zoo's lengthscale prior (lengthscale_prior=None) is scaled for
#: (median, sd of the log) of the default lengthscale prior (the module's docstring says why)
DEFAULT_LENGTHSCALE_PRIOR = (0.15, 1.0)


def forest_components(Z):
    """Padded component list of a forest [D, D]: (a [D], b [D], pair [D], valid [D]) int/bool arrays.

    Edges (i < j) come first, then isolated vertices (a = b = i, pair False); a forest on D vertices has
    at most D components. Jittable."""
    D = Z.shape[-1]
    upper = jnp.triu(Z, 1)
    ei, ej = jnp.nonzero(upper, size=D, fill_value=0)
    n_edges = jnp.sum(upper)
    isolated = ~jnp.any(Z, axis=1)
    (iso,) = jnp.nonzero(isolated, size=D, fill_value=0)
    n_iso = jnp.sum(isolated)
    k = jnp.arange(D)
    is_edge = k < n_edges
    iso_k = jnp.clip(k - n_edges, 0, D - 1)
    a = jnp.where(is_edge, ei, iso[iso_k])
    b = jnp.where(is_edge, ej, iso[iso_k])
    valid = k < n_edges + n_iso
    return a, b, is_edge & valid, valid


def random_forest_start(key, D: int, p: float = 0.5):
    """A random forest [D, D] (jittable): vertices in a random order, each joined with probability p to a
    uniformly chosen earlier vertex. One parent at most per vertex among earlier ones, so no cycle; about
    p (D - 1) edges. An over-dispersed chain start, not a prior draw (the prior's exact sampler is NumPy)."""
    k_order, k_parent, k_join = jax.random.split(key, 3)
    order = jax.random.permutation(k_order, D)
    position = jnp.arange(D)
    parent = order[jnp.floor(jax.random.uniform(k_parent, (D,)) * position).astype(jnp.int32)]
    join = (position > 0) & jax.random.bernoulli(k_join, p, (D,))
    Z = jnp.zeros((D, D), dtype=bool).at[order, parent].set(join)
    return Z | Z.T


class Additive(ExactGP, NoiselessForm, DependencyForest, StructureMoves):
    """Additive GP over a sampled forest of 1-D and 2-D RBF components (paper 002).

    Sites: ``graph`` [D, D] (discrete), ``lengthscale`` [D], ``scale`` [D], ``noise``, ``mean``. Takes
    spaces of Real and Integer parameters (integers relaxed to the unit interval); a space with
    categorical or conditional parameters is refused.

    `graph="posterior"` (default) samples the forest from its posterior (inference.moves.graphs);
    `graph="prior"` is the random-decomposition ablation: the forest walks under its prior only, ignoring
    the data, while NUTS fits the rest given it ("additive_random" in treezoo-bench).
    """

    name = "additive"
    #: log-EI over the message-passing optimizer's rows (the paper's UCB: acquisition="ucb"); see
    #: optim.message_passing for why
    default_acquisition = "logei"
    preferred_optimizers = ("message_passing",)
    discrete_sites = {"graph": "graph"}
    prior_is_traceable = False  # the forest prior's exact draw runs in NumPy (zoo.forest_prior)
    #: BO-loop MCMC budget: a likelihood costs O(D n^2) plus a Cholesky, so warm fits are short
    #: continuations (10 warm-up + 8 x 2 sweeps) with shallow NUTS trees (depth 3: at most 7 leapfrog steps, 56%
    #: of depth 4's refit time at the same regret, BENCHMARKS.md "Shallower NUTS trees"), run every 5th iteration
    #: (paper 002 relearns every 15); in between the draws condition on the new data
    sampler_defaults = {"num_chains": 2, "cold_warmup": 150, "warm_warmup": 10, "num_samples": 8, "thinning": 2,
                        "max_tree_depth": 3, "refit_every": 5}

    #: journals written before `lengthscale_prior` was recorded ran the zoo's 2-D prior
    options_added = {"lengthscale_prior": None}

    def __init__(self, space: Space, gamma: float | None = None, noise_prior=(-4.0, 1.0), graph: str = "posterior",
                 lengthscale_prior: tuple[float, float] | None = DEFAULT_LENGTHSCALE_PRIOR):
        super().__init__(space)
        if graph not in ("posterior", "prior"):
            raise ValueError(f"graph must be 'posterior' or 'prior', got {graph!r}")
        if lengthscale_prior is not None:
            pair = tuple(lengthscale_prior) if isinstance(lengthscale_prior, (tuple, list)) else ()
            if len(pair) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                         and math.isfinite(v) and v > 0 for v in pair):
                raise ValueError("lengthscale_prior must be (median, sd of the log), two positive numbers, got "
                                 f"{lengthscale_prior!r}")
            lengthscale_prior = tuple(float(v) for v in pair)
        self.lengthscale_prior = lengthscale_prior
        self.graph = graph
        self.discrete_sites = {"graph": "graph" if graph == "posterior" else "graph_prior"}
        if space.is_conditional or np.any(space.kinds == CATEGORICAL):
            raise ValueError("the 'additive' surrogate takes flat spaces of Real and Integer parameters; for "
                             "categorical or conditional parameters use 'gp', 'bark' (mixed), 'addtree' or "
                             "'jenatton' (conditional)")
        self.dim = space.dim
        self.graph_prior = ForestPrior(self.dim, gamma)
        self.gamma = gamma
        self.noise_prior = tuple(noise_prior)

    def options(self) -> dict:
        return {"gamma": self.gamma, "noise_prior": list(self.noise_prior), "graph": self.graph,
                "lengthscale_prior": None if self.lengthscale_prior is None else list(self.lengthscale_prior)}

    def offers(self, capability: type) -> bool:
        """The move context (the forest prior) serves only the prior-walk ablation."""
        return capability is not StructureMoves or self.graph == "prior"

    def move_context(self, data: Data, z: dict, sites: dict):
        """The prior-only graph walk's target: the forest prior."""
        return self.graph_prior

    # ---------------------------------------------------------------- model
    def sample_hyperparameters(self) -> dict:
        D = self.dim
        return {
            "graph": numpyro.sample("graph", self.graph_prior),
            "lengthscale": numpyro.sample("lengthscale", self._lengthscale_prior().expand([D]).to_event(1)),
            "scale": numpyro.sample("scale", dist.HalfNormal(1.0 / math.sqrt(D)).expand([D]).to_event(1)),
            "noise": numpyro.sample("noise", dist.LogNormal(*self.noise_prior)),
            "mean": numpyro.sample("mean", dist.Normal(0.0, 1.0)),
        }

    def _lengthscale_prior(self):
        """The prior of one lengthscale: LogNormal(log median, sd), or the zoo's for a 2-D kernel (None)."""
        if self.lengthscale_prior is None:
            return lengthscale_prior(COMPONENT_DIM)
        median, sd = self.lengthscale_prior
        return dist.LogNormal(math.log(median), sd)

    def init_discrete(self, key, data: Data) -> dict:
        """Each chain starts from its own random forest (`random_forest_start`), not from one graph for all
        (the paper's search starts empty), so that chains begin apart and r_hat compares something."""
        return {"graph": random_forest_start(key, self.dim)}

    def kernel(self, X1, X2, params):
        """Sum over the forest's components (002 Eq. 2, 7), accumulated one component at a time (a scan
        whose body is recomputed in the backward pass): no [D, N1, N2] tensor is stored, which halves
        the cost of a gradient at n = 256, D = 50."""
        a, b, pair, valid = forest_components(params["graph"])
        ell, s2 = params["lengthscale"], params["scale"] ** 2
        variance = jnp.where(valid, s2[a] + jnp.where(pair, s2[b], 0.0), 0.0)
        X1t, X2t = jnp.asarray(X1).T, jnp.asarray(X2).T
        u1, u2 = X1t[a] / ell[a][:, None], X2t[a] / ell[a][:, None]
        w1, w2 = X1t[b] / ell[b][:, None] * pair[:, None], X2t[b] / ell[b][:, None] * pair[:, None]

        @jax.checkpoint
        def add(K, c):
            v, p1, p2, q1, q2 = c
            return K + v * jnp.exp(-0.5 * ((p1[:, None] - p2[None, :]) ** 2 + (q1[:, None] - q2[None, :]) ** 2)), None
        K, _ = jax.lax.scan(add, jnp.zeros((X1t.shape[1], X2t.shape[1]), X1t.dtype), (variance, u1, u2, w1, w2))
        return K

    def kernel_diag(self, X, params):
        a, b, pair, valid = forest_components(params["graph"])
        s2 = params["scale"] ** 2
        total = jnp.sum(jnp.where(valid, s2[a] + jnp.where(pair, s2[b], 0.0), 0.0))
        return total * jnp.ones(X.shape[0], X.dtype)

    # ---------------------------------------------------------------- per-component moments (Eq. 3)
    def dependency_graphs(self, prepared: Prepared):
        return prepared.samples["graph"]

    def component_moments(self, prepared: Prepared, sample, a, b, pair, grid_a, grid_b):
        """Posterior mean and variance [C, R, R] of components (a_c, b_c) of posterior sample `sample` at
        the grid points (grid_a[c, r], grid_b[c, q]) (for a 1-D component, pair False, b is ignored),
        user scale without the constant mean (002 Eq. 3: mu^G = k^G(x, X) Delta^-1 y,
        var^G = k^G(x, x) - k^G(x, X) Delta^-1 k^G(X, x))."""
        samples, data, arrays = prepared
        s = jax.tree_util.tree_map(lambda v: v[sample], samples)
        arr: GPArrays = jax.tree_util.tree_map(lambda v: v[sample], arrays)
        ell, s2 = s["lengthscale"], s["scale"] ** 2
        X = data.X

        def one(ai, bi, is_pair, ga, gb):
            ka = jnp.exp(-0.5 * ((ga[:, None] - X[None, :, ai]) / ell[ai]) ** 2)  # [R, n]
            kb = jnp.where(is_pair, jnp.exp(-0.5 * ((gb[:, None] - X[None, :, bi]) / ell[bi]) ** 2), 1.0)
            variance = s2[ai] + jnp.where(is_pair, s2[bi], 0.0)
            k = variance * ka[:, None, :] * kb[None, :, :] * data.mask  # [R, R, n]
            mean = k @ arr.alpha
            var = variance - jnp.einsum("pqn,nm,pqm->pq", k, arr.Kinv, k)
            return mean, jnp.maximum(var, 1e-12 * variance)

        mean, var = jax.vmap(one)(a, b, pair, grid_a, grid_b)
        return data.y_std * mean, data.y_std**2 * var

    # ---------------------------------------------------------------- ArviZ
    def summarize_discrete(self, samples: dict) -> dict:
        """Per draw: the indicator of every pair (i < j) being an edge, and the number of edges."""
        Z = np.asarray(samples["graph"]).astype(bool)
        i, j = np.triu_indices(self.dim, 1)
        return {"edge": Z[..., i, j].astype(np.int8), "n_edges": Z[..., i, j].sum(-1)}

    def summarize_moves(self, move_stats: dict) -> dict:
        acc = np.asarray(move_stats["graph"])  # [C, S, 2]
        return {"accept_toggle": acc[..., 0], "accept_mutation": acc[..., 1]}

    def arviz_dims(self):
        names = list(self.space.names)
        i, j = np.triu_indices(self.dim, 1)
        dims = {"lengthscale": ["param"], "scale": ["param"], "edge": ["pair"]}
        coords = {"param": names, "pair": [f"{names[a]}-{names[b]}" for a, b in zip(i, j)]}
        return dims, coords

    def edge_probabilities(self, samples: dict) -> np.ndarray:
        """Posterior inclusion probability [D, D] of every edge (mean over draws)."""
        Z = np.asarray(samples["graph"]).astype(np.float64)
        return Z.reshape((-1,) + Z.shape[-2:]).mean(0)


__all__ = ["Additive", "forest_components"]
