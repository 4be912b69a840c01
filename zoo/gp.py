"""Exact GP surrogates: a generic base (priors + covariance function), and the baseline fully Bayesian GP.

The baseline kernel is Matérn-5/2 (or RBF) ARD on numeric columns times an overlap kernel on
categorical columns, with weakly informative priors, on standardized y.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from zoo import linalg
from zoo.base import NoiselessForm, OutputWarping, Prepared, Surrogate
from zoo.data import Data
from zoo.kernels import STATIONARY, kumaraswamy_warp, overlap
from zoo.priors import WARP_PRIOR, lengthscale_prior
from zoo.space import CATEGORICAL, Space
from zoo.warping import (WARP_SITE, OutputWarp, output_warp_named, output_warp_option, sample_warped_targets,
                         warped_suffix)


class GPArrays(NamedTuple):
    """Per-sample arrays of an exact GP posterior (leading dim S)."""

    alpha: jax.Array  # K^-1 (y - mean)
    Kinv: jax.Array  # K^-1 (K: kernel plus noise on the data rows)


def gp_cholesky(data: Data, params: dict, kernel) -> jax.Array:
    """Cholesky factor of kernel(X, X) under the zoo's noise policy (linalg.noisy_covariance)."""
    return linalg.observation_cholesky(kernel(data.X, data.X, params), params["noise"], data.mask)


def gp_likelihood(data: Data, params: dict, kernel) -> None:
    """Observed site: y ~ N(mean, K + noise I), scored through the Cholesky factor."""
    L = gp_cholesky(data, params, kernel)
    numpyro.sample("y", dist.MultivariateNormal(params["mean"] * data.mask, scale_tril=L, validate_args=False),
                   obs=data.y)


def mixed_kernel(X1, X2, params, *, num_idx, cat_idx, base="matern52"):
    """outputscale * k_base(numeric columns) * overlap(categorical columns)."""
    K = params["outputscale"] * jnp.ones((X1.shape[0], X2.shape[0]), X1.dtype)
    if len(num_idx):
        K = K * STATIONARY[base](X1[:, num_idx], X2[:, num_idx], params["lengthscale"])
    if len(cat_idx):
        K = K * overlap(X1[:, cat_idx], X2[:, cat_idx], params["cat_lengthscale"])
    return K


#: SAAS global shrinkage scale alpha: tau ~ HalfCauchy(alpha), alpha = 0.1 as in Eriksson & Jankowiak (2021)
SAAS_ALPHA = 0.1


def saas_lengthscales(n_num: int) -> jax.Array:
    """Lengthscales under the SAAS prior (Eriksson & Jankowiak 2021): each inverse squared lengthscale
    rho_d ~ HalfCauchy(tau) with a global tau ~ HalfCauchy(alpha), written non-centred as rho_d = tau c_d with
    c_d ~ HalfCauchy(1) (the same law, an easier geometry for NUTS when the data say little). Most rho_d sit
    near 0, i.e. most inputs switched off, unless the data ask for them. Sites ``saas_tau``, ``saas_c``;
    ``lengthscale`` = rho^(-1/2) is recorded as a deterministic site."""
    tau = numpyro.sample("saas_tau", dist.HalfCauchy(SAAS_ALPHA))
    c = numpyro.sample("saas_c", dist.HalfCauchy(jnp.ones(n_num)).to_event(1))
    return numpyro.deterministic("lengthscale", jax.lax.rsqrt(tau * c))


def gp_priors(n_num: int, n_cat: int, noise_loc=-4.0, noise_scale=1.0, saas: bool = False) -> dict:
    """Priors of the baseline GP: ARD lengthscales (dimension-scaled log-normal, or SAAS on the numeric inputs
    with `saas`), outputscale, noise variance, constant mean."""
    dim = n_num + n_cat
    params = {}
    if n_num and saas:
        params["lengthscale"] = saas_lengthscales(n_num)
    elif n_num:
        params["lengthscale"] = numpyro.sample("lengthscale", lengthscale_prior(dim).expand([n_num]).to_event(1))
    if n_cat:
        params["cat_lengthscale"] = numpyro.sample("cat_lengthscale", lengthscale_prior(dim).expand([n_cat]).to_event(1))
    params["outputscale"] = numpyro.sample("outputscale", dist.LogNormal(0.0, 1.0))
    params["noise"] = numpyro.sample("noise", dist.LogNormal(noise_loc, noise_scale))
    params["mean"] = numpyro.sample("mean", dist.Normal(0.0, 1.0))
    return params


def predict_from_cross(prepared: Prepared, cross):
    """Latent mean and variance [S, N] in user units from `cross(sample)` = (K(X, Xq) [n_pad, N], k(xq, xq) [N])
    and the prepared solves (R&W 2006, Eq. 2.25-2.26), vectorized over posterior samples."""
    samples, data, arrays = prepared

    def one(s, a: GPArrays):
        Kxq, kqq = cross(s)
        m, v = linalg.latent_posterior(a.alpha, a.Kinv, Kxq * data.mask[:, None], kqq)
        return s["mean"] + m, v

    return linalg.to_user_units(data, *jax.vmap(one)(samples, arrays))


class ExactGP(Surrogate):
    """A GP surrogate given by `sample_hyperparameters` (priors) and `kernel`; the rest is shared.

    Subclasses return a dict from `sample_hyperparameters` that holds at least ``noise`` and ``mean``
    and whatever their `kernel(X1, X2, params)` and `kernel_diag(X, params)` read. A subclass that also declares
    `OutputWarping` may set `output_warp` (a zoo.warping.OutputWarp): the GP then scores that warp of y, whose
    power, site ``yj_lambda``, is sampled with the rest.
    """

    #: the warp of y the GP scores, or None (only subclasses declaring OutputWarping set one)
    output_warp: OutputWarp | None = None

    def sample_hyperparameters(self) -> dict:
        raise NotImplementedError

    def kernel(self, X1, X2, params):
        raise NotImplementedError

    def kernel_diag(self, X, params):
        """Prior variance k(x, x) at each row (override when cheaper than the full kernel)."""
        return jax.vmap(lambda x: self.kernel(x[None], x[None], params)[0, 0])(X)

    def data_kernel(self, X1, X2, params):
        """`kernel` as the likelihood and `prepare` compute it, on the padded training rows; a model may give a
        form that is faster on that n x n block than its `kernel` (which predictions use on many query rows)."""
        return self.kernel(X1, X2, params)

    def model(self, data: Data) -> None:
        params = self.sample_hyperparameters()
        if self.output_warp is not None:
            data = data._replace(y=sample_warped_targets(data.y, data.mask, self.output_warp))
        gp_likelihood(data, params, self.data_kernel)

    def _targets(self, data: Data, s: dict):
        """The values the GP of draw `s` scores: y, or its warp under the draw's own power."""
        if self.output_warp is None:
            return data.y
        return jnp.where(data.mask, self.output_warp.forward(data.y, s[WARP_SITE]), 0.0)

    def prepare(self, samples, data) -> Prepared:
        def one(s):
            L = gp_cholesky(data, s, self.data_kernel)
            return GPArrays(*linalg.precision_terms(L, self._targets(data, s) - s["mean"] * data.mask))
        return Prepared(samples, data, jax.vmap(one)(samples))

    def predict_prepared(self, prepared: Prepared, Xq):
        data = prepared.data
        return predict_from_cross(prepared, lambda s: (self.kernel(data.X, Xq, s), self.kernel_diag(Xq, s)))

    def log_likelihood(self, sample, data, loo=False):
        terms = linalg.user_loglik(data._replace(y=self._targets(data, sample)), sample["mean"] * data.mask,
                                   gp_cholesky(data, sample, self.data_kernel), loo)
        if self.output_warp is not None:  # the change of variables back to y (Snelson et al., Eq. 5)
            terms = terms + jnp.where(data.mask, self.output_warp.log_jacobian(data.y, sample[WARP_SITE]), 0.0)
        return terms

    def draw_joint(self, key, data: Data):
        """The model run forwards; with `output_warp` its observed site holds the warped values, taken back to y."""
        sample, y = super().draw_joint(key, data)
        if self.output_warp is not None:
            y = jnp.where(data.mask, self.output_warp.inverse(y, sample[WARP_SITE]), 0.0)
        return sample, y

    # --- OutputWarping (served where a subclass declares it and sets output_warp) ---------------
    def offers(self, capability: type) -> bool:
        return self.output_warp is not None if capability is OutputWarping else super().offers(capability)

    def to_model_scale(self, samples, data, values):
        lam = jnp.asarray(samples[WARP_SITE])[:, None]
        z = (jnp.asarray(values, jnp.float64) - data.y_mean) / data.y_std
        return data.y_mean + data.y_std * self.output_warp.forward(z, lam)

    def from_model_scale(self, samples, data, values):
        lam = jnp.asarray(samples[WARP_SITE])[:, None]
        w = (jnp.asarray(values, jnp.float64) - data.y_mean) / data.y_std
        return data.y_mean + data.y_std * self.output_warp.inverse(w, lam)


class GP(ExactGP, NoiselessForm, OutputWarping):
    """The baseline surrogate: a GP whose hyperparameters are all sampled by NUTS.

    Sites: ``lengthscale`` [numeric dims], ``cat_lengthscale`` [categorical dims], ``outputscale``,
    ``noise`` (variance, standardized units), ``mean``; with ``warp=True`` also ``warp_a``, ``warp_b``
    [numeric dims], the input warping of zoo.kernels.kumaraswamy_warp ("gp_warp"). With ``saas=True`` the numeric
    lengthscales follow the SAAS prior of Eriksson & Jankowiak (2021) instead (sites ``saas_tau``, ``saas_c`` [numeric
    dims]; ``lengthscale`` deterministic; "gp_saas"), the sparsity prior for spaces where few of many inputs matter.
    With ``output_warp=True`` it scores a Yeo-Johnson warp of y whose power ``yj_lambda`` is sampled too
    (zoo.warping; "gp_yj"); ``output_warp="yeo-johnson-wide"`` lets the power below 0 ("gp_yjw").
    On a conditional space it sees the flat encoding: decisions are categorical columns, inactive columns hold a
    fixed fill value.
    """

    name = "gp"

    #: journals written before the option existed ran without it
    options_added = {"output_warp": False}

    def __init__(self, space: Space, kernel: str = "matern52", noise_prior=(-4.0, 1.0), warp: bool = False,
                 saas: bool = False, output_warp: bool | str = False):
        super().__init__(space)
        if kernel not in STATIONARY:
            raise ValueError(f"kernel must be one of {sorted(STATIONARY)}, got {kernel!r}")
        for flag, value in (("warp", warp), ("saas", saas)):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{flag} must be True or False, got {value!r}")
        self.warp, self.saas, self.output_warp = bool(warp), bool(saas), output_warp_named(output_warp)
        if self.warp or self.saas or self.output_warp is not None:
            self.name = "gp" + "_warp" * self.warp + "_saas" * self.saas + warped_suffix(self.output_warp)
        self.base_kernel = kernel
        self.noise_prior = tuple(noise_prior)
        self.num_idx = np.flatnonzero(space.kinds != CATEGORICAL)
        self.cat_idx = np.flatnonzero(space.kinds == CATEGORICAL)

    def options(self) -> dict:
        return {"kernel": self.base_kernel, "noise_prior": list(self.noise_prior), "warp": self.warp, "saas": self.saas,
                "output_warp": output_warp_option(self.output_warp)}

    def sample_hyperparameters(self) -> dict:
        params = gp_priors(len(self.num_idx), len(self.cat_idx), *self.noise_prior, saas=self.saas)
        if self.warp and len(self.num_idx):  # Snoek et al. (2013) input warping; 004's "BO WARP" baseline
            shape = dist.LogNormal(*WARP_PRIOR).expand([len(self.num_idx)]).to_event(1)
            params["warp_a"] = numpyro.sample("warp_a", shape)
            params["warp_b"] = numpyro.sample("warp_b", shape)
        return params

    def kernel(self, X1, X2, params):
        if "warp_a" in params:
            warp = lambda X: X.at[:, self.num_idx].set(  # noqa: E731
                kumaraswamy_warp(X[:, self.num_idx], params["warp_a"], params["warp_b"]))
            X1, X2 = warp(X1), warp(X2)
        return mixed_kernel(X1, X2, params, num_idx=self.num_idx, cat_idx=self.cat_idx, base=self.base_kernel)

    def kernel_diag(self, X, params):
        return params["outputscale"] * jnp.ones(X.shape[0], X.dtype)

    def arviz_dims(self):
        """Dims and coordinates naming each lengthscale after its parameter."""
        names = np.array(self.space.names)
        dims = {"lengthscale": ["numeric_param"], "cat_lengthscale": ["categorical_param"],
                "warp_a": ["numeric_param"], "warp_b": ["numeric_param"], "saas_c": ["numeric_param"]}
        coords = {"numeric_param": list(names[self.num_idx]), "categorical_param": list(names[self.cat_idx])}
        return dims, coords
