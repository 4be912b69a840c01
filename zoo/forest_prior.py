"""Priors over forests on D labelled vertices (the dependency structures of paper 002).

A forest is stored as a symmetric boolean adjacency matrix [D, D] with a false diagonal, the encoding
that is unique per graph. Two priors, both uniform over the forests with a given number of edges, so
P(Z) = P(|E| = e) / count(D, e) with e = |E(Z)|:

- ``gamma=None`` (the default): the number of edges is uniform on 0..D-1. This is our choice, not the
  paper's. Under independent edges the number of forests with e edges grows so fast in e
  (D^(D-2) spanning trees) that nearly all prior mass sits on spanning trees, so every posterior draw
  carries spurious edges and the true ones rarely pass one half; a uniform edge count corrects for
  that multiplicity (as beta-binomial priors do in variable selection).
- ``gamma`` in (0, 1): independent edge inclusion with probability gamma, restricted to forests (002
  Sec. 3.2, Eq. 6 with the tree constraint; gamma = 1/2 is the paper's "no prior knowledge"):
  P(|E| = e) is proportional to count(D, e) gamma^e (1 - gamma)^(M - e).

count(n, e), the number of labelled forests on n vertices with e edges, comes from a recursion on the
tree holding the first vertex: it has s vertices (C(n-1, s-1) ways to choose them, s^(s-2) labelled
trees on them, Cayley) and the rest is a forest on n - s vertices with e - s + 1 edges. Exact draws
pick e, then follow the same recursion, with a uniform labelled tree from a random Pruefer sequence.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from numpyro.distributions import constraints


@functools.lru_cache(maxsize=None)
def forest_counts(n: int) -> tuple:
    """counts[m][e]: the number of labelled forests on m <= n vertices with e edges (exact integers)."""
    counts = [[1]]  # the empty forest
    for m in range(1, n + 1):
        row = [0] * m
        for s in range(1, m + 1):
            trees = math.comb(m - 1, s - 1) * (s ** (s - 2) if s >= 2 else 1)
            for e, c in enumerate(counts[m - s]):
                if c:
                    row[e + s - 1] += trees * c
        counts.append(row)
    return tuple(tuple(r) for r in counts)


def _log(c: int) -> float:
    return math.log(c) if c > 0 else -math.inf


def edge_count_log_probs(n: int, gamma: float | None = None) -> np.ndarray:
    """log P(|E| = e), e = 0..n-1: uniform for gamma None, else proportional to count(n, e) (gamma/(1-gamma))^e."""
    if gamma is None:
        return np.full(n, -math.log(n))
    log_r = math.log(gamma) - math.log1p(-gamma)
    w = np.array([_log(c) + e * log_r for e, c in enumerate(forest_counts(n)[n])])
    return w - np.logaddexp.reduce(w)


def _pruefer_tree(vertices: list, rng: np.random.Generator) -> list:
    """Edges of a uniformly random labelled tree on `vertices` (a random Pruefer sequence decoded)."""
    s = len(vertices)
    if s == 1:
        return []
    if s == 2:
        return [(vertices[0], vertices[1])]
    seq = list(rng.integers(0, s, size=s - 2))
    degree = [1] * s
    for v in seq:
        degree[v] += 1
    edges = []
    for v in seq:
        leaf = min(i for i in range(s) if degree[i] == 1)
        edges.append((vertices[leaf], vertices[v]))
        degree[leaf] -= 1
        degree[v] -= 1
    u, w = [i for i in range(s) if degree[i] == 1]
    edges.append((vertices[u], vertices[w]))
    return edges


def sample_forest_with_edges(n: int, edges: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random forest [n, n] bool among those with exactly `edges` edges."""
    counts = forest_counts(n)
    Z = np.zeros((n, n), dtype=bool)
    remaining, e = list(range(n)), int(edges)
    while remaining:
        m = len(remaining)
        # size s of the tree holding remaining[0]: C(m-1, s-1) s^(s-2) count(m - s, e - s + 1)
        weights = [math.comb(m - 1, s - 1) * (s ** (s - 2) if s >= 2 else 1)
                   * (counts[m - s][e - s + 1] if 0 <= e - s + 1 < len(counts[m - s]) else 0)
                   for s in range(1, m + 1)]
        total = sum(weights)
        u = int(rng.integers(0, 2**62)) * total // 2**62  # exact integer arithmetic: the counts are huge
        s, acc = 1, weights[0]
        while acc <= u:
            s += 1
            acc += weights[s - 1]
        others = [int(v) for v in rng.choice(remaining[1:], size=s - 1, replace=False)] if s > 1 else []
        tree = [remaining[0]] + others
        for a, b in _pruefer_tree(tree, rng):
            Z[a, b] = Z[b, a] = True
        taken = set(tree)
        remaining = [v for v in remaining if v not in taken]
        e -= s - 1
    return Z


def sample_forest(n: int, gamma: float | None, rng: np.random.Generator) -> np.ndarray:
    """One exact draw [n, n] bool from the forest prior: the number of edges, then a uniform forest of that size."""
    e = int(rng.choice(n, p=np.exp(edge_count_log_probs(n, gamma))))
    return sample_forest_with_edges(n, e, rng)


def component_labels(Z):
    """Label [D] of each vertex's connected component (its smallest vertex), by min-propagation (jittable)."""
    D = Z.shape[-1]
    big = jnp.int32(D)

    def body(state):
        labels, _ = state
        neighbour_min = jnp.min(jnp.where(Z, labels[None, :], big), axis=1)
        new = jnp.minimum(labels, neighbour_min)
        return new, jnp.any(new != labels)

    labels, _ = jax.lax.while_loop(lambda s: s[1], body, (jnp.arange(D, dtype=jnp.int32), jnp.array(True)))
    return labels


def is_forest(Z) -> jax.Array:
    """Whether a symmetric adjacency with a false diagonal is acyclic: edges = D - components (jittable)."""
    D = Z.shape[-1]
    labels = component_labels(Z)
    n_components = jnp.sum(labels == jnp.arange(D))
    return jnp.sum(jnp.triu(Z, 1)) == D - n_components


class _ForestConstraint(constraints.Constraint):
    """Symmetric boolean adjacency matrices with a false diagonal and no cycle."""

    event_dim = 2
    is_discrete = True

    def __call__(self, Z):
        Z = jnp.asarray(Z).astype(bool)
        symmetric = jnp.all(Z == jnp.swapaxes(Z, -1, -2), axis=(-1, -2))
        no_loops = ~jnp.any(jnp.diagonal(Z, axis1=-2, axis2=-1), axis=-1)
        acyclic = jnp.vectorize(is_forest, signature="(d,d)->()")(Z)
        return symmetric & no_loops & acyclic

    def feasible_like(self, prototype):
        return jnp.zeros_like(prototype, dtype=bool)


forests = _ForestConstraint()


class ForestPrior(dist.Distribution):
    """A prior over forests on D vertices (see the module docstring): `gamma=None` makes the number of edges
    uniform; a float is independent edge inclusion with that probability, restricted to forests.

    `log_prob(Z)` is the normalized log-probability of a forest (-inf elsewhere); `sample(key)` draws
    exactly (NumPy, seeded from the key: not traceable under jit, as the samplers never need it there).
    """

    support = forests
    arg_constraints = {}
    has_enumerate_support = False

    def __init__(self, num_vertices: int, gamma: float | None = None, *, validate_args=None):
        if not (isinstance(num_vertices, (int, np.integer)) and num_vertices >= 1):
            raise ValueError(f"num_vertices must be a positive integer, got {num_vertices!r}")
        if gamma is not None and not 0.0 < float(gamma) < 1.0:
            raise ValueError(f"gamma must be None or in (0, 1), got {gamma!r}")
        self.num_vertices = int(num_vertices)
        self.gamma = None if gamma is None else float(gamma)
        n = self.num_vertices
        # log P(Z) for a forest with e edges: log P(|E| = e) - log count(n, e)
        log_counts = np.array([_log(c) for c in forest_counts(n)[n]])
        self.log_prob_by_edges = edge_count_log_probs(n, self.gamma) - log_counts
        super().__init__(batch_shape=(), event_shape=(n, n), validate_args=validate_args)

    def log_prob(self, value):
        Z = jnp.asarray(value).astype(bool)
        edges = jnp.sum(jnp.triu(Z, 1), axis=(-1, -2))
        lp = jnp.asarray(self.log_prob_by_edges)[jnp.clip(edges, 0, self.num_vertices - 1)]
        return jnp.where(forests(Z), lp, -jnp.inf)

    def sample(self, key, sample_shape=()):
        """Forests drawn on the host (the exact sampler is sequential NumPy), seeded by the key's bits: a host
        callback, so the draw also works inside `jax.jit` and `vmap` (e.g. a jitted `Predictive`)."""
        shape = tuple(sample_shape) + self.event_shape
        count = int(np.prod(sample_shape)) if sample_shape else 1

        def draw(seed):
            rng = np.random.default_rng(np.asarray(seed).astype(np.uint32).ravel().tolist())
            draws = np.stack([sample_forest(self.num_vertices, self.gamma, rng) for _ in range(count)])
            return draws.reshape(shape)

        bits = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
        return jax.pure_callback(draw, jax.ShapeDtypeStruct(shape, jnp.bool_), bits, vmap_method="sequential")

    def edge_count_log_probs(self) -> np.ndarray:
        """Exact log P(|E| = e), e = 0..D-1."""
        return edge_count_log_probs(self.num_vertices, self.gamma)


__all__ = ["ForestPrior", "component_labels", "edge_count_log_probs", "forest_counts", "is_forest",
           "sample_forest", "sample_forest_with_edges"]
