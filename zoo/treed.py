"""HTBO: a partition tree with a GP in every leaf, each leaf's hyperparameters scored by the depth-weighted
pseudo-likelihood of its path (Assael et al. 2014; paper 004).

Generative description on standardized y, per leaf j of the partition T (heap-array tree, zoo.heap_trees):
    theta_j = (lengthscale [d], outputscale, noise, mean[, warp_a, warp_b])  ~ `Treed.base_priors`
    (the zoo's lengthscale prior, LogNormal(0, 1) amplitude, LogNormal(-4, 1) noise, N(0, 1) mean)
    target  p(theta) * prod_j prod_{i=0..depth_j} p(y_(S_ji) | x_(S_ji), theta_j) ^ w_i,   w_i = 2 / (1 + i)
where S_j0 is the data of leaf j and S_ji (i >= 1) the data of its i-th ancestor outside the (i-1)-th
(004 Eq. 8-10: the leaf's own factor squared, the others harmonically down-weighted up the path). Every
factor is the exact GP marginal likelihood (004 Eq. 6) of its rows under the leaf's Matérn-5/2 ARD GP.
Hyperparameters live on every heap slot; the slots that are not leaves of T carry no factor and follow
their prior, so the leaves of any partition have their hyperparameters ready (this is what lets the
partition move without a dimension change). Slots are independent draws of one prior (``tie=None``, the
paper's), or tied down the tree (``tie=s``: a slot's log-hyperparameters are its parent's plus N(0, s^2),
the mean likewise): a hierarchical prior under which a freshly grown leaf starts near its parent.
NUTS samples the standard-normal sites ``<name>_z``; the per-slot values are deterministic sites.

The partition comes one of two ways (``partition=``):
- ``"cart"`` (`treed`, the paper's): rebuilt from the data by the greedy uncertainty-reduction rule of
  004 Eq. 5, with the split point exactly on an observation that then belongs to both children
  (Sec. 3.1), a minimum number of observations per leaf (5 in the paper) and a maximum depth. It is a
  deterministic function of the data (site ``partition``, a `numpyro.deterministic`).
- ``"mcmc"`` (`treed_mcmc`): a discrete site with the BART tree prior of zoo.heap_trees (alpha, beta;
  tgp's defaults 0.5, 2) moved by the generic grow / prune / change moves with this model's likelihood
  change (`WeightedLeafLikelihood`), slots tied (tie 0.5). The moves and NUTS preserve the unnormalized
  density p(T) p(theta) prod_j prod_i p^w_i(...) above, restricted to partitions whose leaves hold at
  least min(min_leaf, n) observations. Caveat: the weighted factors count each observation several
  times, more often the deeper the tree, so this is a pseudo-posterior over partitions, not the
  posterior of a generative model (the paper uses the weights for hyperparameters only): where the leaf
  GPs' log-likelihood per observation is negative, every split costs about that much per observation
  and the chain stays at one leaf. ``likelihood="leaves"`` (`treed_bayes`) scores each leaf's GP on its
  own data only (tgp's treed GP, Gramacy & Lee 2008): a proper posterior over partitions, the borrowing
  of strength across leaves left to the tied prior. Thresholds come from the prior, so (almost surely)
  no observation lies on one.

Predictions at x use the GP of the leaf x is routed to (x <= threshold goes left), conditioned on that
leaf's own data (shared split points included). ``warp=True`` adds per-leaf input warping
(zoo.kernels.kumaraswamy_warp; 004 "HTBO WARP"), its parameters scored by the same weighted likelihood.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo import linalg
from zoo.base import NoiselessForm, Prepared, StructureMoves, Surrogate
from zoo.compiled import compiled
from zoo.data import Data
from zoo.heap_trees import (
    FEATURE,
    GROW,
    PRUNE,
    SPLIT,
    THRESHOLD,
    BARTPrior,
    TreeLikelihood,
    TreeSpec,
    exists,
    move_acceptance_rates,
    route,
)
from zoo.kernels import kumaraswamy_warp, matern52
from zoo.priors import LENGTHSCALE_SCALE, WARP_PRIOR, lengthscale_loc
from zoo.space import CATEGORICAL, INTEGER, Space

PARTITIONS = ("cart", "mcmc")
#: "weighted": 004 Eq. 8-10 for every leaf; "leaves": each leaf's GP on its own data only (tgp's treed GP)
LIKELIHOODS = ("weighted", "leaves")


def path_weights(max_depth: int) -> np.ndarray:
    """w_i = 2 / (1 + i) for the factor i levels above a leaf (004 Eq. 9): 2, 1, 2/3, 1/2, ..."""
    return 2.0 / (1.0 + np.arange(max_depth + 1))


def heap_depth(n_nodes: int) -> np.ndarray:
    return np.floor(np.log2(np.arange(n_nodes) + 1.0) + 1e-9).astype(np.int64)


def ancestors(max_depth: int) -> np.ndarray:
    """[n_nodes, max_depth + 1] heap index of the i-th ancestor of each slot (itself at i = 0), or -1 above
    the root."""
    n = 2 ** (max_depth + 1) - 1
    depth = heap_depth(n)
    i = np.arange(max_depth + 1)
    anc = ((np.arange(n)[:, None] + 1) >> i[None, :]) - 1
    return np.where(i[None, :] <= depth[:, None], anc, -1)


def leaf_slots(spec: TreeSpec, tree):
    """Boolean [n_nodes]: the heap slots that are leaves of the tree."""
    return exists(spec, tree) & (tree[:, SPLIT] < 0.5)


def membership_from_leaves(spec: TreeSpec, leaves, mask):
    """[n_nodes, n] which rows each node holds, from every row's leaf [n] (a row is in its leaf's ancestors)."""
    anc = jnp.asarray(ancestors(spec.max_depth))  # [n_nodes, K]
    on_path = anc[leaves]  # [n, K] the nodes on each row's path (-1 padded)
    nodes = jnp.arange(spec.n_nodes)
    return jnp.any(on_path[None, :, :] == nodes[:, None, None], axis=-1) & mask[None, :]


def membership_shared(spec: TreeSpec, tree, X, mask):
    """[n_nodes, n] which rows each node holds when a row on a threshold belongs to both children
    (x <= t goes left, x >= t goes right; 004 Sec. 3.1)."""
    member = jnp.zeros((spec.n_nodes, X.shape[0]), bool).at[0].set(mask)
    for i in range((spec.n_nodes - 1) // 2):
        row = tree[i]
        split = row[SPLIT] > 0.5
        xf = X[:, row[FEATURE].astype(jnp.int32)]
        member = member.at[2 * i + 1].set(member[i] & split & (xf <= row[THRESHOLD]))
        member = member.at[2 * i + 2].set(member[i] & split & (xf >= row[THRESHOLD]))
    return member


def cart_partition(spec: TreeSpec, X, y, mask, min_leaf: int):
    """The paper's partition (004 Sec. 3.1, Eq. 5): top down, every node takes the split (feature h,
    threshold tau = an observation's value, that observation in both children) that most reduces
    U(A) - |A'|/|A| U(A') - |A''|/|A| U(A''), U being the mean squared deviation of y in a node, among
    splits that leave at least `min_leaf` observations on each side and shrink both; a node splits while
    such a split with a positive reduction exists, down to the spec's maximum depth. Jittable."""
    tree = jnp.zeros((spec.n_nodes, spec.width))
    member = jnp.zeros((spec.n_nodes, X.shape[0]), bool).at[0].set(mask)
    y2 = y * y
    for i in range((spec.n_nodes - 1) // 2):
        w = member[i].astype(jnp.float64)
        n_a = jnp.sum(w)
        u_a = jnp.sum(w * y2) / jnp.maximum(n_a, 1) - (jnp.sum(w * y) / jnp.maximum(n_a, 1)) ** 2
        # [D, n candidates, n rows] side indicators; candidate r's threshold is X[r, f]
        xt = X.T
        left = (xt[:, None, :] <= xt[:, :, None]) * w
        right = (xt[:, None, :] >= xt[:, :, None]) * w

        def spread(side):
            n_s = jnp.sum(side, -1)
            s1, s2 = side @ y, side @ y2
            u = s2 / jnp.maximum(n_s, 1) - (s1 / jnp.maximum(n_s, 1)) ** 2
            return n_s, u
        n_l, u_l = spread(left)
        n_r, u_r = spread(right)
        gain = u_a - (n_l * u_l + n_r * u_r) / jnp.maximum(n_a, 1)
        ok = (w[None, :] > 0) & (n_l >= min_leaf) & (n_r >= min_leaf) & (n_l < n_a) & (n_r < n_a)
        ok = ok & (jnp.asarray(spec.kinds) != CATEGORICAL)[:, None]
        gain = jnp.where(ok, gain, -jnp.inf)
        best = jnp.argmax(gain.reshape(-1))
        f, r = best // X.shape[0], best % X.shape[0]
        do = gain.reshape(-1)[best] > 1e-12 * jnp.maximum(u_a, 1e-300)
        t = X[r, f]
        node = jnp.zeros(spec.width).at[SPLIT].set(1.0).at[FEATURE].set(f).at[THRESHOLD].set(t)
        tree = tree.at[i].set(jnp.where(do, node, 0.0))
        member = member.at[2 * i + 1].set(member[i] & do & (X[:, f] <= t))
        member = member.at[2 * i + 2].set(member[i] & do & (X[:, f] >= t))
    return tree


class SlotPrior(NamedTuple):
    """LogNormal(loc, scale) (positive) or Normal(loc, scale) prior of one hyperparameter of a slot."""

    loc: float
    scale: float
    positive: bool
    per_column: bool  # one value per input column (lengthscales, warping) or one per slot


class LeafParams(NamedTuple):
    """Hyperparameters of every heap slot (leading dim n_nodes)."""

    lengthscale: jax.Array  # [N, d]
    outputscale: jax.Array  # [N]
    noise: jax.Array  # [N]
    mean: jax.Array  # [N]
    warp_a: jax.Array | None
    warp_b: jax.Array | None


def _slot(params: LeafParams, j) -> LeafParams:
    return jax.tree_util.tree_map(lambda a: a[j], params)


def leaf_kernel(p: LeafParams, X1, X2):
    """outputscale * Matérn-5/2 ARD, on warped inputs when the leaf warps (004 Eq. 2)."""
    if p.warp_a is not None:
        X1, X2 = kumaraswamy_warp(X1, p.warp_a, p.warp_b), kumaraswamy_warp(X2, p.warp_a, p.warp_b)
    return p.outputscale * matern52(X1, X2, p.lengthscale)


def path_factor_logliks(spec: TreeSpec, params: LeafParams, member, leaf, X, y):
    """[L, K] log-likelihoods of the factors of 004 Eq. 8 for every leaf (L = 2^max_depth slots, padded
    with empty factors) and level i = 0..max_depth (empty above the root), before weighting."""
    n_leaves_max = 2 ** spec.max_depth
    slots = jnp.nonzero(leaf, size=n_leaves_max, fill_value=0)[0]
    valid = jnp.arange(n_leaves_max) < jnp.sum(leaf)
    anc = jnp.asarray(ancestors(spec.max_depth))

    def one_leaf(j, ok):
        p = _slot(params, j)
        K = leaf_kernel(p, X, X)
        resid = y - p.mean
        path = anc[j]  # [K]
        inside = member[jnp.maximum(path, 0)] & (path >= 0)[:, None]  # [K, n]
        below = jnp.concatenate([jnp.zeros_like(inside[:1]), inside[:-1]])
        rows = inside & ~below & ok

        def factor(r):
            L = linalg.observation_cholesky(K, p.noise, r)
            res = jnp.where(r, resid, 0.0)
            return linalg.gaussian_logpdf(res, jnp.zeros_like(res), L)
        return jax.vmap(factor)(rows)
    return jax.vmap(one_leaf)(slots, valid)


def leaf_sizes_ok(member, leaf, mask, min_leaf: int):
    """Whether every leaf holds at least min(min_leaf, n) observations (0 constraint with no data)."""
    need = jnp.minimum(min_leaf, jnp.sum(mask))
    return jnp.all(jnp.where(leaf, jnp.sum(member, -1) >= need, True))


@dataclass(frozen=True)
class WeightedLeafLikelihood(TreeLikelihood):
    """`treed_mcmc`'s plug-in for the grow / prune / change moves: the change of the weighted leaf
    pseudo-likelihood (004 Eq. 8-10, all leaves) and of the minimum-leaf-size indicator when the partition
    is edited, at fixed hyperparameters. The cache is the current leaf set and total; a proposal rescores
    every factor of the edited tree (at most 2^max_depth (max_depth + 1) small Choleskys)."""

    spec: TreeSpec
    params: LeafParams
    leaf0: jax.Array  # [n_nodes] leaves of the partition at the start of the sweep
    X: jax.Array
    y: jax.Array
    mask: jax.Array
    min_leaf: int
    weights: tuple  # per path level (`Treed.weights`)

    def total(self, leaf, leaves):
        member = membership_from_leaves(self.spec, leaves, self.mask)
        logp = path_factor_logliks(self.spec, self.params, member, leaf, self.X, self.y)
        weighted = jnp.sum(logp * jnp.asarray(self.weights)[None, :])
        return jnp.where(leaf_sizes_ok(member, leaf, self.mask, self.min_leaf), weighted, -jnp.inf)

    def init(self, leaves):
        return self.leaf0, self.total(self.leaf0, leaves[0])

    def delta(self, state, tree_index, kind, node, old_leaves, new_leaves):
        leaf, current = state
        kids = jnp.array([jnp.minimum(2 * node + 1, self.spec.n_nodes - 1),
                          jnp.minimum(2 * node + 2, self.spec.n_nodes - 1)])
        grown = leaf.at[node].set(False).at[kids].set(True)
        pruned = leaf.at[node].set(True).at[kids].set(False)
        new_leaf = jnp.where(kind == GROW, grown, jnp.where(kind == PRUNE, pruned, leaf))
        new = self.total(new_leaf, new_leaves)
        return new - current, (new_leaf, new)


@dataclass(frozen=True)
class PartitionContext:
    """What `treed_mcmc`'s tree moves read: the routing and the likelihood plug-in."""

    spec: TreeSpec
    X: jax.Array
    likelihood: WeightedLeafLikelihood


class TreedArrays(NamedTuple):
    """Per-sample arrays of the leaf GPs (leading dim S): leaf slots, their rows, K^-1 (y - mean), K^-1."""

    slots: jax.Array  # [L] heap index of each leaf (padded)
    valid: jax.Array  # [L]
    rows: jax.Array  # [L, n] the leaf's own observations
    alpha: jax.Array  # [L, n]
    Kinv: jax.Array  # [L, n, n]


class Treed(Surrogate, NoiselessForm, StructureMoves):
    """The heteroscedastic treed GP: ``Treed(space, partition="cart" | "mcmc", warp=False, max_depth=3,
    min_leaf=5, alpha=0.5, beta=2.0, noise_prior=(-4, 1), tie="auto", likelihood="weighted" | "leaves")``.

    Values per heap slot (``node`` dim, n_nodes = 2^(max_depth+1) - 1): ``lengthscale`` [N, d],
    ``outputscale``, ``noise`` (variance, standardized y), ``mean`` [N], with ``warp``: ``warp_a``, ``warp_b``
    [N, d] (deterministic functions of the sampled ``<name>_z``); ``partition`` [1, N, 4] (heap-array tree;
    deterministic for "cart", a discrete site moved by the tree moves for "mcmc"). ``tie="auto"``: None
    for "cart" (the paper's independent priors), 0.5 for "mcmc". Registered as ``treed`` (the defaults);
    the benchmarks name the variants ``treed_warp``, ``treed_mcmc`` (weighted) and ``treed_bayes`` (leaves).
    ArviZ gets the leaves' hyperparameters in leaf order (``leaf`` dim), the number of leaves, leaf sizes,
    split features and thresholds. Flat spaces of Real and Integer
    parameters only. The acquisition is maximized on a Sobol grid (optim.grid), as the paper does.
    """

    default_acquisition = "logei"
    preferred_optimizers = ("grid", "lbfgs")
    sampler_defaults = {"num_chains": 2, "cold_warmup": 200, "warm_warmup": 30, "num_samples": 8, "thinning": 2,
                        "max_tree_depth": 5}

    def __init__(self, space: Space, partition: str = "cart", warp: bool = False, max_depth: int = 3,
                 min_leaf: int = 5, alpha: float = 0.5, beta: float = 2.0, noise_prior=(-4.0, 1.0),
                 tie: float | None | str = "auto", likelihood: str = "weighted"):
        super().__init__(space)
        if partition not in PARTITIONS:
            raise ValueError(f"partition must be one of {PARTITIONS}, got {partition!r}")
        if space.is_conditional or np.any(space.kinds == CATEGORICAL):
            raise ValueError("the treed GP takes flat spaces of Real and Integer parameters; for categorical or "
                             "conditional parameters use 'gp', 'bark' (mixed), 'addtree' or 'jenatton' (conditional)")
        if not (isinstance(min_leaf, (int, np.integer)) and min_leaf >= 1):
            raise ValueError(f"min_leaf must be a positive integer, got {min_leaf!r}")
        if not isinstance(warp, (bool, np.bool_)):
            raise TypeError(f"warp must be True or False, got {warp!r}")
        self.spec = TreeSpec.from_space(space, max_depth=max_depth, alpha=alpha, beta=beta)
        if likelihood not in LIKELIHOODS:
            raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {likelihood!r}")
        self.likelihood = likelihood
        self.weights = tuple(float(w) for w in (path_weights(self.spec.max_depth) if likelihood == "weighted"
                                                 else np.eye(self.spec.max_depth + 1)[0]))
        if tie == "auto":
            tie = None if partition == "cart" else 0.5
        if tie is not None and not (isinstance(tie, (int, float)) and tie > 0):
            raise ValueError(f"tie must be a positive number, None or 'auto', got {tie!r}")
        self.tie = None if tie is None else float(tie)
        self.partition = partition
        self.warp = bool(warp)
        self.min_leaf = int(min_leaf)
        self.noise_prior = tuple(noise_prior)
        self.name = ("treed" if partition == "cart" else "treed_mcmc" if likelihood == "weighted" else "treed_bayes") \
            + ("_warp" if warp else "")
        self.discrete_sites = {"partition": "forest"} if partition == "mcmc" else {}

    def config_key(self):
        return (self.partition, self.warp, self.min_leaf, self.spec.key(), self.noise_prior, self.tie, self.weights)

    def options(self) -> dict:
        return {"partition": self.partition, "warp": self.warp, "max_depth": self.spec.max_depth,
                "min_leaf": self.min_leaf, "alpha": self.spec.alpha, "beta": self.spec.beta,
                "noise_prior": list(self.noise_prior), "tie": self.tie, "likelihood": self.likelihood}

    def offers(self, capability: type) -> bool:
        """The tree moves (StructureMoves) exist only when the partition is sampled."""
        return capability is not StructureMoves or self.partition == "mcmc"

    # ---------------------------------------------------------------- model
    def base_priors(self) -> dict[str, SlotPrior]:
        """The prior of every hyperparameter of one slot (of the root, when slots are tied)."""
        out = {"lengthscale": SlotPrior(lengthscale_loc(self.space.dim), LENGTHSCALE_SCALE, True, True),
               "outputscale": SlotPrior(0.0, 1.0, True, False),
               "noise": SlotPrior(*self.noise_prior, True, False),
               "mean": SlotPrior(0.0, 1.0, False, False)}
        if self.warp:
            out["warp_a"] = SlotPrior(*WARP_PRIOR, True, True)
            out["warp_b"] = SlotPrior(*WARP_PRIOR, True, True)
        return out

    def slot_values(self, eps: dict) -> dict:
        """Hyperparameters of every slot from the standard-normal sites ``<name>_z``: independent draws of
        `base_priors` per slot, or (tied) the root's draw and, below it, the parent's value times
        exp(tie * z) (plus tie * z for the mean)."""
        N = self.spec.n_nodes
        anc = ancestors(self.spec.max_depth)
        A = (np.zeros((N, N)) if self.tie else np.eye(N))
        if self.tie:
            for j in range(N):
                A[j, anc[j][anc[j] >= 0]] = 1.0
        first = np.arange(N) == 0 if self.tie else np.ones(N, bool)
        out = {}
        for name, p in self.base_priors().items():
            e = eps[name]
            f = jnp.asarray(first).reshape((N,) + (1,) * (e.ndim - 1))
            inc = jnp.where(f, p.loc + p.scale * e, (self.tie or 0.0) * e)
            total = jnp.tensordot(jnp.asarray(A), inc, axes=1)
            out[name] = jnp.exp(total) if p.positive else total
        return out

    def site_shapes(self) -> dict:
        N, d = self.spec.n_nodes, self.space.dim
        return {name: (N, d) if p.per_column else (N,) for name, p in self.base_priors().items()}

    def partition_prior(self) -> BARTPrior:
        return BARTPrior(self.spec, 1)

    @staticmethod
    def leaf_params(values: dict) -> LeafParams:
        return LeafParams(values["lengthscale"], values["outputscale"], values["noise"], values["mean"],
                          values.get("warp_a"), values.get("warp_b"))

    def membership(self, tree, X, mask):
        """[n_nodes, n] rows held by each node: shared split points for "cart", routing for "mcmc"."""
        if self.partition == "cart":
            return membership_shared(self.spec, tree, X, mask)
        return membership_from_leaves(self.spec, route(self.spec, tree, X), mask)

    def model(self, data: Data) -> None:
        eps = {name: numpyro.sample(f"{name}_z", dist.Normal(0.0, 1.0).expand(shape).to_event(len(shape)))
               for name, shape in self.site_shapes().items()}
        values = {name: numpyro.deterministic(name, v) for name, v in self.slot_values(eps).items()}
        if self.partition == "cart":
            tree = numpyro.deterministic("partition", cart_partition(self.spec, data.X, data.y, data.mask,
                                                                     self.min_leaf)[None])
        else:
            tree = numpyro.sample("partition", self.partition_prior())
        member = self.membership(tree[0], data.X, data.mask)
        numpyro.deterministic("node_size", jnp.sum(member, -1))
        leaf = leaf_slots(self.spec, tree[0])
        if self.partition == "mcmc":
            sizes_ok = leaf_sizes_ok(member, leaf, data.mask, self.min_leaf)
            numpyro.factor("min_leaf", jnp.where(sizes_ok, 0.0, -jnp.inf))
        logp = path_factor_logliks(self.spec, self.leaf_params(values), member, leaf, data.X, data.y)
        for i, w in enumerate(self.weights):  # 004 Eq. 10: factor i weighted 2 / (1 + i) ("weighted")
            if w == 0.0:
                continue
            with numpyro.handlers.scale(scale=float(w)):
                numpyro.factor(f"path_level_{i}", jnp.sum(logp[:, i]))

    def _sizes_ok(self, tree, data):
        return leaf_sizes_ok(self.membership(tree, data.X, data.mask), leaf_slots(self.spec, tree), data.mask,
                             self.min_leaf)

    def init_discrete(self, key, data: Data) -> dict:
        """A sampled partition starts from a prior draw of its own per chain (over-dispersed starts, so that
        r_hat compares chains that began apart), or as a single leaf where the draw leaves a leaf with fewer
        than min_leaf observations (a single leaf is always allowed)."""
        if self.partition != "mcmc":
            return {}
        tree = self.partition_prior().sample(key)
        return {"partition": jnp.where(self._sizes_ok(tree[0], data), tree, jnp.zeros_like(tree))}

    def move_context(self, data: Data, z: dict, sites: dict) -> PartitionContext:
        values = self.slot_values({name: z[f"{name}_z"] for name in self.base_priors()})
        tree = sites["partition"][0]
        likelihood = WeightedLeafLikelihood(self.spec, self.leaf_params(values), leaf_slots(self.spec, tree),
                                            data.X, data.y, data.mask, self.min_leaf, self.weights)
        return PartitionContext(self.spec, data.X, likelihood)

    # ---------------------------------------------------------------- predictions
    def prepare(self, samples: dict, data: Data) -> Prepared:
        """Per sample and leaf: the leaf's own rows, K^-1 (y - mean) and K^-1 of its GP."""
        n_leaves_max = 2 ** self.spec.max_depth

        def one(s):
            tree = s["partition"][0]
            member = self.membership(tree, data.X, data.mask)
            leaf = leaf_slots(self.spec, tree)
            slots = jnp.nonzero(leaf, size=n_leaves_max, fill_value=0)[0]
            valid = jnp.arange(n_leaves_max) < jnp.sum(leaf)
            params = self.leaf_params(s)

            def leaf_terms(j, ok):
                p = _slot(params, j)
                rows = member[j] & ok
                L = linalg.observation_cholesky(leaf_kernel(p, data.X, data.X), p.noise, rows)
                alpha, Kinv = linalg.precision_terms(L, jnp.where(rows, data.y - p.mean, 0.0))
                return rows, alpha, Kinv
            rows, alpha, Kinv = jax.vmap(leaf_terms)(slots, valid)
            return TreedArrays(slots, valid, rows, alpha, Kinv)
        return Prepared(samples, data, jax.vmap(one)(samples))

    def predict_prepared(self, prepared: Prepared, Xq):
        """Mean and variance [S, N] from the GP of the leaf each query row is routed to (004 Eq. 3-4)."""
        samples, data, arrays = prepared

        def one(s, a: TreedArrays):
            params = self.leaf_params(s)
            lq = route(self.spec, s["partition"][0], Xq)  # [Nq]
            pos = jnp.argmax((a.slots[None, :] == lq[:, None]) & a.valid[None, :], axis=1)

            def leaf_moments(j, rows, alpha, Kinv):
                p = _slot(params, j)
                Kxq = leaf_kernel(p, data.X, Xq) * rows[:, None]
                m, v = linalg.latent_posterior(alpha, Kinv, Kxq, p.outputscale * jnp.ones(Xq.shape[0]))
                return p.mean + m, v
            mean, var = jax.vmap(leaf_moments)(a.slots, a.rows, a.alpha, a.Kinv)  # [L, Nq]
            cols = jnp.arange(Xq.shape[0])
            return mean[pos, cols], var[pos, cols]
        return linalg.to_user_units(data, *jax.vmap(one)(samples, arrays))

    def simulate(self, key, data):
        """One draw of the sites and y from `treed_bayes` (partition="mcmc", likelihood="leaves"), the variant
        that is a generative model: standard-normal slot sites (reported as the slot values), a partition
        from the tree prior restricted, by rejection, to partitions whose leaves hold at least min(min_leaf,
        n) rows of the design (what the model's ``min_leaf`` factor allows), and y in each leaf from that
        leaf's GP, independently across leaves. Refused for the depth-weighted pseudo-likelihood (004 Eq.
        8-10), which counts observations more than once, and for the paper's partition, a function of y."""
        if self.partition != "mcmc" or self.likelihood != "leaves":
            raise NotImplementedError(f"{self.name!r} cannot be calibrated by simulation: the weighted "
                                      "pseudo-likelihood and the data-built partition are not a generative model "
                                      "of y (Treed(partition='mcmc', likelihood='leaves') is)")
        draw = compiled("treed_simulate", _simulate_fn, self)
        for _ in range(1000):
            key, sub = jax.random.split(key)
            sites, y, ok = draw(sub, data)
            if bool(ok):
                return sites, y
        raise RuntimeError(f"no prior partition in 1000 draws has leaves of at least {self.min_leaf} of the "
                           f"{int(np.sum(data.mask))} design rows; lower min_leaf or max_depth")

    def log_likelihood(self, sample, data, loo=False):
        """Pointwise terms [n_pad] of the leaves' own GP likelihoods with every row in the leaf it is routed
        to (weight 1; the weighted factors are a device for the hyperparameters, not a likelihood); with
        `loo`, each row's leave-one-out term within its leaf."""
        tree = sample["partition"][0]
        leaves = route(self.spec, tree, data.X)
        params = self.leaf_params(sample)

        def one(j):
            p = _slot(params, j)
            rows = (leaves == j) & data.mask
            L = linalg.observation_cholesky(leaf_kernel(p, data.X, data.X), p.noise, rows)
            pointwise = linalg.loo_loglik if loo else linalg.chain_rule_loglik
            return pointwise(jnp.where(rows, data.y, 0.0), jnp.where(rows, p.mean, 0.0), L)
        terms = jnp.sum(jax.vmap(one)(jnp.arange(self.spec.n_nodes)), axis=0)
        return terms - jnp.log(data.y_std) * data.mask

    # ---------------------------------------------------------------- ArviZ
    def summarize_discrete(self, samples: dict) -> dict:
        """The partition per draw: leaves, leaf sizes, split features and thresholds (user units, NaN where
        a slot does not split), and every leaf's hyperparameters in leaf (heap) order, NaN-padded."""
        tree = np.asarray(samples["partition"])[..., 0, :, :]  # [C, S, N, width]
        C, S, N = tree.shape[:3]
        flat = tree.reshape(C * S, N, -1)
        leaf = np.asarray(jax.vmap(lambda t: leaf_slots(self.spec, t))(flat))  # [CS, N]
        L = 2 ** self.spec.max_depth
        order = np.argsort(~leaf, axis=1, kind="stable")[:, :L]
        has = np.take_along_axis(leaf, order, axis=1)
        out = {"n_leaves": leaf.sum(1).reshape(C, S)}
        for name in [*self.base_priors(), "node_size"]:
            v = np.asarray(samples[name]).reshape((C * S, N) + np.shape(samples[name])[3:])
            picked = np.take_along_axis(v, order.reshape(order.shape + (1,) * (v.ndim - 2)), axis=1)
            mask = has.reshape(has.shape + (1,) * (v.ndim - 2))
            key = "leaf_size" if name == "node_size" else f"leaf_{name}"
            out[key] = np.where(mask, picked, np.nan).reshape((C, S, L) + v.shape[2:])
        internal = (N - 1) // 2
        split = flat[:, :internal, SPLIT] > 0.5
        feature = flat[:, :internal, FEATURE].astype(np.int64)
        out["split_feature"] = np.where(split, feature, -1).reshape(C, S, internal)
        thresholds = np.full(split.shape, np.nan)
        for k, j in zip(*np.nonzero(split)):
            thresholds[k, j] = self._user_threshold(int(feature[k, j]), float(flat[k, j, THRESHOLD]))
        out["split_threshold"] = thresholds.reshape(C, S, internal)
        return out

    def _user_threshold(self, column: int, t: float) -> float:
        col = self.space.columns[column]
        if col.kind == INTEGER:
            return float(col.low + t * (col.high - col.low))
        return float(col.from_unit(t))

    def summarize_moves(self, move_stats: dict) -> dict:
        return move_acceptance_rates(move_stats["partition"]) if self.partition == "mcmc" else {}

    def arviz_dims(self):
        names = list(self.space.names)
        dims = {"lengthscale": ["node", "param"], "warp_a": ["node", "param"], "warp_b": ["node", "param"],
                "outputscale": ["node"], "noise": ["node"], "mean": ["node"],
                "leaf_lengthscale": ["leaf", "param"], "leaf_warp_a": ["leaf", "param"],
                "leaf_warp_b": ["leaf", "param"], "leaf_outputscale": ["leaf"], "leaf_noise": ["leaf"],
                "leaf_mean": ["leaf"], "leaf_size": ["leaf"], "node_size": ["node"],
                "split_feature": ["internal_node"], "split_threshold": ["internal_node"]}
        dims.update({f"{k}_z": v for k, v in dims.items() if v[0] == "node" and k != "node_size"})
        if not self.warp:
            dims = {k: v for k, v in dims.items() if "warp" not in k}
        coords = {"node": np.arange(self.spec.n_nodes), "leaf": np.arange(2 ** self.spec.max_depth),
                  "param": names, "internal_node": np.arange((self.spec.n_nodes - 1) // 2)}
        return dims, coords


def _simulate_fn(model: Treed):
    """Jitted (key, data) -> (sites, y, whether the partition meets min_leaf) for `Treed.simulate`."""
    def draw(key, data):
        k_eps, k_tree, k_y = jax.random.split(key, 3)
        shapes = model.site_shapes()
        eps = {name: jax.random.normal(k, shape) for (name, shape), k in
               zip(shapes.items(), jax.random.split(k_eps, len(shapes)))}
        values = model.slot_values(eps)
        tree = model.partition_prior().sample(k_tree)
        member = model.membership(tree[0], data.X, data.mask)
        leaf = leaf_slots(model.spec, tree[0])
        params = model.leaf_params(values)

        def leaf_draw(j, k):
            p = _slot(params, j)
            L = linalg.observation_cholesky(leaf_kernel(p, data.X, data.X), p.noise, member[j] & leaf[j])
            return p.mean + L @ jax.random.normal(k, (data.X.shape[0],))
        ys = jax.vmap(leaf_draw)(jnp.arange(model.spec.n_nodes), jax.random.split(k_y, model.spec.n_nodes))
        y = jnp.sum(jnp.where(member & leaf[:, None], ys, 0.0), axis=0)
        sites = {**values, "partition": tree, "node_size": jnp.sum(member, -1)}
        return sites, jnp.where(data.mask, y, 0.0), leaf_sizes_ok(member, leaf, data.mask, model.min_leaf)
    return jax.jit(draw)


__all__ = ["Treed", "WeightedLeafLikelihood", "PartitionContext", "cart_partition", "membership_shared",
           "membership_from_leaves", "path_factor_logliks", "path_weights", "ancestors", "leaf_slots"]

