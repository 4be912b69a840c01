"""Bridge from a Posterior to a batched, jitted acquisition value-and-gradient on encoded rows.

The per-sample quantities (Cholesky solves) are prepared once per BO iteration; the value and
gradient function then takes a fixed-size batch of rows, so it compiles once per data bucket.
"""

from __future__ import annotations

import copy
import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from optim.acquisition import ImprovementMargin
from zoo.base import CoordinateMoments, OutputWarping, PathLocalPredictions, PathPredictions, offers, prepare_samples
from zoo.compiled import compiled

#: the per-sample moments an acquisition can integrate: the latent f (every surrogate) or the path-level
#: value of `zoo.base.PathPredictions` (Jenatton et al.'s two-step search, 001 Eq. 6)
MOMENTS = ("latent", "path")
#: the latent f again, computed by `zoo.base.PathLocalPredictions.predict_on_path` for rows on one path
ON_PATH = "latent_on_path"


def moments_fn(surrogate, moments: str):
    """The surrogate's declared method as (prepared, rows, path index) -> per-sample means and variances [S, N];
    the path index is read only by ON_PATH moments."""
    if moments == "latent":
        return lambda prepared, X, path: surrogate.predict_prepared(prepared, X)
    if moments == "path":
        if not offers(surrogate, PathPredictions):
            raise ValueError(f"path-level moments need zoo.base.PathPredictions; {surrogate.name!r} does not offer it")
        return lambda prepared, X, path: surrogate.path_predict_prepared(prepared, X)
    if moments == ON_PATH:
        if not offers(surrogate, PathLocalPredictions):
            raise ValueError(f"path-local moments need zoo.base.PathLocalPredictions; {surrogate.name!r} does not "
                             "offer it")
        return surrogate.predict_on_path
    raise ValueError(f"moments must be one of {MOMENTS + (ON_PATH,)}, got {moments!r}")


def compiled_prepare(surrogate):
    """The surrogate's jitted `prepare` (per-sample arrays; per-sample y too, see zoo.base.prepare_samples), one per
    equal surrogate."""
    return compiled("prepare", lambda s: jax.jit(functools.partial(prepare_samples, s)), surrogate)


def _build_value_and_grad(surrogate, acquisition, moments):
    predict = moments_fn(surrogate, moments)

    def total(X, prepared, best, t, dim, path):
        mean, var = predict(prepared, X, path)
        values = acquisition(mean, var, best, t, dim)
        return jnp.sum(values), values

    def vg(prepared, X, best, t, dim, path):
        (_, values), grads = jax.value_and_grad(total, has_aux=True)(X, prepared, best, t, dim, path)
        return values, grads
    return jax.jit(vg)


def _build_values_only(surrogate, acquisition, moments):
    predict = moments_fn(surrogate, moments)

    def values(prepared, X, best, t, dim, path):
        mean, var = predict(prepared, X, path)
        return acquisition(mean, var, best, t, dim)
    return jax.jit(values)


def _build_coordinate_values(surrogate, acquisition):
    def values(prepared, x, column, candidates, trees, valid, best, t, dim):
        mean, var = surrogate.coordinate_moments(prepared, x, column, candidates, trees, valid)
        return acquisition(mean, var, best, t, dim)
    return jax.jit(values)


#: rows per call of the compiled value-and-gradient: the default optimizer's 16 L-BFGS-B starts
#: (`LBFGSConfig.n_restarts`) in one call, unpadded. A call's cost grows with its padded rows (about 3.7 ms at
#: 16 rows against 5.8 ms at 32 for Add-Tree on a 13-vertex space, 1.2 against 1.9 ms for the GP), and most
#: calls are L-BFGS-B iterations, so 32 made every iteration pay for 16 rows of padding.
ACQ_BATCH = 16


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


def formula(acquisition):
    """The acquisition as its compiled code sees it: EI's and PI's margin xi lowers the incumbent before the call
    (ImprovementMargin.threshold), so acquisitions that differ only in xi share one compilation."""
    return dataclasses.replace(acquisition, xi=0.0) if isinstance(acquisition, ImprovementMargin) else acquisition


class AcquisitionFunction:
    """Integrated acquisition of one posterior: call on encoded rows [B, D] -> (values [B], grads [B, D]).

    `moments` (one of MOMENTS) says which per-sample means and variances [S, N] are integrated: the
    latent f by default, or the path-level value of a surrogate that offers `zoo.base.PathPredictions`.
    Optimizers read `surrogate`, `acquisition`, `t`, `prepared` (to hand back to the surrogate's declared
    methods, never to index into) and `incumbent`, and call the instance. `best` is the incumbent value, one
    number or one per posterior sample ([S], as optim.batch's ``qei`` gives: each draw improves on its own), in
    the user's units; a surrogate that offers `zoo.base.OutputWarping` gets it on each draw's own scale.
    """

    def __init__(self, posterior, acquisition, best, t: int = 1, batch: int = ACQ_BATCH,
                 moments: str = "latent"):
        self.posterior = posterior
        self.surrogate = posterior.surrogate
        self.acquisition = acquisition
        self.t = int(t)
        self.batch = int(batch)
        self.prepared = compiled_prepare(self.surrogate)(posterior.flat_samples(), posterior.data)
        self.moments = moments
        self._formula = formula(acquisition)
        self._vg = compiled("acq_value_and_grad", _build_value_and_grad, self.surrogate, self._formula, moments)
        best = np.asarray(best, dtype=np.float64)
        if best.ndim == 1:  # one incumbent per posterior sample (optim.batch's "qei"): [S, 1] against [S, N] moments
            if best.shape[0] != self.posterior.num_chains * self.posterior.num_samples:
                raise ValueError(f"per-sample incumbents need one value per posterior sample, got {best.shape[0]}")
            best = best[:, None]
        elif best.ndim != 0:
            raise ValueError(f"best must be a number or one per posterior sample, got shape {best.shape}")
        if offers(self.surrogate, OutputWarping):  # each draw predicts on its own warp of y: so must its incumbent
            best = np.asarray(self.surrogate.to_model_scale(posterior.flat_samples(), posterior.data,
                                                            best if best.ndim else best[None]), dtype=np.float64)
        if isinstance(acquisition, ImprovementMargin):  # EI/PI's margin, in the data's standard deviations
            best = acquisition.threshold(best, float(posterior.data.y_std))
        self._args = (best, np.float64(t))
        self.n_evals = 0
        self.failed_samples = 0  # posterior samples whose predictions failed, replaced by others (see __call__)
        self._checked_failures = False

    @property
    def incumbent(self) -> np.ndarray:
        """The encoded row [D] of the posterior's data with the lowest y (a fantasy where pending points are)."""
        return np.asarray(self.posterior.X)[int(np.argmin(self.posterior.y))]

    def with_moments(self, moments: str) -> "AcquisitionFunction":
        """The same acquisition over another of the surrogate's moment functions (cache shared)."""
        other = copy.copy(self)
        other.moments, other.n_evals = moments, 0
        other._vg = compiled("acq_value_and_grad", _build_value_and_grad, self.surrogate, self._formula, moments)
        return other

    def __call__(self, X, dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Values and gradients at rows X [N, D] (evaluated in fixed-size chunks, padded)."""
        return self._call(X, dim, None)

    def on_path(self, path: int):
        """This acquisition for rows that all lie on `space.paths[path]`: the same values, computed from the
        surrogate's path's own terms where it offers `zoo.base.PathLocalPredictions` (Add-Tree: a few vertices
        instead of all), else this acquisition itself."""
        if self.moments == "latent" and offers(self.surrogate, PathLocalPredictions):
            return OnPath(self, int(path))
        return self

    def _call(self, X, dim, path):
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        dim = np.float64(X.shape[1] if dim is None else dim)
        vals, grads = self._repaired(X, lambda: self._evaluate(X, dim, path))
        bad = ~np.isfinite(vals)
        if np.any(bad):  # no gradient to follow from a row that ranks last
            grads = np.where(bad[:, None], 0.0, grads)
        return _last_if_not_finite(vals), grads

    def _repaired(self, rows, evaluate):
        """`evaluate()` (a tuple whose first item is the values at `rows`), run again once after failed
        posterior samples are replaced if a value is not finite (see `_replace_failed_samples`)."""
        out = evaluate()
        bad = ~np.isfinite(out[0])
        if np.any(bad) and not self._checked_failures:
            self._checked_failures = True
            if self._replace_failed_samples(rows[bad]):
                out = evaluate()
        return out

    def _evaluate(self, X, dim, path=None):
        if path is None:
            fn, path = self._vg, np.int32(0)
        else:
            fn, path = compiled("acq_value_and_grad", _build_value_and_grad, self.surrogate, self._formula,
                                ON_PATH), np.int32(path)
        vals, grads, self.n_evals = evaluate_in_chunks(
            lambda chunk: fn(self.prepared, chunk, *self._args, dim, path), X, self.batch, self.n_evals)
        return vals, grads

    def _replace_failed_samples(self, rows) -> bool:
        """A posterior sample whose factorization failed (a kernel matrix that rounding made indefinite, as
        a near-noiseless fit with a lengthscale of 1e-5 did) predicts NaN everywhere and so makes the
        sample average NaN everywhere. Find such samples from their predictions at `rows`, give each the
        draw of a sample that predicts, and re-prepare: the average then runs over the working samples
        (some counted twice). False if no sample failed or all did."""
        _, _, probe = next(padded_chunks(rows[: self.batch], self.batch))  # one compiled shape
        mean, var = self.posterior.predict(probe)
        failed = ~np.all(np.isfinite(mean) & np.isfinite(var), axis=1)
        if not failed.any() or failed.all():
            return False
        working = np.flatnonzero(~failed)
        take = np.arange(len(failed))
        take[failed] = working[np.arange(failed.sum()) % len(working)]
        samples = {name: np.asarray(v)[take] for name, v in self.posterior.flat_samples().items()}
        data = self.posterior.data
        if np.ndim(data.y) == 2:  # per-draw targets travel with their draw
            data = data._replace(y=np.asarray(data.y)[take])
        if np.ndim(self._args[0]) == 2:  # and so do per-draw incumbents
            self._args = (self._args[0][take], self._args[1])
        self.prepared = compiled_prepare(self.surrogate)(samples, data)
        self.failed_samples = int(failed.sum())
        return True

    def values(self, X, dim=None) -> np.ndarray:
        return self(X, dim)[0]

    def coordinate_scores(self, x, column: int, candidates, trees, size: tuple[int, int] | None = None) -> np.ndarray:
        """Values at row x with `column` set to each of `candidates` [K], through the surrogate's
        `coordinate_moments` (zoo.base.CoordinateMoments: only the posterior trees `trees` that split on that
        column are re-routed). `size` = (K, P) pads candidates and trees to fixed lengths so one compiled
        shape serves all columns."""
        if not offers(self.surrogate, CoordinateMoments):
            raise ValueError(f"coordinate scores need zoo.base.CoordinateMoments; {self.surrogate.name!r} does not "
                             "offer it")
        candidates = np.asarray(candidates, dtype=np.float64)
        trees = np.asarray(trees, dtype=np.int32)
        k, p = size if size is not None else (len(candidates), max(len(trees), 1))
        padded = np.concatenate([candidates, np.repeat(candidates[-1:], k - len(candidates))])
        valid = np.arange(p) < len(trees)
        tree_idx = np.concatenate([trees, np.zeros(p - len(trees), np.int32)])
        fn = compiled("acq_coordinates", _build_coordinate_values, self.surrogate, self._formula)
        x = np.asarray(x, dtype=np.float64)

        def evaluate():
            self.n_evals += 1
            return (np.asarray(fn(self.prepared, x, np.int32(column), padded, tree_idx, valid, *self._args,
                                  np.float64(len(x))))[: len(candidates)],)
        rows = np.repeat(x[None, :], len(candidates), axis=0)
        rows[:, column] = candidates
        return _last_if_not_finite(self._repaired(rows, evaluate)[0])

    def scores(self, X, batch: int = 1024, dim: int | None = None, path: int | None = None) -> np.ndarray:
        """Values only (no gradients) in large fixed-size chunks: for optimizers that just compare many
        points (Sobol pools, path screening, BARK's leaf-interval search). `dim` is the dimension the
        acquisition is told (UCB's beta), the row width by default; `path`: every row lies on that path
        (see `on_path`)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        fn = compiled("acq_values", _build_values_only, self.surrogate, self._formula,
                      self.moments if path is None else ON_PATH)
        dim = np.float64(X.shape[1] if dim is None else dim)
        path = np.int32(0 if path is None else path)

        def evaluate():
            out = np.empty(X.shape[0])
            for start, m, chunk in padded_chunks(X, batch):
                out[start:start + m] = np.asarray(fn(self.prepared, chunk, *self._args, dim, path))[:m]
                self.n_evals += 1
            return (out,)
        return _last_if_not_finite(self._repaired(X, evaluate)[0])


def _last_if_not_finite(values: np.ndarray) -> np.ndarray:
    """A value that is still not finite becomes -inf, so that it ranks last in every optimizer (never first,
    as NaN does in argmax and max)."""
    return np.where(np.isfinite(values), values, -np.inf)


class OnPath:
    """`AcquisitionFunction.on_path`: the parent's acquisition at rows that all lie on one path, computed from
    that path's terms. Shares the parent's prepared arrays, evaluation count and repair of failed samples."""

    def __init__(self, parent: AcquisitionFunction, path: int):
        self.parent, self.path = parent, path
        self.surrogate, self.acquisition, self.t = parent.surrogate, parent.acquisition, parent.t

    def __call__(self, X, dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        return self.parent._call(X, dim, self.path)

    def values(self, X, dim=None) -> np.ndarray:
        return self(X, dim)[0]

    def scores(self, X, batch: int = 1024, dim: int | None = None) -> np.ndarray:
        return self.parent.scores(X, batch, dim, path=self.path)


def on_path(acqf, path: int):
    """`acqf.on_path(path)` for an AcquisitionFunction; any other acquisition callable unchanged."""
    return acqf.on_path(path) if isinstance(acqf, AcquisitionFunction) else acqf
