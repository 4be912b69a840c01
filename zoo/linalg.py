"""GP algebra on padded data: jittered Cholesky, Gaussian log-density through the factor, posteriors.

Padding: rows beyond the data are masked. A padded row gets covariance 1/(2 pi) on the diagonal and
zero elsewhere, and target 0, so its Gaussian log-density term is exactly zero: the padded
likelihood equals the unpadded one, and a growing BO run compiles once per size bucket.
"""

import math

import jax.numpy as jnp
from jax.scipy.linalg import cho_solve, solve_triangular

JITTER = 1e-8
NOISE_FLOOR = 1e-6  # added to every model's sampled noise variance (standardized units) for stability
PAD_VARIANCE = 1.0 / (2.0 * math.pi)  # N(0 | 0, 1/(2 pi)) has log-density exactly 0
LOG_2PI = math.log(2.0 * math.pi)


def pad_covariance(K, mask):
    """Replace masked rows/columns of K by the zero-log-density padding block."""
    keep = mask[:, None] & mask[None, :]
    return jnp.where(keep, K, 0.0) + jnp.diag(jnp.where(mask, 0.0, PAD_VARIANCE))


def noisy_covariance(K, noise, mask):
    """The one noise policy of the zoo: padded K + (noise + NOISE_FLOOR) I + JITTER I, the covariance of
    standardized y given a noise-free kernel matrix K and a sampled noise variance."""
    eye = jnp.eye(K.shape[-1], dtype=K.dtype)
    return pad_covariance(K + (noise + NOISE_FLOOR) * eye + JITTER * eye, mask)


def observation_cholesky(K, noise, mask):
    """Cholesky factor of `noisy_covariance(K, noise, mask)`."""
    return jnp.linalg.cholesky(noisy_covariance(K, noise, mask))


def user_loglik(data, loc, L, loo=False):
    """Pointwise log-likelihood [n_pad] of the standardized data in the user's units: the chain-rule
    terms of N(y | loc, L L^T) (or, with `loo`, its leave-one-out terms) plus the Jacobian -log(y_std)
    of the standardization (0 on padding)."""
    terms = loo_loglik(data.y, loc, L) if loo else chain_rule_loglik(data.y, loc, L)
    return terms - jnp.log(data.y_std) * data.mask


def to_user_units(data, mean, var):
    """Standardized latent mean and variance -> the user's units."""
    return data.y_mean + data.y_std * mean, data.y_std**2 * var


def to_user_scale(data, mean, var):
    """Standardized mean and variance of a zero-mean component -> the user's scale (no shift)."""
    return data.y_std * mean, data.y_std**2 * var


def cholesky(K, jitter=JITTER):
    """Lower Cholesky factor of K + jitter * I."""
    return jnp.linalg.cholesky(K + jitter * jnp.eye(K.shape[-1], dtype=K.dtype))


def padded_cholesky(K, mask, jitter=JITTER):
    """Cholesky factor of (K + jitter I) on real rows and the exact zero-density block on padded rows."""
    K = K + jitter * jnp.eye(K.shape[-1], dtype=K.dtype)
    return jnp.linalg.cholesky(pad_covariance(K, mask))


def chain_rule_loglik(y, loc, L):
    """Pointwise terms log p(y_i | y_<i) of N(y | loc, L L^T); they sum to the joint log-density."""
    z = solve_triangular(L, y - loc, lower=True)
    return -0.5 * z**2 - jnp.log(jnp.diagonal(L)) - 0.5 * LOG_2PI


def loo_loglik(y, loc, L):
    """Pointwise leave-one-out terms log p(y_i | y_-i) of N(y | loc, L L^T) (R&W 2006, Eq. 5.10-5.12):
    with alpha = K^-1 (y - loc), y_i | y_-i ~ N(y_i - alpha_i / [K^-1]_ii, 1 / [K^-1]_ii). These are the
    terms PSIS-LOO needs for a Gaussian model whose observations are not independent given theta
    (Burkner, Gabry & Vehtari 2021); a padded row (variance 1/(2 pi), target 0) contributes 0."""
    alpha, Kinv = precision_terms(L, y - loc)
    kinv_diag = jnp.diagonal(Kinv)
    return -0.5 * LOG_2PI + 0.5 * jnp.log(kinv_diag) - 0.5 * alpha**2 / kinv_diag


def gaussian_logpdf(y, loc, L):
    """log N(y | loc, L L^T) through the Cholesky factor."""
    return jnp.sum(chain_rule_loglik(y, loc, L))


def precision_terms(L, resid):
    """alpha = K^-1 resid and K^-1 from the Cholesky factor (cached once per posterior sample)."""
    alpha = cho_solve((L, True), resid)
    Kinv = cho_solve((L, True), jnp.eye(L.shape[-1], dtype=L.dtype))
    return alpha, Kinv


def latent_posterior(alpha, Kinv, Kxq, kqq_diag):
    """Posterior mean and variance of the latent function at query points (R&W 2006, Eq. 2.25-2.26)."""
    mean = Kxq.T @ alpha
    var = kqq_diag - jnp.sum(Kxq * (Kinv @ Kxq), axis=0)
    return mean, jnp.maximum(var, 1e-12 * kqq_diag)
