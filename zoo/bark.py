"""BARK: a GP whose kernel is a forest drawn from the BART prior, fully Bayesian over the trees (003).

Generative model on standardized y (003 Sec. 5.2):
    forest ~ BARTPrior(m trees, alpha, beta)       (zoo.trees; a discrete site, updated by tree moves)
    noise  ~ InverseGamma(nu / 2, nu * lam / 2)     (noise variance sigma_y^2)
    y      ~ N(0, K_forest(X, X) + noise I),  K_forest(x, x') = (1/m) sum_t [x, x' share a leaf of t]
The signal variance is fixed at 1 (003 Sec. 5.2), so K_forest(x, x) = 1. The leaf values are never
sampled: the GP likelihood integrates them out (003 Eq. 4).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from scipy.special import gammainccinv

from zoo import linalg
from zoo.base import Surrogate
from zoo.data import Data
from zoo.space import Space
from zoo.trees import (SPLIT, BARTPrior, TreeSpec, leaf_count, route_forest, shared_leaf_fraction,
                       tree_depth)

UPDATES = ("lowrank", "cholesky")


def noise_prior(nu: float = 3.0, q: float = 0.9):
    """InverseGamma(nu/2, nu lam/2) with lam chosen so that P(sigma_y^2 < 1) = q on standardized y
    (003 Sec. 4; Chipman et al. 2010). Defaults (3, 0.9): lam = 0.19479, i.e. InverseGamma(1.5, 0.29219),
    median 0.247, 5% / 95% quantiles 0.075 / 1.661."""
    if not (nu > 0 and 0 < q < 1):
        raise ValueError(f"need nu > 0 and 0 < q < 1, got nu={nu!r}, q={q!r}")
    rate = float(gammainccinv(nu / 2.0, q))  # P(Gamma(nu/2, rate b) > 1) = q  <=>  P(IG < 1) = q
    return dist.InverseGamma(nu / 2.0, rate)


class ForestContext(NamedTuple):
    """What BARK's moves need besides the site they update: the data and the other site's value."""

    spec: TreeSpec
    num_trees: int
    update: str
    X: jax.Array
    y: jax.Array
    mask: jax.Array
    forest: jax.Array
    noise: jax.Array
    noise_prior: dist.Distribution

    def noise_free_kernel(self):
        """K_forest on the data rows (for the noise move)."""
        leaves = route_forest(self.spec, self.forest, self.X)
        return shared_leaf_fraction(leaves, leaves)


def noisy_covariance(K, noise, mask):
    """Padded K + (noise + jitter) I: the covariance of y given a noise-free kernel matrix (exact
    zero-density padding). Shared by the model, the tree moves and the noise move."""
    return linalg.pad_covariance(K + (noise + linalg.JITTER) * jnp.eye(K.shape[0]), mask)


def forest_covariance(leaves, noise, mask):
    """Padded K_forest + noise I from leaf indices [m, n]."""
    return noisy_covariance(shared_leaf_fraction(leaves, leaves), noise, mask)


def _moments(data, mean, u):
    """User-unit latent mean and variance from the standardized mean and u = L^-1 k(x) (003 Eq. 10b-c;
    k(x, x) = 1, so the variance is 1 - ||u||^2, floored)."""
    var = jnp.maximum(1.0 - jnp.sum(u * u, axis=-1), 1e-12)
    return data.y_mean + data.y_std * mean, data.y_std**2 * var


class BARK(Surrogate):
    """The BARK surrogate: ``BARK(space, num_trees=50, alpha=0.95, beta=2, nu=3, q=0.9)``.

    Sites: ``forest`` [m, nodes, 3 + C] (updated by grow / prune / change moves, see
    ``inference.moves.trees``) and ``noise`` (random-walk MH on log(noise), ``inference.moves.noise``);
    both moves reuse the forest's leaf assignments, so a sweep costs no NUTS gradient. Real, integer and categorical columns are split
    natively (categorical splits are category subsets); conditional spaces are seen flat.
    ``update``: how a tree move's likelihood change is computed ("lowrank": Woodbury and the
    determinant lemma on the rank-4 change of the kernel, refreshed by a Cholesky every sweep;
    "cholesky": a fresh factorization per proposal). Both are exact; see BENCHMARKS.md for speed.
    """

    name = "bark"
    structure = "forest"
    default_acquisition = "ucb"
    discrete_sites = {"forest": "forest", "noise": "noise"}
    #: BO-loop MCMC defaults (003 App. D: 4 chains, 1000 burn-in sweeps on the first fit, 16 forests;
    #: later fits continue each chain from its last state, with a shorter thinning than the paper's 100)
    #: a tree sweep costs O(rows^2) per move: midpoint buckets (48, 96, ...) cut padding at one more compile
    bucket_steps = (1.0, 1.5)
    sampler_defaults = {"num_chains": 4, "cold_warmup": 1000, "warm_warmup": 0, "num_samples": 4, "thinning": 25}

    def __init__(self, space: Space, num_trees: int = 50, alpha: float = 0.95, beta: float = 2.0,
                 nu: float = 3.0, q: float = 0.9, max_depth: int = 6, update: str = "lowrank"):
        super().__init__(space)
        if not (isinstance(num_trees, (int, np.integer)) and num_trees >= 1):
            raise ValueError(f"num_trees must be a positive integer, got {num_trees!r}")
        if update not in UPDATES:
            raise ValueError(f"update must be one of {UPDATES}, got {update!r}")
        self.spec = TreeSpec.from_space(space, max_depth=max_depth, alpha=alpha, beta=beta)
        self.num_trees = int(num_trees)
        self.nu, self.q = float(nu), float(q)
        self.noise_dist = noise_prior(nu, q)
        self.update = update

    def config_key(self):
        return (self.num_trees, self.spec.key(), self.nu, self.q, self.update)

    # ---------------------------------------------------------------- model
    def forest_prior(self) -> BARTPrior:
        return BARTPrior(self.spec, self.num_trees)

    def model(self, data: Data) -> None:
        forest = numpyro.sample("forest", self.forest_prior())
        noise = numpyro.sample("noise", self.noise_dist)
        L = self.cholesky(forest, noise, data)
        numpyro.sample("y", dist.MultivariateNormal(jnp.zeros_like(data.y), scale_tril=L, validate_args=False),
                       obs=data.y)

    def cholesky(self, forest, noise, data: Data):
        leaves = route_forest(self.spec, forest, data.X)
        return jnp.linalg.cholesky(forest_covariance(leaves, noise, data.mask))

    def init_discrete(self, key, data: Data) -> dict:
        """Every chain starts from m single-leaf trees (the usual BART start) and noise 0.25 (about the
        prior median)."""
        return {"forest": jnp.zeros(self.forest_prior().event_shape), "noise": jnp.array(0.25)}

    def move_context(self, data: Data, z: dict, sites: dict) -> ForestContext:
        return ForestContext(self.spec, self.num_trees, self.update, data.X, data.y, data.mask,
                             sites["forest"], sites["noise"], self.noise_dist)

    # ---------------------------------------------------------------- predictions
    def prepare(self, samples: dict, data: Data):
        """Per sample: training leaves, Cholesky factor L, alpha = K^-1 y, and per tree and node the tables
        mean_table[t, v] = alpha' T[t, v] / m and u_table[t, v] = L^-1 T[t, v] / m, T[t, v] being the
        indicator of the training rows in node v of tree t: the kernel vector of a query is a sum of T rows
        over its leaves, so its mean and variance (003 Eq. 10b-c) are sums of table rows. Memory: S m
        (2^(max_depth+1) - 1) n floats for the u tables, about 160 MB for 16 forests at n = 192."""
        m, nodes = samples["forest"].shape[1:3]

        def one(forest, noise):
            leaves = route_forest(self.spec, forest, data.X)
            L = jnp.linalg.cholesky(forest_covariance(leaves, noise, data.mask))
            alpha = linalg.cho_solve((L, True), data.y)
            T = (leaves[:, None, :] == jnp.arange(nodes)[None, :, None]) * data.mask / m  # [m, nodes, n]
            U = linalg.solve_triangular(L, T.reshape(m * nodes, -1).T, lower=True)
            return {"leaves": leaves, "alpha": alpha, "L": L, "mean_table": T @ alpha,
                    "u_table": U.T.reshape(m, nodes, -1)}
        return samples, data, jax.vmap(one)(samples["forest"], samples["noise"])

    def predict_prepared(self, cache, Xq):
        """Latent mean and variance per sample (003 Eq. 10b-c), user units; k(x, x) = 1, so the variance is
        1 - ||L^-1 k(x)||^2 with L^-1 k(x) the sum over trees of the u_table rows of x's leaves."""
        samples, data, pre = cache
        trees = jnp.arange(samples["forest"].shape[1])[:, None]

        def one(forest, p):
            lq = route_forest(self.spec, forest, Xq)  # [m, Nq]
            return jnp.sum(p["mean_table"][trees, lq], axis=0), jnp.sum(p["u_table"][trees, lq], axis=0)

        mean, u = jax.vmap(one)(samples["forest"], pre)  # [S, Nq], [S, Nq, n]
        return _moments(data, mean, u)

    def coordinate_moments(self, cache, x, column, values, trees, valid):
        """Mean and variance [S, K] (as `predict_prepared`) of row x [D] with its `column` set to each of
        `values` [K]. Only trees that split on that column can change leaf, so only they are routed and
        their table rows swapped into x's sums: `trees` [P] are flat indices s * m + t of those trees
        (padding marked False in `valid` [P]); O(K P n) instead of O(K S m n)."""
        samples, data, pre = cache
        S, m = samples["forest"].shape[:2]
        flat_forests = samples["forest"].reshape((S * m,) + samples["forest"].shape[2:])
        base = route_forest(self.spec, flat_forests, x[None])[:, 0]  # [S m]
        flat_mean = pre["mean_table"].reshape(S * m, -1)
        flat_u = pre["u_table"].reshape(S * m, -1, pre["u_table"].shape[-1])
        mean0 = jnp.sum(flat_mean[jnp.arange(S * m), base].reshape(S, m), axis=1)  # [S]
        u0 = jnp.sum(flat_u[jnp.arange(S * m), base].reshape(S, m, -1), axis=1)  # [S, n]
        rows = jnp.tile(x, (values.shape[0], 1)).at[:, column].set(values)  # [K, D]
        leaves = route_forest(self.spec, flat_forests[trees], rows)  # [P, K]
        keep = valid[:, None].astype(jnp.float64)
        d_mean = (flat_mean[trees[:, None], leaves] - flat_mean[trees, base[trees]][:, None]) * keep  # [P, K]
        d_u = (flat_u[trees[:, None], leaves] - flat_u[trees, base[trees]][:, None, :]) * keep[..., None]
        owner = trees // m
        mean = mean0[:, None] + jax.ops.segment_sum(d_mean, owner, num_segments=S)  # [S, K]
        u = u0[:, None, :] + jax.ops.segment_sum(d_u, owner, num_segments=S)  # [S, K, n]
        return _moments(data, mean, u)

    def log_likelihood(self, sample, data):
        L = self.cholesky(sample["forest"], sample["noise"], data)
        return linalg.chain_rule_loglik(data.y, jnp.zeros_like(data.y), L) - jnp.log(data.y_std) * data.mask

    # ---------------------------------------------------------------- ArviZ
    def summarize_discrete(self, samples: dict) -> dict:
        """Scalar summaries of the forest per draw: leaves and depth per tree, total leaves, splits per feature."""
        forest = np.asarray(samples["forest"])
        split = forest[..., SPLIT] > 0.5
        feature = forest[..., 1].astype(np.int64)
        per_feature = np.stack([np.sum(split & (feature == j), axis=(-1, -2)) for j in range(self.space.dim)], -1)
        leaves = np.asarray(leaf_count(self.spec, forest))
        return {"noise": np.asarray(samples["noise"]), "leaves": leaves, "depth": np.asarray(tree_depth(self.spec, forest)),
                "total_leaves": leaves.sum(-1), "splits": per_feature}

    def summarize_moves(self, move_stats: dict) -> dict:
        """Per-move acceptance rates [C, S] from (proposed, accepted) counts per move type."""
        counts = np.asarray(move_stats["forest"])  # [C, S, 2, 3]
        out = {"accept_noise": np.asarray(move_stats["noise"])}
        for k, name in enumerate(("grow", "prune", "change")):
            proposed, accepted = counts[..., 0, k], counts[..., 1, k]
            out[f"accept_{name}"] = np.where(proposed > 0, accepted / np.maximum(proposed, 1e-300), np.nan)
        return out

    def arviz_dims(self):
        dims = {"leaves": ["tree"], "depth": ["tree"], "splits": ["feature"]}
        coords = {"tree": np.arange(self.num_trees), "feature": list(self.space.names)}
        return dims, coords


__all__ = ["BARK", "ForestContext", "forest_covariance", "noise_prior", "noisy_covariance"]
