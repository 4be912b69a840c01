"""Integrated acquisition functions for minimization, averaged over posterior samples.

Each acquisition takes per-sample latent means and variances ``[S, N]`` and the incumbent ``best`` (a number,
or ``[S, 1]``: one per sample, as per-draw fantasies give) and returns ``[N]`` values to *maximize*. Integration over hyperparameter/structure samples follows the fully Bayesian
treatment (Snoek et al., 2012): EI, PI and UCB average the per-sample values; log-EI is the log of
the averaged EI, computed with a log-sum-exp so it stays finite far into the tails (Ament et al.,
2023, "Unexpected Improvements to Expected Improvement").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax.numpy as jnp
from jax.scipy.special import logsumexp, log_ndtr, ndtr

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _log_h(z):
    """log(phi(z) + z Phi(z)) accurate for all z (h is EI of a standard normal at threshold z).

    z > -1: direct. -40 < z <= -1: log phi(z) + log1p(-|z| Phi(z)/phi(z)) with Phi/phi from
    log_ndtr. z <= -40: the Mills-ratio series 1 - |z| R(z) = 1/z^2 - 3/z^4 + 15/z^6 - 105/z^8 + ...
    """
    -0.5 * z**2 - _LOG_SQRT_2PI
    z_hi = jnp.where(z > -1.0, z, 0.0)
    direct = jnp.log(jnp.exp(-0.5 * z_hi**2 - _LOG_SQRT_2PI) + z_hi * ndtr(z_hi))
    z_mid = jnp.where((z <= -1.0) & (z > -40.0), z, -2.0)
    ratio = jnp.exp(log_ndtr(z_mid) - (-0.5 * z_mid**2 - _LOG_SQRT_2PI))
    mid = -0.5 * z_mid**2 - _LOG_SQRT_2PI + jnp.log1p(z_mid * ratio)
    z_lo = jnp.where(z <= -40.0, z, -50.0)
    w = 1.0 / z_lo**2
    series = w * (1.0 - 3.0 * w + 15.0 * w**2 - 105.0 * w**3 + 945.0 * w**4)
    tail = -0.5 * z_lo**2 - _LOG_SQRT_2PI + jnp.log(series)
    mid_or_tail = jnp.where(z > -40.0, mid, tail)
    return jnp.where(z > -1.0, direct, mid_or_tail)


def _std(var):
    return jnp.sqrt(jnp.maximum(var, 1e-30))


@dataclass(frozen=True)
class ImprovementMargin:
    """Counts improvement only beyond a margin ``xi`` below the incumbent, ``xi`` in standard deviations of
    the observed y (the xi of EI and PI in Lizotte's 2008 thesis, "Practical Bayesian Optimization", and in
    Jones 2001). With xi = 0, EI on an exact objective can keep buying tiny, near-certain gains beside
    the incumbent while a larger, less certain one elsewhere scores lower; xi > 0 discounts such gains."""

    xi: float = 0.0

    def __post_init__(self):
        if not (isinstance(self.xi, (int, float)) and math.isfinite(self.xi) and self.xi >= 0):
            raise ValueError(f"xi must be a finite number >= 0, got {self.xi!r}")

    def threshold(self, best: float, y_scale: float) -> float:
        """The value a point must beat: the incumbent `best` less xi * `y_scale` (y's standard deviation)."""
        return best - self.xi * y_scale


@dataclass(frozen=True)
class LogEI(ImprovementMargin):
    """log of the sample-averaged expected improvement below the incumbent `best`."""

    name: str = "logei"

    def __call__(self, mean, var, best, t=1, dim=1):
        sigma = _std(var)
        z = (best - mean) / sigma
        per_sample = jnp.log(sigma) + _log_h(z)
        return logsumexp(per_sample, axis=0) - jnp.log(mean.shape[0])


@dataclass(frozen=True)
class EI(ImprovementMargin):
    """Sample-averaged expected improvement E[max(best - f, 0)]."""

    name: str = "ei"

    def __call__(self, mean, var, best, t=1, dim=1):
        sigma = _std(var)
        z = (best - mean) / sigma
        return jnp.mean(sigma * jnp.exp(_log_h(z)), axis=0)


@dataclass(frozen=True)
class PI(ImprovementMargin):
    """Sample-averaged probability of improvement P(f < best)."""

    name: str = "pi"

    def __call__(self, mean, var, best, t=1, dim=1):
        return jnp.mean(ndtr((best - mean) / _std(var)), axis=0)


@dataclass(frozen=True)
class UCB:
    """Sample-averaged lower confidence bound, negated to maximize: -mean + sqrt(beta) * std.

    beta=None uses beta_t = 0.2 d log(2t) (Kandasamy et al., 2015; as in 000 Section 4.2),
    with d the dimension being optimized and t the BO iteration.
    """

    beta: float | None = None
    name: str = "ucb"

    def __post_init__(self):
        if self.beta is not None and not (isinstance(self.beta, (int, float)) and math.isfinite(self.beta)
                                          and self.beta >= 0):
            raise ValueError(f"beta must be None or a finite number >= 0, got {self.beta!r}")

    def beta_t(self, t, dim):
        """The exploration weight; t and dim may be traced scalars (no recompilation per iteration)."""
        return self.beta if self.beta is not None else 0.2 * dim * jnp.log(2.0 * jnp.maximum(t, 1.0))

    def __call__(self, mean, var, best, t=1, dim=1):
        return jnp.mean(-mean + jnp.sqrt(self.beta_t(t, dim)) * _std(var), axis=0)


ACQUISITIONS = {"logei": LogEI, "ei": EI, "pi": PI, "ucb": UCB}


def get_acquisition(acq):
    """An acquisition object from a name ('logei', 'ei', 'pi', 'ucb'), a name with its option
    ('logei,xi=0.01', 'ucb,beta=2'), or pass an instance through."""
    if isinstance(acq, str):
        name, *options = acq.lower().split(",")
        if name not in ACQUISITIONS:
            raise ValueError(f"unknown acquisition {acq!r}; choose from {sorted(ACQUISITIONS)}")
        cls = ACQUISITIONS[name]
        allowed = "xi" if issubclass(cls, ImprovementMargin) else "beta"
        kwargs = {}
        for option in options:
            key, eq, value = option.partition("=")
            try:
                if key.strip() != allowed or not eq:
                    raise ValueError
                kwargs[allowed] = float(value)
            except ValueError:
                raise ValueError(f"bad option {option!r} in acquisition {acq!r}; {name!r} takes "
                                 f"'{name},{allowed}=<number>'") from None
        return cls(**kwargs)
    if not callable(acq):
        raise TypeError(f"acquisition must be a name or a callable, got {acq!r}")
    return acq
