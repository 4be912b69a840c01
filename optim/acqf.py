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


@functools.lru_cache(maxsize=64)
def _values_only(surrogate, acquisition, moments="predict_prepared"):
    predict = getattr(surrogate, moments)

    def values(cache, X, best, t, dim):
        mean, var = predict(cache, X)
        return acquisition(mean, var, best, t, dim)
    return jax.jit(values)


@functools.lru_cache(maxsize=64)
def _coordinate_values(surrogate, acquisition):
    def values(cache, x, column, candidates, trees, valid, best, t, dim):
        mean, var = surrogate.coordinate_moments(cache, x, column, candidates, trees, valid)
        return acquisition(mean, var, best, t, dim)
    return jax.jit(values)


def padded_chunks(X, batch: int):
    """(start, rows used, chunk) over X in fixed-size chunks, the last padded by repeating its final row,
    so that a jitted function sees a single shape."""
    for start in range(0, X.shape[0], batch):
        chunk = X[start:start + batch]
        m = chunk.shape[0]
        if m < batch:
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], batch - m, axis=0)])
        yield start, m, chunk


def evaluate_in_chunks(fn, X, batch: int, counter: int = 0):
    """Apply fn (rows [batch, D] -> (values [batch], grads [batch, D])) to X in padded fixed-size chunks;
    returns values, grads, counter + calls."""
    vals, grads = np.empty(X.shape[0]), np.empty_like(X)
    for start, m, chunk in padded_chunks(X, batch):
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

    def coordinate_scores(self, x, column: int, candidates, trees, size: tuple[int, int] | None = None) -> np.ndarray:
        """Values at row x with `column` set to each of `candidates` [K], through the surrogate's
        `coordinate_moments` (only the posterior trees `trees` that split on that column are re-routed).
        `size` = (K, P) pads candidates and trees to fixed lengths so one compiled shape serves all columns."""
        candidates = np.asarray(candidates, dtype=np.float64)
        trees = np.asarray(trees, dtype=np.int32)
        k, p = size if size is not None else (len(candidates), max(len(trees), 1))
        padded = np.concatenate([candidates, np.repeat(candidates[-1:], k - len(candidates))])
        valid = np.arange(p) < len(trees)
        tree_idx = np.concatenate([trees, np.zeros(p - len(trees), np.int32)])
        fn = _coordinate_values(self.surrogate, self.acquisition)
        out = fn(self.prepared, np.asarray(x, dtype=np.float64), np.int32(column), padded, tree_idx, valid,
                 *self._args, np.float64(len(x)))
        self.n_evals += 1
        return np.asarray(out)[: len(candidates)]

    def scores(self, X, batch: int = 1024) -> np.ndarray:
        """Values only (no gradients) in large fixed-size chunks: for optimizers that just compare many
        points (Sobol pools, BARK's leaf-interval search), where the acquisition is piecewise constant."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        fn = _values_only(self.surrogate, self.acquisition, self.moments)
        dim = np.float64(X.shape[1])
        out = np.empty(X.shape[0])
        for start, m, chunk in padded_chunks(X, batch):
            out[start:start + m] = np.asarray(fn(self.prepared, chunk, *self._args, dim))[:m]
            self.n_evals += 1
        return out
