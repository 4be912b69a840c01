"""Baseline fully Bayesian GP: Matérn-5/2 (or RBF) ARD on numeric columns times an overlap kernel on
categorical columns, with weakly informative priors, on standardized y."""

from __future__ import annotations

import math
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo import linalg
from zoo.base import Surrogate
from zoo.data import Data
from zoo.kernels import STATIONARY, overlap
from zoo.space import CATEGORICAL, Space

NOISE_FLOOR = 1e-6  # added to the sampled noise variance (standardized units) for stability


def lengthscale_prior(dim: int):
    """LogNormal(sqrt 2 + log(dim)/2, sqrt 3): lengthscales grow with dimension (Hvarfner et al., 2024)."""
    return dist.LogNormal(math.sqrt(2.0) + 0.5 * math.log(max(dim, 1)), math.sqrt(3.0))


def mixed_kernel(X1, X2, params, *, num_idx, cat_idx, base="matern52"):
    """outputscale * k_base(numeric columns) * overlap(categorical columns)."""
    K = params["outputscale"] * jnp.ones((X1.shape[0], X2.shape[0]), X1.dtype)
    if len(num_idx):
        K = K * STATIONARY[base](X1[:, num_idx], X2[:, num_idx], params["lengthscale"])
    if len(cat_idx):
        K = K * overlap(X1[:, cat_idx], X2[:, cat_idx], params["cat_lengthscale"])
    return K


def gp_model(data: Data, *, num_idx, cat_idx, base="matern52", noise_loc=-4.0, noise_scale=1.0):
    """GP generative model: hyperparameter priors, then y ~ N(mean, K + noise I) via its Cholesky factor."""
    dim = len(num_idx) + len(cat_idx)
    params = {}
    if len(num_idx):
        params["lengthscale"] = numpyro.sample(
            "lengthscale", lengthscale_prior(dim).expand([len(num_idx)]).to_event(1))
    if len(cat_idx):
        params["cat_lengthscale"] = numpyro.sample(
            "cat_lengthscale", lengthscale_prior(dim).expand([len(cat_idx)]).to_event(1))
    params["outputscale"] = numpyro.sample("outputscale", dist.LogNormal(0.0, 1.0))
    noise = numpyro.sample("noise", dist.LogNormal(noise_loc, noise_scale))
    mean = numpyro.sample("mean", dist.Normal(0.0, 1.0))
    L = _gp_cholesky(data, params, noise, num_idx, cat_idx, base)
    numpyro.sample("y", dist.MultivariateNormal(mean * data.mask, scale_tril=L, validate_args=False), obs=data.y)


def _gp_cholesky(data, params, noise, num_idx, cat_idx, base):
    K = mixed_kernel(data.X, data.X, params, num_idx=num_idx, cat_idx=cat_idx, base=base)
    K = K + (noise + NOISE_FLOOR) * jnp.eye(K.shape[0], dtype=K.dtype)
    return linalg.padded_cholesky(K, data.mask)


class GP(Surrogate):
    """The baseline surrogate: a GP whose hyperparameters are all sampled by NUTS.

    Sites: ``lengthscale`` [numeric dims], ``cat_lengthscale`` [categorical dims], ``outputscale``,
    ``noise`` (variance, standardized units), ``mean``. On a conditional space it sees the flat
    encoding: decisions are categorical columns, inactive columns hold a fixed fill value.
    """

    name = "gp"

    def __init__(self, space: Space, kernel: str = "matern52", noise_prior=(-4.0, 1.0)):
        super().__init__(space)
        if kernel not in STATIONARY:
            raise ValueError(f"kernel must be one of {sorted(STATIONARY)}, got {kernel!r}")
        self.kernel = kernel
        self.noise_prior = tuple(noise_prior)
        self.num_idx = np.flatnonzero(space.kinds != CATEGORICAL)
        self.cat_idx = np.flatnonzero(space.kinds == CATEGORICAL)
        self._kw = dict(num_idx=self.num_idx, cat_idx=self.cat_idx, base=kernel)

    def config_key(self):
        return (self.kernel, self.noise_prior)

    def model(self, data: Data) -> None:
        gp_model(data, **self._kw, noise_loc=self.noise_prior[0], noise_scale=self.noise_prior[1])

    def _cholesky(self, sample, data):
        return _gp_cholesky(data, sample, sample["noise"], **self._kw)

    def prepare(self, samples, data):
        def one(s):
            L = self._cholesky(s, data)
            alpha, Kinv = linalg.precision_terms(L, data.y - s["mean"] * data.mask)
            return {"alpha": alpha, "Kinv": Kinv}
        return samples, data, jax.vmap(one)(samples)

    def predict_prepared(self, cache, Xq):
        samples, data, pre = cache

        def one(s, p):
            Kxq = mixed_kernel(data.X, Xq, s, **self._kw) * data.mask[:, None]
            kqq = s["outputscale"] * jnp.ones(Xq.shape[0], Xq.dtype)
            m, v = linalg.latent_posterior(p["alpha"], p["Kinv"], Kxq, kqq)
            return s["mean"] + m, v

        mean, var = jax.vmap(one)(samples, pre)
        return data.y_mean + data.y_std * mean, data.y_std**2 * var

    def arviz_dims(self):
        """Dims and coordinates naming each lengthscale after its parameter."""
        names = np.array(self.space.names)
        dims = {"lengthscale": ["numeric_param"], "cat_lengthscale": ["categorical_param"]}
        coords = {"numeric_param": list(names[self.num_idx]), "categorical_param": list(names[self.cat_idx])}
        return dims, coords

    def log_likelihood(self, sample, data):
        L = self._cholesky(sample, data)
        return linalg.chain_rule_loglik(data.y, sample["mean"] * data.mask, L) - jnp.log(data.y_std) * data.mask
