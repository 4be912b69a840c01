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

The wide form (`output_warp="yeo-johnson-wide"`) lets lambda reach (-1, 2): on the seeded conditional family the
marginal-normality fit sits at -0.7 to -0.5 where Add-Tree's warped draws pressed against lambda = 0, the edge of the
range above. Below 0 the upper branch is bounded (by -1/lambda), so the wide map adds a slope TAIL_SLOPE:

    g_wide(z; lambda) = g(z; lambda) + TAIL_SLOPE z,    log g_wide'(z) = log(g'(z) + TAIL_SLOPE),

a bijection of the real line for every lambda (the warped likelihood stays a density of y and the model can be run
forwards), equal to g up to 1% of its slope where g' >= 1 and taking over only far in the tails (for lambda = -1,
beyond z = 9). Its inverse has no closed form: bisection on the bracket the linear term gives, then one Newton step
that carries the derivative (the implicit function theorem's 1 / g').
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

#: the registered output warps (models take one by name: `output_warp=...`)
YEO_JOHNSON, YEO_JOHNSON_WIDE = "yeo-johnson", "yeo-johnson-wide"

#: the site of the warp's power lambda
WARP_SITE = "yj_lambda"
#: Beta(a, b) of lambda / 2: mean 1 (no warping), 90% of its mass in [0.39, 1.61]
WARP_BETA = (2.0, 2.0)
#: the wide form: lambda = 3 Beta(2, 2) - 1 on (-1, 2), mean 0.5 (half way from the log to the identity), 90% of its
#: mass in [-0.59, 1.59]; and the slope added to keep the map a bijection below lambda = 0
WIDE_RANGE = (-1.0, 2.0)
TAIL_SLOPE = 0.01


def warp_prior(lo: float = 0.0, hi: float = 2.0):
    """lambda ~ lo + (hi - lo) Beta(2, 2), by default on (0, 2). The affine map is given the unit interval as its
    domain so that the support is (lo, hi) and NUTS moves lambda through a bijection onto it (with the default real
    domain the support is the real line: chains wandered below 0, where the Beta density is undefined, and
    calibration failed)."""
    return dist.TransformedDistribution(dist.Beta(*WARP_BETA),
                                        dist.transforms.AffineTransform(lo, hi - lo, domain=constraints.unit_interval))


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


class OutputWarp:
    """A monotone family of maps g(z; lambda) of the standardized values, a bijection of the real line for every
    lambda of its prior's support: the prior, the map, its inverse and log g'. Models hold one (`output_warp`)."""

    name: str
    #: what the warp adds to a model's registered name ("gp" + suffix)
    suffix: str

    def prior(self):
        raise NotImplementedError

    def forward(self, z, lam):
        raise NotImplementedError

    def inverse(self, w, lam):
        raise NotImplementedError

    def log_jacobian(self, z, lam):
        raise NotImplementedError


class YeoJohnson(OutputWarp):
    """Yeo & Johnson's map with lambda in (0, 2) (`warp_prior`), inverted in closed form."""

    name, suffix = YEO_JOHNSON, "_yj"

    def prior(self):
        return warp_prior()

    def forward(self, z, lam):
        return yeo_johnson(z, lam)

    def inverse(self, w, lam):
        return yeo_johnson_inverse(w, lam)

    def log_jacobian(self, z, lam):
        return yeo_johnson_log_jacobian(z, lam)


class WideYeoJohnson(OutputWarp):
    """Yeo & Johnson's map plus TAIL_SLOPE z, lambda in (-1, 2) (the module's docstring says why)."""

    name, suffix = YEO_JOHNSON_WIDE, "_yjw"
    #: bisection steps of the inverse: the bracket is at most |w| / TAIL_SLOPE wide, 2^-100 of it is below rounding
    BISECTIONS = 100

    def prior(self):
        return warp_prior(*WIDE_RANGE)

    def forward(self, z, lam):
        a = jnp.log1p(jnp.abs(z))
        at0 = lam == 0.0  # the upper branch's limit log(1 + z) at lambda = 0 (a safe divisor elsewhere)
        safe = jnp.where(at0, 1.0, lam)
        upper = jnp.where(at0, a, jnp.expm1(safe * a) / safe)
        lower = -jnp.expm1((2.0 - lam) * a) / (2.0 - lam)
        return jnp.where(z >= 0, upper, lower) + TAIL_SLOPE * z

    def log_jacobian(self, z, lam):
        return jnp.logaddexp(yeo_johnson_log_jacobian(z, lam), jnp.log(TAIL_SLOPE))

    def inverse(self, w, lam):
        w, lam = jnp.broadcast_arrays(jnp.asarray(w, jnp.float64), jnp.asarray(lam, jnp.float64))
        w0, lam0 = jax.lax.stop_gradient(w), jax.lax.stop_gradient(lam)
        # g(0) = 0 and the YJ part has z's sign, so |g(z)| >= TAIL_SLOPE |z|: z lies between 0 and w / TAIL_SLOPE
        lo, hi = jnp.minimum(0.0, w0 / TAIL_SLOPE), jnp.maximum(0.0, w0 / TAIL_SLOPE)

        def halve(_, bracket):
            lo, hi = bracket
            mid = 0.5 * (lo + hi)
            above = self.forward(mid, lam0) > w0
            return jnp.where(above, lo, mid), jnp.where(above, mid, hi)

        lo, hi = jax.lax.fori_loop(0, self.BISECTIONS, halve, (lo, hi))
        z = jax.lax.stop_gradient(0.5 * (lo + hi))
        # one Newton step: its value moves z by rounding only, its derivative is the implicit one (1/g' in w)
        return z + (w - self.forward(z, lam)) / jnp.exp(self.log_jacobian(z, lam))


OUTPUT_WARPS = {YEO_JOHNSON: YeoJohnson(), YEO_JOHNSON_WIDE: WideYeoJohnson()}


def output_warp_named(value) -> OutputWarp | None:
    """A model's `output_warp` option as a warp: False for none, True for `yeo-johnson` (the first and, until
    2026-12-07, only form), or a name of OUTPUT_WARPS."""
    if isinstance(value, (bool, np.bool_)):
        return OUTPUT_WARPS[YEO_JOHNSON] if value else None
    if isinstance(value, str) and value in OUTPUT_WARPS:
        return OUTPUT_WARPS[value]
    raise ValueError(f"output_warp must be True, False or one of {sorted(OUTPUT_WARPS)}, got {value!r}")


def output_warp_option(warp: OutputWarp | None):
    """The option that rebuilds `warp` (journals of the first form recorded True, and still do)."""
    return False if warp is None else True if warp.name == YEO_JOHNSON else warp.name


def warped_suffix(warp: OutputWarp | None) -> str:
    """The registered-name suffix of a model with `warp`: "_yj", "_yjw" (wide), "" for none."""
    return "" if warp is None else warp.suffix


def sample_warped_targets(y, mask, warp: OutputWarp):
    """Inside a model: sample lambda, add the change of variables' log-Jacobian of the real rows (Snelson et al.,
    Eq. 5) as a factor, and return g(y; lambda), the values the GP scores."""
    lam = numpyro.sample(WARP_SITE, warp.prior())
    numpyro.factor("yj_log_jacobian", jnp.sum(jnp.where(mask, warp.log_jacobian(y, lam), 0.0)))
    return jnp.where(mask, warp.forward(y, lam), 0.0)
