"""Binary trees as fixed-size heap arrays, and the BART tree prior over them (003 Sections 4-5).

A tree is one float array ``[n_nodes, 3 + max_cats]`` in heap layout (node ``i`` has children
``2i+1`` and ``2i+2``; depth ``d`` holds nodes ``2^d - 1 .. 2^(d+1) - 2``). Channels:
``0`` split flag (1 = decision node), ``1`` split feature (column index), ``2`` threshold (numeric
columns, encoded units; a row goes left when ``x <= threshold``), ``3:`` category mask (categorical
columns; a row goes left when its category's bit is 1). Nodes that do not exist hold zeros.
A forest stacks ``m`` trees: ``[m, n_nodes, 3 + max_cats]``.

The prior (003 Sec. 4 Eq. 5 and Sec. 5.2): a node at depth ``d`` is a decision node with probability
``alpha (1 + d)^-beta``; its feature is uniform over the features that can still split there, and
its rule is uniform over the sub-domain that reaches the node: a threshold uniform on the interval
(reals), a cut uniform among the integer values (integers), a uniformly drawn non-trivial subset of
the categories that reach the node (categoricals). Trees are truncated at ``max_depth``: a node there
never splits (the sampler and this prior agree on that, so the truncation is exact, not approximate).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.distributions import Distribution, constraints

from zoo.compiled import compiled
from zoo.space import CATEGORICAL, INTEGER, REAL, Space

SPLIT, FEATURE, THRESHOLD, MASK = 0, 1, 2, 3
#: the local edits of a tree that the structure moves make (inference.moves.tree_moves)
GROW, PRUNE, CHANGE = 0, 1, 2


@dataclass(frozen=True, eq=False)
class TreeSpec:
    """Static description of the columns trees split on, and the prior's hyperparameters."""

    kinds: np.ndarray  # [D] REAL / INTEGER / CATEGORICAL
    lo0: np.ndarray  # [D] root interval of numeric columns (encoded units; integers: half-grid ends)
    hi0: np.ndarray  # [D]
    grid: np.ndarray  # [D] integers: number of grid steps (high - low); 0 otherwise
    n_cats: np.ndarray  # [D] category slots (choices, plus one for 'inactive' where a column can be)
    max_depth: int = 6
    alpha: float = 0.95
    beta: float = 2.0

    @classmethod
    def from_space(cls, space: Space, max_depth: int = 6, alpha: float = 0.95, beta: float = 2.0):
        if not (0.0 < alpha < 1.0) or beta < 0:
            raise ValueError(f"need 0 < alpha < 1 and beta >= 0, got alpha={alpha!r}, beta={beta!r}")
        if not (isinstance(max_depth, int) and 1 <= max_depth <= 10):
            raise ValueError(f"max_depth must be an integer in [1, 10], got {max_depth!r}")
        kinds = np.asarray(space.kinds, dtype=np.int64)
        grid = np.array([c.high - c.low if c.kind == INTEGER else 0 for c in space.columns], dtype=np.float64)
        half = np.where(kinds == INTEGER, 0.5 / np.maximum(grid, 1), 0.0)
        always = np.array([all(p.active[j] for p in space.paths) for j in range(space.dim)])
        n_cats = np.where(kinds == CATEGORICAL, space.n_choices + (~always).astype(np.int64), 0)
        return cls(kinds, -half, 1.0 + half, grid, n_cats.astype(np.int64), max_depth, float(alpha), float(beta))

    @property
    def dim(self) -> int:
        return int(self.kinds.shape[0])

    @property
    def max_cats(self) -> int:
        return max(int(self.n_cats.max(initial=0)), 1)

    @property
    def n_nodes(self) -> int:
        return 2 ** (self.max_depth + 1) - 1

    @property
    def width(self) -> int:
        return MASK + self.max_cats

    @property
    def depth(self) -> np.ndarray:
        """[n_nodes] depth of each heap slot."""
        return np.floor(np.log2(np.arange(self.n_nodes) + 1.0) + 1e-9).astype(np.int64)

    def split_probability(self, depth):
        """alpha (1 + d)^-beta (003 Eq. 5); zero at the truncation depth."""
        return jnp.where(depth < self.max_depth, self.alpha * (1.0 + depth) ** (-self.beta), 0.0)

    def root_reach(self) -> np.ndarray:
        """[D, C] categories present at the root."""
        return np.arange(self.max_cats)[None, :] < self.n_cats[:, None]

    def key(self) -> tuple:
        return (tuple(self.kinds), tuple(self.grid), tuple(self.n_cats), self.max_depth, self.alpha, self.beta)


def category_index(spec: TreeSpec, x):
    """Category slot of an encoded categorical value: inactive (-1) maps to the last slot."""
    return jnp.where(x < 0, spec.n_cats - 1, jnp.round(x)).astype(jnp.int32)


# ------------------------------------------------------------------------------- routing
def goes_left(spec: TreeSpec, node_row, x):
    """Whether encoded row x [D] goes to the left child of a decision node."""
    f = node_row[FEATURE].astype(jnp.int32)
    xf = x[f]
    cat = node_row[MASK:][jnp.clip(category_index(spec, x)[f], 0, spec.max_cats - 1)] > 0.5
    return jnp.where(jnp.asarray(spec.kinds)[f] == CATEGORICAL, cat, xf <= node_row[THRESHOLD])


def route(spec: TreeSpec, tree, X):
    """[N] heap index of the leaf each encoded row of X [N, D] falls in."""
    def one(x):
        node = jnp.int32(0)
        for _ in range(spec.max_depth):
            row = tree[node]
            step = jnp.where(goes_left(spec, row, x), 1, 2)
            node = jnp.where(row[SPLIT] > 0.5, 2 * node + step, node)
        return node
    return jax.vmap(one)(X)


def route_forest(spec: TreeSpec, forest, X):
    """[m, N] leaf index of every row in every tree."""
    return jax.vmap(route, in_axes=(None, 0, None))(spec, forest, X)


def compiled_router(spec: TreeSpec):
    """`route_forest` jitted for one TreeSpec (shared through zoo.compiled): the routing loop dispatched
    eagerly takes seconds, so NumPy-side callers (the MIP, benchmark problems) use this."""
    return compiled("route_forest", lambda _: jax.jit(functools.partial(route_forest, spec)), spec.key())


def shared_leaf_fraction(leaves1, leaves2):
    """Forest kernel (003 Eq. 2 and 4): fraction of trees in which two rows share a leaf, [N1, N2]."""
    return jnp.mean((leaves1[:, :, None] == leaves2[:, None, :]).astype(jnp.float64), axis=0)


# ------------------------------------------------------------------------------- domains
def node_domain(spec: TreeSpec, tree, i):
    """Sub-domain reaching node i: numeric intervals lo, hi [D] and reachable categories [D, C]."""
    depth = jnp.asarray(spec.depth)[i]
    lo, hi = jnp.asarray(spec.lo0), jnp.asarray(spec.hi0)
    reach = jnp.asarray(spec.root_reach())
    for k in range(spec.max_depth):
        a = jnp.right_shift(i + 1, jnp.maximum(depth - k, 0)) - 1
        child = jnp.right_shift(i + 1, jnp.maximum(depth - k - 1, 0)) - 1
        cut = restrict(spec, lo, hi, reach, tree[a], child == 2 * a + 1)
        lo, hi, reach = (jnp.where(k < depth, c, d) for c, d in zip(cut, (lo, hi, reach)))
    return lo, hi, reach


def restrict(spec: TreeSpec, lo, hi, reach, row, left):
    """The sub-domain of a child: the parent's (lo, hi, reach) cut by the parent's rule `row`."""
    hit = jnp.arange(spec.dim) == row[..., FEATURE, None].astype(jnp.int32)
    t = row[..., THRESHOLD, None]
    new_hi = jnp.where(hit & left, jnp.minimum(hi, t), hi)
    new_lo = jnp.where(hit & jnp.logical_not(left), jnp.maximum(lo, t), lo)  # left may be a Python bool
    side = jnp.where(left, row[..., MASK:] > 0.5, row[..., MASK:] < 0.5)
    return new_lo, new_hi, jnp.where(hit[..., None], reach & side[..., None, :], reach)


def all_domains(spec: TreeSpec, tree):
    """node_domain for every heap slot, level by level: lo, hi [n_nodes, D], reach [n_nodes, D, C]."""
    lo = [jnp.asarray(spec.lo0)[None]]
    hi = [jnp.asarray(spec.hi0)[None]]
    reach = [jnp.asarray(spec.root_reach())[None]]
    for d in range(spec.max_depth):
        rows = tree[2**d - 1: 2 ** (d + 1) - 1]
        l_lo, l_hi, l_reach = restrict(spec, lo[-1], hi[-1], reach[-1], rows, True)
        r_lo, r_hi, r_reach = restrict(spec, lo[-1], hi[-1], reach[-1], rows, False)
        interleave = lambda a, b: jnp.stack([a, b], axis=1).reshape((-1,) + a.shape[1:])  # noqa: E731
        lo.append(interleave(l_lo, r_lo))
        hi.append(interleave(l_hi, r_hi))
        reach.append(interleave(l_reach, r_reach))
    return jnp.concatenate(lo), jnp.concatenate(hi), jnp.concatenate(reach)


def split_probabilities(spec: TreeSpec, lo, hi, reach, depth):
    """Prior split probability of nodes with these sub-domains and depths (0 where nothing can split)."""
    avail_any = jnp.any(available(spec, lo, hi, reach), axis=-1)
    return jnp.where(avail_any, spec.split_probability(depth), 0.0)


def _counts(spec: TreeSpec, lo, hi, reach):
    """Integer values in each integer interval and categories reaching, per column."""
    n_int = jnp.round((hi - lo) * jnp.asarray(spec.grid))
    n_cat = jnp.sum(reach, axis=-1)
    return n_int, n_cat


def available(spec: TreeSpec, lo, hi, reach):
    """[D] columns that can still split on this sub-domain."""
    n_int, n_cat = _counts(spec, lo, hi, reach)
    kinds = jnp.asarray(spec.kinds)
    return jnp.where(kinds == REAL, hi - lo > 1e-12, jnp.where(kinds == INTEGER, n_int >= 2, n_cat >= 2))


def rule_log_prob(spec: TreeSpec, lo, hi, reach, row):
    """log Pr(rule) of a node's rule under the uniform rule prior of its sub-domain; -inf if invalid."""
    avail = available(spec, lo, hi, reach)
    n_avail = jnp.sum(avail)
    f = row[FEATURE].astype(jnp.int32)
    t = row[THRESHOLD]
    n_int, n_cat = _counts(spec, lo, hi, reach)
    kind = jnp.asarray(spec.kinds)[f]
    mask = row[MASK:] > 0.5
    r = reach[f]
    n_left = jnp.sum(mask & r)
    cut = (t - lo[f]) * jnp.asarray(spec.grid)[f]
    ok_real = (t > lo[f]) & (t < hi[f])
    ok_int = (jnp.abs(cut - jnp.round(cut)) < 1e-6) & (cut > 0.5) & (cut < n_int[f] - 0.5)
    ok_cat = ~jnp.any(mask & ~r) & (n_left > 0) & (n_left < n_cat[f])
    lp_value = jnp.where(kind == REAL, -jnp.log(jnp.maximum(hi[f] - lo[f], 1e-300)),
                         jnp.where(kind == INTEGER, -jnp.log(jnp.maximum(n_int[f] - 1, 1)),
                                   -jnp.log(jnp.maximum(2.0 ** n_cat[f] - 2, 1))))
    ok = avail[f] & jnp.where(kind == REAL, ok_real, jnp.where(kind == INTEGER, ok_int, ok_cat))
    ok = ok & (f >= 0) & (f < spec.dim)
    return jnp.where(ok, lp_value - jnp.log(jnp.maximum(n_avail, 1)), -jnp.inf)


def draw_rule(spec: TreeSpec, key, lo, hi, reach):
    """A node row (split flag set) with a rule drawn from the rule prior of the sub-domain."""
    k_f, k_v = jax.random.split(key)
    avail = available(spec, lo, hi, reach)
    f = jax.random.categorical(k_f, jnp.where(avail, 0.0, -jnp.inf))
    n_int, n_cat = _counts(spec, lo, hi, reach)
    kind = jnp.asarray(spec.kinds)[f]
    u = jax.random.uniform(k_v)
    t_real = lo[f] + u * (hi[f] - lo[f])
    cut = 1.0 + jnp.floor(u * jnp.maximum(n_int[f] - 1, 1))
    t_int = lo[f] + cut / jnp.maximum(jnp.asarray(spec.grid)[f], 1)
    r = reach[f]
    n_subsets = 2.0 ** n_cat[f] - 2.0
    code = 1 + jnp.floor(u * n_subsets).astype(jnp.int64)  # 1 .. 2^k - 2: non-trivial subsets
    rank = jnp.cumsum(r) - 1
    mask = r & (jnp.right_shift(code, jnp.maximum(rank, 0)) & 1).astype(bool)
    t = jnp.where(kind == REAL, t_real, jnp.where(kind == INTEGER, t_int, 0.0))
    m = jnp.where(kind == CATEGORICAL, mask, False).astype(jnp.float64)
    return jnp.concatenate([jnp.array([1.0, f, t], dtype=jnp.float64), m])


# ------------------------------------------------------------------------------- structure
def children(spec: TreeSpec):
    idx = np.arange(spec.n_nodes)
    return np.minimum(2 * idx + 1, spec.n_nodes - 1), np.minimum(2 * idx + 2, spec.n_nodes - 1)


def exists(spec: TreeSpec, tree):
    """[n_nodes] which heap slots are nodes of the tree (the root, and children of decision nodes)."""
    parent = np.maximum((np.arange(spec.n_nodes) - 1) // 2, 0)
    split = tree[:, SPLIT] > 0.5
    return jnp.concatenate([jnp.array([True]), split[parent[1:]]])


def singly_internal(spec: TreeSpec, tree):
    """[n_nodes] decision nodes whose two children are leaves (the prune / change targets)."""
    split = tree[:, SPLIT] > 0.5
    left, right = children(spec)
    has_children = np.arange(spec.n_nodes) < (spec.n_nodes - 1) // 2
    return split & jnp.where(has_children, ~split[left] & ~split[right], False)


def tree_log_prob(spec: TreeSpec, tree, domains=None):
    """log p(T) under the BART prior with the uniform rule prior (003 Eq. 5, Sec. 5.2); -inf if invalid."""
    lo, hi, reach = all_domains(spec, tree) if domains is None else domains
    split = tree[:, SPLIT] > 0.5
    ex = exists(spec, tree)
    p = split_probabilities(spec, lo, hi, reach, jnp.asarray(spec.depth))
    rule = jax.vmap(rule_log_prob, in_axes=(None, 0, 0, 0, 0))(spec, lo, hi, reach, tree)
    lp = jnp.where(ex, jnp.where(split, jnp.log(p) + rule, jnp.log1p(-p)), jnp.where(split, -jnp.inf, 0.0))
    return jnp.sum(lp)


def sample_tree(spec: TreeSpec, key):
    """One tree drawn from the prior, node by node in heap order (parents before children)."""
    tree = jnp.zeros((spec.n_nodes, spec.width))
    keys = jax.random.split(key, spec.n_nodes)

    def body(i, tree):
        k_split, k_rule = jax.random.split(keys[i])
        lo, hi, reach = node_domain(spec, tree, i)
        parent = jnp.maximum((i - 1) // 2, 0)
        ex = (i == 0) | (tree[parent, SPLIT] > 0.5)
        avail_any = jnp.any(available(spec, lo, hi, reach))
        p = jnp.where(avail_any & ex, spec.split_probability(jnp.asarray(spec.depth)[i]), 0.0)
        row = draw_rule(spec, k_rule, lo, hi, reach)
        do = jax.random.uniform(k_split) < p
        return tree.at[i].set(jnp.where(do, row, jnp.zeros_like(row)))
    return jax.lax.fori_loop(0, spec.n_nodes, body, tree)


def leaf_count(spec: TreeSpec, forest):
    """[..., m] number of leaves of each tree (decision nodes + 1)."""
    return jnp.sum(forest[..., SPLIT] > 0.5, axis=-1) + 1


def tree_depth(spec: TreeSpec, forest):
    """[..., m] depth of each tree (0 for a single leaf)."""
    split = forest[..., SPLIT] > 0.5
    return jnp.max(jnp.where(split, jnp.asarray(spec.depth) + 1, 0), axis=-1)


def move_acceptance_rates(counts) -> dict:
    """ArviZ sample_stats from the tree moves' (proposed, accepted) counts [C, S, 2, 3] per move type:
    accept_grow / accept_prune / accept_change [C, S] (NaN where a type was never proposed)."""
    counts = np.asarray(counts)
    out = {}
    for k, name in enumerate(("grow", "prune", "change")):
        proposed, accepted = counts[..., 0, k], counts[..., 1, k]
        out[f"accept_{name}"] = np.where(proposed > 0, accepted / np.maximum(proposed, 1e-300), np.nan)
    return out


class TreeLikelihood:
    """The likelihood change of a tree edit, plugged into the generic grow / prune / change moves by a
    model whose likelihood depends on a forest through its leaf assignments (BARK's forest kernel; a
    treed GP's leaf likelihoods). Both methods are jittable; `state` is any pytree the model caches."""

    def init(self, leaves):
        """A cache for a sweep, from the leaf of every data row in every tree [m, n_pad]."""
        raise NotImplementedError

    def delta(self, state, tree_index, kind, node, old_leaves, new_leaves):
        """(log-likelihood change, updated cache) when tree `tree_index` is edited by `kind` (GROW /
        PRUNE / CHANGE) at heap node `node`, moving the data rows from `old_leaves` to `new_leaves` [n_pad]."""
        raise NotImplementedError


class BARTPrior(Distribution):
    """The BART prior over a forest of m trees in heap layout (003 Eq. 5 with the uniform rule prior).

    ``sample`` draws every tree independently from the prior; ``log_prob`` scores a forest (sum over
    trees of the node split / no-split terms and the rule terms; -inf for an invalid forest).
    """

    arg_constraints = {}
    support = constraints.independent(constraints.real, 3)
    pytree_aux_fields = ("spec", "num_trees")

    def __init__(self, spec: TreeSpec, num_trees: int, validate_args=None):
        self.spec = spec
        self.num_trees = int(num_trees)
        super().__init__(batch_shape=(), event_shape=(self.num_trees, spec.n_nodes, spec.width),
                         validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        n = int(math.prod(sample_shape)) * self.num_trees
        trees = jax.vmap(lambda k: sample_tree(self.spec, k))(jax.random.split(key, n))
        return trees.reshape(tuple(sample_shape) + self.event_shape)

    def log_prob(self, value):
        flat = value.reshape((-1,) + self.event_shape[1:])
        lp = jax.vmap(lambda t: tree_log_prob(self.spec, t))(flat)
        return jnp.sum(lp.reshape(value.shape[: value.ndim - 3] + (self.num_trees,)), axis=-1)
