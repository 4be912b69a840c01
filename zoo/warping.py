"""Output warping inferred with the GP: a Yeo-Johnson map of the standardized values, its power sampled by NUTS.

A warped GP (Snelson, Rasmussen & Ghahramani, NeurIPS 2004, Sec. 2-3) models w = g(y; lambda) as a GP and scores
the observations by the change of variables, log p(y) = log N(g(y) | m, K) + sum_i log g'(y_i) (their Eq. 5). Here g
is the Yeo-Johnson power map (Yeo & Johnson, Biometrika 2000, Eq. 2.1) of the standardized values z:

    g(z; lambda) = ((1 + z)^lambda - 1) / lambda                  for z >= 0,
                 = -((1 - z)^(2 - lambda) - 1) / (2 - lambda)     for z < 0,

with log g'(z) = (lambda - 1) sign(z) log(1 + |z|). lambda = 1 is the identity; lambda < 1 compresses the upper tail
(a few far worse values) and stretches the lower one (the values near the minimum). Where `optim.transforms`
fits lambda once per fit by the marginal normality of y, here it is a site of the model, sampled jointly with the
kernel's hyperparameters, so it is chosen for how well the GP explains the values and each posterior draw carries
its own. lambda lives in (0, 2), where g is a bijection of the real line (outside it one branch is bounded), so
every draw's predictions map back to the user's units (`yeo_johnson_inverse`).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

#: the site of the warp's power lambda
WARP_SITE = "yj_lambda"
#: Beta(a, b) of lambda / 2: mean 1 (no warping), 90% of its mass in [0.39, 1.61]
WARP_BETA = (2.0, 2.0)


def warp_prior():
    """lambda ~ 2 Beta(2, 2) on (0, 2). The affine map is given the unit interval as its domain so that the support
    is (0, 2) and NUTS moves lambda through a bijection onto it (with the default real domain the support is the
    real line: chains wandered below 0, where the Beta density is undefined, and calibration failed)."""
    return dist.TransformedDistribution(dist.Beta(*WARP_BETA),
                                        dist.transforms.AffineTransform(0.0, 2.0, domain=constraints.unit_interval))


def yeo_johnson(z, lam):
    """g(z; lambda) of Yeo & Johnson (2000, Eq. 2.1) for lambda in (0, 2), elementwise; both branches are finite
    everywhere, so the unused one never sends a NaN into a gradient."""
    a = jnp.log1p(jnp.abs(z))
    return jnp.where(z >= 0, jnp.expm1(lam * a) / lam, -jnp.expm1((2.0 - lam) * a) / (2.0 - lam))


def yeo_johnson_inverse(w, lam):
    """z with g(z; lambda) = w, for lambda in (0, 2) (g maps 0 to 0 and keeps the sign)."""
    b = jnp.abs(w)
    return jnp.where(w >= 0, jnp.expm1(jnp.log1p(lam * b) / lam), -jnp.expm1(jnp.log1p((2.0 - lam) * b) / (2.0 - lam)))


def yeo_johnson_log_jacobian(z, lam):
    """log g'(z; lambda) = (lambda - 1) sign(z) log(1 + |z|), elementwise."""
    return (lam - 1.0) * jnp.sign(z) * jnp.log1p(jnp.abs(z))


def sample_warped_targets(y, mask):
    """Inside a model: sample lambda, add the change of variables' log-Jacobian of the real rows (Snelson et al.,
    Eq. 5) as a factor, and return g(y; lambda), the values the GP scores."""
    lam = numpyro.sample(WARP_SITE, warp_prior())
    numpyro.factor("yj_log_jacobian", jnp.sum(jnp.where(mask, yeo_johnson_log_jacobian(y, lam), 0.0)))
    return jnp.where(mask, yeo_johnson(y, lam), 0.0)
