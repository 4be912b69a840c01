"""BARK: a GP whose kernel is a forest drawn from the BART prior, fully Bayesian over the trees (003).

Generative model on standardized y (003 Sec. 5.2):
    forest ~ BARTPrior(m trees, alpha, beta)       (zoo.heap_trees; a discrete site, updated by tree moves)
    noise  ~ InverseGamma(nu / 2, nu * lam / 2)     (noise variance sigma_y^2; LogNormal(noise_prior) when given,
                                                     as `noiseless()` does for a deterministic objective)
    y      ~ N(0, K_forest(X, X) + noise I),  K_forest(x, x') = (1/m) sum_t [x, x' share a leaf of t]
The signal variance is fixed at 1 (003 Sec. 5.2), so K_forest(x, x) = 1. The leaf values are never
sampled: the GP likelihood integrates them out (003 Eq. 4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.linalg import cho_solve
from scipy.special import gammainccinv

from zoo import linalg
from zoo.base import (CoordinateMoments, ForestGP, ForestPosterior, NoiselessForm, Prepared, StructureMoves,
                       Surrogate)
from zoo.data import Data
from zoo.heap_trees import (GROW, PRUNE, SPLIT, BARTPrior, TreeLikelihood, TreeSpec, leaf_count, move_acceptance_rates,
                            route_forest, shared_leaf_fraction, tree_depth)
from zoo.space import Space

UPDATES = ("lowrank", "cholesky")


def noise_prior(nu: float = 3.0, q: float = 0.9):
    """InverseGamma(nu/2, nu lam/2) with lam chosen so that P(sigma_y^2 < 1) = q on standardized y
    (003 Sec. 4; Chipman et al. 2010). Defaults (3, 0.9): lam = 0.19479, i.e. InverseGamma(1.5, 0.29219),
    median 0.247, 5% / 95% quantiles 0.075 / 1.661."""
    if not (nu > 0 and 0 < q < 1):
        raise ValueError(f"need nu > 0 and 0 < q < 1, got nu={nu!r}, q={q!r}")
    rate = float(gammainccinv(nu / 2.0, q))  # P(Gamma(nu/2, rate b) > 1) = q  <=>  P(IG < 1) = q
    return dist.InverseGamma(nu / 2.0, rate)


# ------------------------------------------------------------------ the likelihood, written once
def forest_cholesky(leaves, noise, mask):
    """Cholesky factor of K_forest + noise I (the zoo's noise policy) from leaf indices [m, n]: the
    covariance of standardized y given a forest (003 Eq. 4)."""
    return linalg.observation_cholesky(shared_leaf_fraction(leaves, leaves), noise, mask)


def kernel_loglik(K, noise, mask, y):
    """log N(y | 0, K + noise I) for a noise-free forest kernel matrix K: BARK's likelihood, as the model,
    the noise move and the tree moves score it."""
    return linalg.gaussian_logpdf(y, jnp.zeros_like(y), linalg.observation_cholesky(K, noise, mask))


class LowRankState(NamedTuple):
    """Cache of the low-rank update: (K + noise I)^-1, its product with y and its log-determinant."""

    Ainv: jax.Array
    alpha: jax.Array
    logdet: jax.Array


class CholeskyState(NamedTuple):
    """Cache of the refactorizing update: the summed shared-leaf indicators and the log-likelihood."""

    counts: jax.Array
    loglik: jax.Array


def move_pieces(kind, i, old_leaves, new_leaves, mask):
    """Columns U [n, 4] (old pieces, then new pieces) and signs c [4] with K* - K = U diag(c) U^T / m."""
    none = jnp.full_like(i, -1)
    old1 = jnp.where(kind == GROW, i, 2 * i + 1)
    old2 = jnp.where(kind == GROW, none, 2 * i + 2)
    new1 = jnp.where(kind == PRUNE, i, 2 * i + 1)
    new2 = jnp.where(kind == PRUNE, none, 2 * i + 2)
    U = jnp.stack([old_leaves == old1, old_leaves == old2, new_leaves == new1, new_leaves == new2], axis=1)
    return (U & mask[:, None]).astype(jnp.float64), jnp.array([-1.0, -1.0, 1.0, 1.0])


def lowrank_delta(state: LowRankState, U, c, m, y):
    """Log-likelihood change and the updated state for A* = A + U diag(c/m) U^T (Woodbury, det. lemma)."""
    cm = c / m
    AiU = state.Ainv @ U
    cap = jnp.diag(1.0 / cm) + U.T @ AiU
    Ua = U.T @ state.alpha
    sol = jnp.linalg.solve(cap, Ua)
    sign, ld_cap = jnp.linalg.slogdet(cap)
    sign_c = jnp.prod(jnp.sign(cm))
    ld_change = ld_cap + jnp.sum(jnp.log(jnp.abs(cm)))
    delta = 0.5 * Ua @ sol - 0.5 * ld_change
    delta = jnp.where(sign * sign_c > 0, delta, -jnp.inf)
    new = LowRankState(state.Ainv - AiU @ jnp.linalg.solve(cap, AiU.T), state.alpha - AiU @ sol,
                       state.logdet + ld_change)
    return delta, new


@dataclass(frozen=True)
class ForestKernelLikelihood(TreeLikelihood):
    """BARK's plug-in for the tree moves: the exact change of log N(y | 0, K_forest + noise I) when one
    tree is edited. A move touches one node, so the kernel changes by a rank-4 term U C U^T: "lowrank"
    applies Woodbury and the matrix determinant lemma to a cached inverse (O(n^2) per proposal; the
    cache is refreshed by a Cholesky at the start of every sweep); "cholesky" refactorizes (O(n^3))."""

    num_trees: int
    update: str
    noise: jax.Array
    mask: jax.Array
    y: jax.Array

    def init(self, leaves):
        counts = self.num_trees * shared_leaf_fraction(leaves, leaves)
        L = linalg.observation_cholesky(counts / self.num_trees, self.noise, self.mask)
        if self.update == "lowrank":
            eye = jnp.eye(L.shape[0])
            return LowRankState(cho_solve((L, True), eye), cho_solve((L, True), self.y),
                                2.0 * jnp.sum(jnp.log(jnp.diagonal(L))))
        return CholeskyState(counts, linalg.gaussian_logpdf(self.y, jnp.zeros_like(self.y), L))

    def delta(self, state, tree_index, kind, node, old_leaves, new_leaves):
        if self.update == "lowrank":
            U, c = move_pieces(kind, node, old_leaves, new_leaves, self.mask)
            return lowrank_delta(state, U, c, self.num_trees, self.y)
        eq = lambda leaves: (leaves[:, None] == leaves[None, :]).astype(jnp.float64)  # noqa: E731
        counts = state.counts - eq(old_leaves) + eq(new_leaves)
        loglik = kernel_loglik(counts / self.num_trees, self.noise, self.mask, self.y)
        return loglik - state.loglik, CholeskyState(counts, loglik)


@dataclass(frozen=True)
class ForestContext:
    """What BARK's moves read besides the site they update: the routing, the other site's value, the
    noise prior and the likelihood plug-in."""

    spec: TreeSpec
    X: jax.Array
    forest: jax.Array
    noise: jax.Array
    noise_prior: dist.Distribution
    likelihood: ForestKernelLikelihood

    def noise_free_kernel(self):
        """K_forest on the data rows (for the noise move)."""
        leaves = route_forest(self.spec, self.forest, self.X)
        return shared_leaf_fraction(leaves, leaves)

    def noise_loglik(self, K, noise):
        """The likelihood as a function of the noise, given the noise-free kernel (for the noise move)."""
        return kernel_loglik(K, noise, self.likelihood.mask, self.likelihood.y)


class ForestArrays(NamedTuple):
    """Per-sample arrays of BARK's posterior (leading dim S): training leaves, Cholesky factor, K^-1 y and
    the per-tree, per-node prediction tables (see `BARK.prepare`)."""

    leaves: jax.Array
    alpha: jax.Array
    L: jax.Array
    mean_table: jax.Array
    u_table: jax.Array


def _moments(data, mean, u):
    """User-unit latent mean and variance from the standardized mean and u = L^-1 k(x) (003 Eq. 10b-c;
    k(x, x) = 1, so the variance is 1 - ||u||^2, floored)."""
    var = jnp.maximum(1.0 - jnp.sum(u * u, axis=-1), 1e-12)
    return linalg.to_user_units(data, mean, var)


class BARK(Surrogate, StructureMoves, ForestPosterior, CoordinateMoments, NoiselessForm):
    """The BARK surrogate: ``BARK(space, num_trees=50, alpha=0.95, beta=2, nu=3, q=0.9, noise_prior=None)``.

    The noise variance has the paper's InverseGamma prior set by (nu, q); ``noise_prior=(loc, scale)`` replaces
    it by LogNormal(loc, scale), which is what ``deterministic=True`` does (``noiseless()``, NOISELESS_PRIOR):
    with its default prior BARK read about a fifth of an exact objective's variance as noise (posterior noise sd
    0.43 and 0.44 of y's on 80 random PestControl points, two seeds) and did not interpolate its best point; in
    BO on PestControl the noiseless form ended level with the default (BENCHMARKS.md, "BARK declared exact").

    Sites: ``forest`` [m, nodes, 3 + C] (updated by grow / prune / change moves, see
    ``inference.moves.tree_moves``) and ``noise`` (random-walk MH on log(noise), ``inference.moves.noise``);
    both moves reuse the forest's leaf assignments, so a sweep costs no NUTS gradient. Real, integer and categorical columns are split
    natively (categorical splits are category subsets); conditional spaces are seen flat.
    ``update``: how a tree move's likelihood change is computed ("lowrank": Woodbury and the
    determinant lemma on the rank-4 change of the kernel, refreshed by a Cholesky every sweep;
    "cholesky": a fresh factorization per proposal). Both are exact; see BENCHMARKS.md for speed.
    """

    name = "bark"
    #: the integrated UCB with kappa = sqrt(beta) = 1.96 fixed, the setting of the BARK authors' public code
    #: (003's BO loop); our UCB's own default, beta_t = 0.2 d log 2t, weighs sigma 1.5-2.5x more at D = 10-25
    default_acquisition = "ucb,beta=3.8416"
    #: the integrated UCB over forests as a mixed-integer program (003 Sec. 6.1); any other criterion (log-EI, EI,
    #: PI) by the MIP's own warm start, a Sobol pool polished over the leaf intervals
    preferred_optimizers = ("mip", "leaf_ascent")
    discrete_sites = {"forest": "forest", "noise": "noise"}
    #: BO-loop MCMC defaults (003 App. D: 4 chains, 1000 burn-in sweeps on the first fit, 16 forests;
    #: later fits continue each chain from its last state, with a shorter thinning than the paper's 100)
    #: a tree sweep costs O(rows^2) per move: midpoint buckets (48, 96, ...) cut padding at one more compile
    bucket_steps = (1.0, 1.5)
    sampler_defaults = {"num_chains": 4, "cold_warmup": 1000, "warm_warmup": 0, "num_samples": 4, "thinning": 25}

    def __init__(self, space: Space, num_trees: int = 50, alpha: float = 0.95, beta: float = 2.0,
                 nu: float = 3.0, q: float = 0.9, max_depth: int = 6, update: str = "lowrank", noise_prior=None):
        super().__init__(space)
        if not (isinstance(num_trees, (int, np.integer)) and num_trees >= 1):
            raise ValueError(f"num_trees must be a positive integer, got {num_trees!r}")
        if update not in UPDATES:
            raise ValueError(f"update must be one of {UPDATES}, got {update!r}")
        self.spec = TreeSpec.from_space(space, max_depth=max_depth, alpha=alpha, beta=beta)
        self.num_trees = int(num_trees)
        self.nu, self.q = float(nu), float(q)
        if noise_prior is not None:
            noise_prior = tuple(float(v) for v in noise_prior)
            if len(noise_prior) != 2 or not noise_prior[1] > 0:
                raise ValueError(f"noise_prior must be None or (loc, scale > 0) of a LogNormal, got {noise_prior!r}")
        self.noise_prior = noise_prior
        _ = self.noise_dist  # (nu, q) are checked here, not at the first fit
        self.update = update

    @property
    def noise_dist(self):
        """The noise variance's prior: InverseGamma from (nu, q) (003), or LogNormal(noise_prior) when given."""
        if self.noise_prior is None:
            return noise_prior(self.nu, self.q)
        return dist.LogNormal(*self.noise_prior)

    def config_key(self):
        return (self.num_trees, self.spec.key(), self.nu, self.q, self.update, self.noise_prior)

    def options(self) -> dict:
        options = {"num_trees": self.num_trees, "alpha": self.spec.alpha, "beta": self.spec.beta, "nu": self.nu,
                   "q": self.q, "max_depth": self.spec.max_depth, "update": self.update}
        if self.noise_prior is not None:  # absent otherwise, so journals written before the option still match
            options["noise_prior"] = list(self.noise_prior)
        return options

    # ---------------------------------------------------------------- model
    def forest_prior(self) -> BARTPrior:
        return BARTPrior(self.spec, self.num_trees)

    def model(self, data: Data) -> None:
        forest = numpyro.sample("forest", self.forest_prior())
        noise = numpyro.sample("noise", self.noise_dist)
        L = forest_cholesky(route_forest(self.spec, forest, data.X), noise, data.mask)
        numpyro.sample("y", dist.MultivariateNormal(jnp.zeros_like(data.y), scale_tril=L, validate_args=False),
                       obs=data.y)

    def init_discrete(self, key, data: Data) -> dict:
        """Each chain starts from its own prior draw of the forest and of the noise: starts over-dispersed
        relative to the posterior, so that r_hat compares chains that began apart (the usual BART start, m
        single-leaf trees and one noise value, would start every chain alike)."""
        k_forest, k_noise = jax.random.split(key)
        return {"forest": self.forest_prior().sample(k_forest), "noise": self.noise_dist.sample(k_noise)}

    def move_context(self, data: Data, z: dict, sites: dict) -> ForestContext:
        likelihood = ForestKernelLikelihood(self.num_trees, self.update, sites["noise"], data.mask, data.y)
        return ForestContext(self.spec, data.X, sites["forest"], sites["noise"], self.noise_dist, likelihood)

    # ---------------------------------------------------------------- predictions
    def prepare(self, samples: dict, data: Data) -> Prepared:
        """Per sample: training leaves, Cholesky factor L, alpha = K^-1 y, and per tree and node the tables
        mean_table[t, v] = alpha' T[t, v] / m and u_table[t, v] = L^-1 T[t, v] / m, T[t, v] being the
        indicator of the training rows in node v of tree t: the kernel vector of a query is a sum of T rows
        over its leaves, so its mean and variance (003 Eq. 10b-c) are sums of table rows. Memory: S m
        (2^(max_depth+1) - 1) n floats for the u tables, about 160 MB for 16 forests at n = 192."""
        m, nodes = samples["forest"].shape[1:3]

        def one(forest, noise):
            leaves = route_forest(self.spec, forest, data.X)
            L = forest_cholesky(leaves, noise, data.mask)
            alpha = linalg.cho_solve((L, True), data.y)
            T = (leaves[:, None, :] == jnp.arange(nodes)[None, :, None]) * data.mask / m  # [m, nodes, n]
            U = linalg.solve_triangular(L, T.reshape(m * nodes, -1).T, lower=True)
            return ForestArrays(leaves, alpha, L, T @ alpha, U.T.reshape(m, nodes, -1))
        return Prepared(samples, data, jax.vmap(one)(samples["forest"], samples["noise"]))

    def forest_posterior(self, prepared: Prepared) -> ForestGP:
        """The posterior forests with their training leaves, Cholesky factors and K^-1 y (for the MIP)."""
        a = prepared.arrays
        return ForestGP(prepared.samples["forest"], a.leaves, a.L, a.alpha)

    def predict_prepared(self, prepared: Prepared, Xq):
        """Latent mean and variance per sample (003 Eq. 10b-c), user units; k(x, x) = 1, so the variance is
        1 - ||L^-1 k(x)||^2 with L^-1 k(x) the sum over trees of the u_table rows of x's leaves."""
        samples, data, arrays = prepared
        trees = jnp.arange(samples["forest"].shape[1])[:, None]

        def one(forest, a: ForestArrays):
            lq = route_forest(self.spec, forest, Xq)  # [m, Nq]
            return jnp.sum(a.mean_table[trees, lq], axis=0), jnp.sum(a.u_table[trees, lq], axis=0)

        mean, u = jax.vmap(one)(samples["forest"], arrays)  # [S, Nq], [S, Nq, n]
        return _moments(data, mean, u)

    def coordinate_moments(self, prepared: Prepared, x, column, values, trees, valid):
        """Mean and variance [S, K] (as `predict_prepared`) of row x [D] with its `column` set to each of
        `values` [K]. Only trees that split on that column can change leaf, so only they are routed and
        their table rows swapped into x's sums: `trees` [P] are flat indices s * m + t of those trees
        (padding marked False in `valid` [P]); O(K P n) instead of O(K S m n)."""
        samples, data, arrays = prepared
        S, m = samples["forest"].shape[:2]
        flat_forests = samples["forest"].reshape((S * m,) + samples["forest"].shape[2:])
        base = route_forest(self.spec, flat_forests, x[None])[:, 0]  # [S m]
        flat_mean = arrays.mean_table.reshape(S * m, -1)
        flat_u = arrays.u_table.reshape(S * m, -1, arrays.u_table.shape[-1])
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

    def log_likelihood(self, sample, data, loo=False):
        L = forest_cholesky(route_forest(self.spec, sample["forest"], data.X), sample["noise"], data.mask)
        return linalg.user_loglik(data, jnp.zeros_like(data.y), L, loo)

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
        return {"accept_noise": np.asarray(move_stats["noise"]), **move_acceptance_rates(move_stats["forest"])}

    def arviz_dims(self):
        dims = {"leaves": ["tree"], "depth": ["tree"], "splits": ["feature"]}
        coords = {"tree": np.arange(self.num_trees), "feature": list(self.space.names)}
        return dims, coords


__all__ = ["BARK", "ForestContext", "ForestKernelLikelihood", "forest_cholesky", "kernel_loglik", "noise_prior"]
