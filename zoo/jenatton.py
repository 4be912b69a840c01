"""Jenatton et al.'s semi-parametric tree GP (ICML 2017, paper 001, Section 2).

Each leaf p has its own GP g_p ~ GP(b_p, K_p) on the leaf's parameters; each inner node v on the path
adds a random linear function c_v' r_v of its features (an intercept and its own numeric parameters,
the shared variables; Section 2.4), with c ~ N(0, sigma_c^2 I):
    y_i = g_{p_i}(x_i) + z(x_i)' c + eps_i,   eps_i ~ N(0, sigma^2)                        (Eq. 1)
The joint density factorizes as p(theta) p(y | theta) p(c | y, theta). NUTS scores y with c
integrated out through Eq. 3:
    log P(y) = log N(y; Z'c + b, M) + log N(c; 0, Sigma_c) - log N(c; Lambda_c^-1 f_c, Lambda_c^-1)
with M = K_block + sigma^2 I (block diagonal over leaves), Lambda_c = Sigma_c^-1 + Z M^-1 Z' and
f_c = Z M^-1 (y - b) (Section 2.2), and samples the explicit site c from its closed-form conditional
(so ArviZ shows c's posterior), in non-centred form through the standard-normal site ``c_white``.
Predictions integrate c analytically per kernel-parameter sample (Eq. 5), and `path_predict_prepared`
gives the path-level values that the two-step EI scores (Eq. 6). Independent GPs are the same model with
c fixed at 0 (`shared=False`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.linalg import cho_solve, solve_triangular

from zoo import linalg
from zoo.base import Component, NoiselessForm, PathPredictions, Prepared, Surrogate
from zoo.data import Data
from zoo.kernels import block_slices, matern52, on_route
from zoo.priors import block_lengthscale_prior
from zoo.space import CATEGORICAL, Space


class InnerNode(NamedTuple):
    """A node with children, whose features z_v (an intercept and its own parameters) enter c (001 Sec. 2.4)."""

    name: str
    route_cols: np.ndarray
    route_idx: np.ndarray
    own_cols: np.ndarray


class JenattonArrays(NamedTuple):
    """Per-sample arrays of the posterior (leading dim S): M^-1 (y - b - Z c_hat), M^-1, W = M^-1 Z,
    c_hat = Lambda_c^-1 f_c and Lambda_c^-1 (zeros without shared weights)."""

    alpha: jax.Array
    Minv: jax.Array
    W: jax.Array
    c_hat: jax.Array
    lam_inv: jax.Array


class Jenatton(Surrogate, PathPredictions, NoiselessForm):
    """Semi-parametric tree GP. Sites: ``lengthscale`` [leaf numeric params], ``leaf_variance`` [P],
    ``offset`` [P] (b_p), ``sigma_c``, ``noise``, and ``c`` [d] (a deterministic site: c_mean + L^-T c_white
    with ``c_white`` [d] standard normal) when shared=True."""

    name = "jenatton"
    preferred_optimizers = ("two_step", "lbfgs")  # path then leaf (001 Sec. 3.2) while c is in the model

    def __init__(self, space: Space, shared: bool = True, noise_prior=(-4.0, 1.0)):
        super().__init__(space)
        self.shared, self.noise_prior = bool(shared), tuple(noise_prior)
        self.leaves = []  # one Component per leaf: its numeric parameters and the route to it
        for path in space.paths:
            leaf = space.nodes[path.leaf]
            if any(space.kinds[space.col[p.name]] == CATEGORICAL for p in leaf.params):
                raise ValueError(f"Jenatton's model needs numeric leaf parameters; leaf {path.leaf!r} has a "
                                 "categorical one (put categoricals on inner nodes, where they are one-hot features)")
            self.leaves.append(Component(path.leaf, np.array([space.col[p.name] for p in leaf.params], dtype=np.int64),
                                         np.zeros(0, dtype=np.int64), *space.route(path.leaf)))
        self.features = []  # one InnerNode per node with children: the route to it and its own parameters
        for name, node in space.nodes.items():
            if node.children:
                self.features.append(InnerNode(name, *space.route(name),
                                               np.array([space.col[p.name] for p in node.params], dtype=np.int64)))
        self.leaf_cols = np.concatenate([leaf.numeric_cols for leaf in self.leaves])
        self.leaf_slices = block_slices(len(leaf.numeric_cols) for leaf in self.leaves)
        self.n_features = sum(1 + self._width(f.own_cols) for f in self.features)

    def options(self) -> dict:
        return {"shared": self.shared, "noise_prior": list(self.noise_prior)}

    def offers(self, capability) -> bool:
        """Path-level predictions only with the shared weights c (without them every path's value is its offset)."""
        return self.shared if capability is PathPredictions else True

    # --- structure helpers (jittable) -------------------------------------------------------
    def _width(self, cols) -> int:
        """Feature columns of an inner node's own parameters: 1 per numeric, one-hot per categorical."""
        return int(sum(self.space.n_choices[c] if self.space.kinds[c] == CATEGORICAL else 1 for c in cols))

    def _own_features(self, X, cols):
        """r_v: numeric parameters as they are, categorical ones one-hot (001 Section 2.4)."""
        parts = []
        for c in cols:
            if self.space.kinds[c] == CATEGORICAL:
                parts.append((X[:, c][:, None] == jnp.arange(self.space.n_choices[c])).astype(X.dtype))
            else:
                parts.append(X[:, c][:, None])
        return parts

    def leaf_onehot(self, X):
        """[N, P] indicator of each row's leaf."""
        return jnp.stack([on_route(X, leaf.route_cols, leaf.route_idx) for leaf in self.leaves], 1)

    def feature_matrix(self, X):
        """[N, d] rows z(x): for each inner node on x's path, an intercept and its numeric parameters."""
        blocks = []
        for _, cols, idx, own in self.features:  # InnerNode(name, route_cols, route_idx, own_cols)
            on = on_route(X, cols, idx)[:, None]
            blocks.append(on * jnp.concatenate([jnp.ones((X.shape[0], 1), X.dtype)] + self._own_features(X, own), axis=1))
        # a flat space has no inner node, so no shared features: [N, 0]
        return jnp.concatenate(blocks, axis=1) if blocks else jnp.zeros((X.shape[0], 0), X.dtype)

    def block_kernel(self, X1, X2, params):
        """K_block: leaf kernels on rows of the same leaf, 0 across leaves."""
        O1, O2 = self.leaf_onehot(X1), self.leaf_onehot(X2)
        K = jnp.zeros((X1.shape[0], X2.shape[0]), X1.dtype)
        for p, (leaf, sl) in enumerate(zip(self.leaves, self.leaf_slices)):
            cols = leaf.numeric_cols
            k = params["leaf_variance"][p] * O1[:, p][:, None] * O2[:, p][None, :]
            if len(cols):
                k = k * matern52(X1[:, cols], X2[:, cols], params["lengthscale"][sl])
            K = K + k
        return K

    # --- model ------------------------------------------------------------------------------
    def sample_hyperparameters(self) -> dict:
        P = len(self.leaves)
        params = {}
        if len(self.leaf_cols):
            params["lengthscale"] = numpyro.sample(
                "lengthscale", block_lengthscale_prior([(len(leaf.numeric_cols),) * 2 for leaf in self.leaves]))
        params["leaf_variance"] = numpyro.sample("leaf_variance", dist.LogNormal(0.0, 1.0).expand([P]).to_event(1))
        params["offset"] = numpyro.sample("offset", dist.Normal(0.0, 1.0).expand([P]).to_event(1))
        params["noise"] = numpyro.sample("noise", dist.LogNormal(*self.noise_prior))
        if self.shared:
            params["sigma_c"] = numpyro.sample("sigma_c", dist.LogNormal(-1.0, 1.0))
        return params

    def _terms(self, data: Data, params):
        """Cholesky of M (padded), Z [n, d], b [n], and (Lambda_c Cholesky, posterior mean of c)."""
        L = linalg.observation_cholesky(self.block_kernel(data.X, data.X, params), params["noise"], data.mask)
        b = self.leaf_onehot(data.X) @ params["offset"] * data.mask
        Z = self.feature_matrix(data.X) * data.mask[:, None]
        if not self.shared:
            return L, Z, b, None, None
        MinvZ = cho_solve((L, True), Z)  # M^-1 Z'
        Lam = jnp.eye(Z.shape[1]) / params["sigma_c"] ** 2 + Z.T @ MinvZ  # Lambda_c (Section 2.2)
        L_lam = jnp.linalg.cholesky(Lam)
        f_c = MinvZ.T @ (data.y - b)
        return L, Z, b, L_lam, cho_solve((L_lam, True), f_c)

    def model(self, data: Data) -> None:
        params = self.sample_hyperparameters()
        L, Z, b, L_lam, c_mean = self._terms(data, params)
        if not self.shared:
            numpyro.sample("y", dist.MultivariateNormal(b, scale_tril=L, validate_args=False), obs=data.y)
            return
        # c | y, theta ~ N(Lambda^-1 f_c, Lambda^-1), non-centred: c = c_mean + L_lam^-T eps, eps ~ N(0, I).
        # The joint density of (theta, c) is the same; NUTS sees a standard normal instead of the funnel that
        # a centred c forms with sigma_c when the data are few.
        eps = numpyro.sample("c_white", dist.Normal(0.0, 1.0).expand([Z.shape[1]]).to_event(1))
        numpyro.deterministic("c", c_mean + solve_triangular(L_lam.T, eps, lower=False))
        numpyro.factor("y_marginal", self.log_marginal(data, params, terms=(L, Z, b, L_lam, c_mean)))

    def draw_joint(self, key, data: Data):
        """Prior draw of theta and of c ~ N(0, sigma_c^2 I), then y = b + Z c + eps, eps ~ N(0, M) (001
        Section 2.2): the generative form of the joint that the model scores as p(y | theta) p(c | y, theta)."""
        if not self.shared:
            return super().draw_joint(key, data)
        k_theta, k_c, k_y = jax.random.split(key, 3)
        params = numpyro.handlers.seed(self.sample_hyperparameters, k_theta)()
        L, Z, b, _, _ = self._terms(data, params)
        c = params["sigma_c"] * jax.random.normal(k_c, (Z.shape[1],))
        y = b + Z @ c + L @ jax.random.normal(k_y, (L.shape[0],))
        return {**params, "c": c}, jnp.where(data.mask, y, 0.0)

    def log_marginal(self, data, params, terms=None, c=None):
        """log P(y | theta) by Eq. 3 (any c gives the same value; c = posterior mean is stablest)."""
        L, Z, b, L_lam, c_mean = terms if terms is not None else self._terms(data, params)
        if not self.shared:
            return linalg.gaussian_logpdf(data.y, b, L)
        c = c_mean if c is None else c
        lik = linalg.gaussian_logpdf(data.y, Z @ c + b, L)
        d = Z.shape[1]
        prior = dist.Normal(0.0, params["sigma_c"]).log_prob(c).sum()
        w = L_lam.T @ (c - c_mean)  # Lambda^1/2 (c - mean)
        cond = -0.5 * w @ w + jnp.sum(jnp.log(jnp.diagonal(L_lam))) - 0.5 * d * linalg.LOG_2PI
        return lik + prior - cond

    # --- predictions ------------------------------------------------------------------------
    def prepare(self, samples, data) -> Prepared:
        """Per sample: the `JenattonArrays`."""
        d = self.n_features

        def one(s):
            L, Z, b, L_lam, c_hat = self._terms(data, s)
            if not self.shared:
                c_hat, lam_inv = jnp.zeros(d), jnp.zeros((d, d))
            else:
                lam_inv = cho_solve((L_lam, True), jnp.eye(d))
            alpha, Minv = linalg.precision_terms(L, data.y - Z @ c_hat - b)
            return JenattonArrays(alpha, Minv, Minv @ Z, c_hat, lam_inv)
        return Prepared(samples, data, jax.vmap(one)(samples))

    def predict_prepared(self, prepared: Prepared, Xq):
        """Posterior of g_p(x) + z_p(x)'c + b_p with c integrated out (001 Eq. 5):
        mean k'M^-1(y - b - Z c_hat) + z'c_hat + b_p, variance S_p(x, x) + t' Lambda_c^-1 t with
        t = z - Z'M^-1 k. Averaging over samples integrates the kernel parameters."""
        samples, data, arrays = prepared

        def one(s, a: JenattonArrays):
            Kxq = self.block_kernel(data.X, Xq, s) * data.mask[:, None]
            onehot = self.leaf_onehot(Xq)
            m, v = linalg.latent_posterior(a.alpha, a.Minv, Kxq, onehot @ s["leaf_variance"])
            z = self.feature_matrix(Xq)
            t = z - Kxq.T @ a.W  # [N, d]
            return (m + onehot @ s["offset"] + z @ a.c_hat,
                    v + jnp.einsum("nd,de,ne->n", t, a.lam_inv, t))

        return linalg.to_user_units(data, *jax.vmap(one)(samples, arrays))

    def path_predict_prepared(self, prepared: Prepared, Xq):
        """Path-level value b_p + z_p'c of each row's path, c integrated out (001 Eq. 6):
        N(b_p + z_p' Lambda_c^-1 f_c, z_p' Lambda_c^-1 z_p); only the decisions and the shared
        (inner-node) parameters of a row matter."""
        samples, data, arrays = prepared

        def one(s, a: JenattonArrays):
            z = self.feature_matrix(Xq)
            return (self.leaf_onehot(Xq) @ s["offset"] + z @ a.c_hat,
                    jnp.einsum("nd,de,ne->n", z, a.lam_inv, z))

        return linalg.to_user_units(data, *jax.vmap(one)(samples, arrays))

    def shared_columns(self, path) -> np.ndarray:
        """Encoded columns of the parameters owned by the inner nodes of `path` (the r_v of 2.4)."""
        return np.array([self.space.col[q.name] for n in path.nodes[:-1] for q in self.space.nodes[n].params],
                        dtype=np.int64)

    def dense_covariance(self, data, params):
        """Z' Sigma_c Z + K_block + sigma^2 I on the real rows (Eq. 4), padding block outside, under the
        same noise policy as the fast route (linalg.noisy_covariance)."""
        K = self.block_kernel(data.X, data.X, params)
        if self.shared:
            Z = self.feature_matrix(data.X)
            K = K + params["sigma_c"] ** 2 * Z @ Z.T
        return linalg.noisy_covariance(K, params["noise"], data.mask)

    def log_likelihood(self, sample, data, loo=False):
        """Pointwise log p(y_i | y_<i, theta) (or log p(y_i | y_-i, theta)) of the marginal (Eq. 4), user units."""
        L = jnp.linalg.cholesky(self.dense_covariance(data, sample))
        b = self.leaf_onehot(data.X) @ sample["offset"] * data.mask
        return linalg.user_loglik(data, b, L, loo)

    def arviz_dims(self):
        """Dims named after the space: leaf parameters, leaves, and inner-node features of c."""
        names = np.array(self.space.names)
        leaves = [p.leaf for p in self.space.paths]
        def labels(c):
            if self.space.kinds[c] == CATEGORICAL:
                return [f"{names[c]}={v}" for v in self.space.columns[c].choices]
            return [names[c]]
        features = [f"{f.name}:{col}" for f in self.features
                    for col in ["intercept"] + [lab for c in f.own_cols for lab in labels(c)]]
        dims = {"lengthscale": ["leaf_param"], "leaf_variance": ["leaf"], "offset": ["leaf"], "c": ["feature"],
                "c_white": ["feature"]}
        return dims, {"leaf_param": list(names[self.leaf_cols]), "leaf": leaves, "feature": features}
