"""Bridge from a Posterior to a batched, jitted acquisition value-and-gradient on encoded rows.

The per-sample quantities (Cholesky solves) are prepared once per BO iteration; the value and
gradient function then takes a fixed-size batch of rows, so it compiles once per data bucket.
"""

from __future__ import annotations

import copy
import functools

import jax
import jax.numpy as jnp
import numpy as np


@functools.lru_cache(maxsize=64)
def compiled_prepare(surrogate):
    """The surrogate's jitted `prepare` (per-sample caches), one per equal surrogate."""
    return jax.jit(surrogate.prepare)


@functools.lru_cache(maxsize=64)
def _value_and_grad(surrogate, acquisition, moments="predict_prepared"):
    predict = getattr(surrogate, moments)

    def total(X, cache, best, t, dim):
        mean, var = predict(cache, X)
        values = acquisition(mean, var, best, t, dim)
        return jnp.sum(values), values

    def vg(cache, X, best, t, dim):
        (_, values), grads = jax.value_and_grad(total, has_aux=True)(X, cache, best, t, dim)
        return values, grads
    return jax.jit(vg)


def evaluate_in_chunks(fn, X, batch: int, counter: int = 0):
    """Apply fn (rows [batch, D] -> (values [batch], grads [batch, D])) to X in fixed-size chunks,
    padding the last one, so the jitted fn sees a single shape; returns values, grads, counter + calls."""
    n = X.shape[0]
    vals, grads = np.empty(n), np.empty_like(X)
    for start in range(0, n, batch):
        chunk = X[start:start + batch]
        m = chunk.shape[0]
        if m < batch:
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], batch - m, axis=0)])
        v, g = fn(chunk)
        vals[start:start + m], grads[start:start + m] = np.asarray(v)[:m], np.asarray(g)[:m]
        counter += 1
    return vals, grads, counter


class AcquisitionFunction:
    """Integrated acquisition of one posterior: call on encoded rows [B, D] -> (values [B], grads [B, D]).

    `moments` names the surrogate method that maps (prepared cache, rows) to per-sample means and
    variances [S, N]; the default is the predictive of f, and a surrogate may offer others (Jenatton's
    path-level `path_predict_prepared`, 001 Eq. 6).
    """

    def __init__(self, posterior, acquisition, best: float, t: int = 1, batch: int = 32,
                 moments: str = "predict_prepared"):
        self.posterior = posterior
        self.surrogate = posterior.surrogate
        self.acquisition = acquisition
        self.t = int(t)
        self.batch = int(batch)
        self.prepared = compiled_prepare(self.surrogate)(posterior.flat_samples(), posterior.data)
        self.moments = moments
        self._vg = _value_and_grad(self.surrogate, acquisition, moments)
        self._args = (np.float64(best), np.float64(t))
        self.n_evals = 0

    def with_moments(self, moments: str) -> "AcquisitionFunction":
        """The same acquisition over another of the surrogate's moment functions (cache shared)."""
        other = copy.copy(self)
        other.moments, other._vg, other.n_evals = moments, _value_and_grad(self.surrogate, self.acquisition, moments), 0
        return other

    def __call__(self, X, dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Values and gradients at rows X [N, D] (evaluated in fixed-size chunks, padded)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        dim = np.float64(X.shape[1] if dim is None else dim)
        vals, grads, self.n_evals = evaluate_in_chunks(
            lambda chunk: self._vg(self.prepared, chunk, *self._args, dim), X, self.batch, self.n_evals)
        return vals, grads

    def values(self, X, dim=None) -> np.ndarray:
        return self(X, dim)[0]
