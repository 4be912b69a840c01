"""Posterior samples of a surrogate: predictions, warm starts, and conversion to ArviZ InferenceData."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import numpy as np

from zoo.base import Surrogate
from zoo.compiled import compiled
from zoo.data import Data


class WarmStart(NamedTuple):
    """Per-chain state that lets the next run continue where this one stopped."""

    z: dict  # unconstrained continuous sites [C, ...]
    discrete: dict  # discrete sites [C, ...]
    step_size: Any  # [C]
    inverse_mass_matrix: Any  # [C, dim] (diagonal)


def _log_likelihood_fn(surrogate):
    return compiled("log_likelihood", lambda s: jax.jit(jax.vmap(s.log_likelihood, in_axes=(0, None))), surrogate)


def _predict_fn(surrogate):
    return compiled("predict", lambda s: jax.jit(s.predict), surrogate)


@dataclass
class Posterior:
    """Draws [chain, draw, ...] of every site (continuous constrained, and discrete), with statistics."""

    surrogate: Surrogate
    data: Data  # padded, standardized (what the model saw)
    X: np.ndarray  # [n, D] encoded inputs, unpadded
    y: np.ndarray  # [n] observations, user units
    samples: dict
    stats: dict  # lp, energy, step_size, diverging, acceptance_rate, n_steps: [C, S]
    move_stats: dict  # per discrete site acceptance indicators averaged over the thinning block
    last_state: WarmStart
    seconds: float = 0.0
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def num_chains(self) -> int:
        return int(self.stats["lp"].shape[0])

    @property
    def num_samples(self) -> int:
        return int(self.stats["lp"].shape[1])

    def flat_samples(self) -> dict:
        """Every site with chains and draws merged: [C * S, ...]."""
        return {k: v.reshape((-1,) + v.shape[2:]) for k, v in self.samples.items()}

    def predict(self, Xq) -> tuple[np.ndarray, np.ndarray]:
        """Latent mean and variance per posterior sample, [C*S, N], at encoded rows Xq (user units)."""
        Xq = np.atleast_2d(np.asarray(Xq, dtype=np.float64))
        mean, var = _predict_fn(self.surrogate)(self.flat_samples(), self.data, Xq)
        return np.asarray(mean), np.asarray(var)

    def conditioned_on(self, X, y) -> "Posterior":
        """The same draws with the data replaced by (X, y): predictions then condition on every point, but
        the hyperparameters and structure are still those drawn given the earlier data (and its
        standardization). What a BO loop uses between MCMC refits (`SamplerSettings.refit_every`)."""
        from zoo.data import bucket_size, make_data

        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        data = make_data(X, y, size=bucket_size(X.shape[0], steps=self.surrogate.bucket_steps),
                         fill_row=self.surrogate.space.fill_row())
        return Posterior(self.surrogate, data, X, y, self.samples, self.stats, self.move_stats, self.last_state)

    def log_likelihood(self) -> np.ndarray:
        """Pointwise log p(y_i | y_<i, theta) per sample, [C, S, n]; sums to the joint log-likelihood."""
        if "loglik" not in self._cache:
            ll = _log_likelihood_fn(self.surrogate)(self.flat_samples(), self.data)
            ll = np.asarray(ll)[:, : len(self.y)]
            self._cache["loglik"] = ll.reshape(self.num_chains, self.num_samples, -1)
        return self._cache["loglik"]

    def to_arviz(self):
        """ArviZ InferenceData: posterior, sample_stats, log_likelihood, observed_data, constant_data.

        Dims are named after the space (e.g. ``lengthscale`` has dim ``numeric_param`` with the
        parameter names as coordinates); padding rows never appear.
        """
        import arviz as az

        dims, coords = self.surrogate.arviz_dims()
        posterior = {k: v for k, v in self.samples.items() if k not in self.surrogate.discrete_sites}
        posterior.update(self.surrogate.summarize_discrete(self.samples))
        stats = dict(self.stats)
        stats["diverging"] = stats["diverging"].astype(bool)
        stats.update(self.surrogate.summarize_moves(self.move_stats))
        n = len(self.y)
        coords = {**coords, "obs": np.arange(n), "column": list(self.surrogate.space.names)}
        dims = {**dims, "y": ["obs"], "X": ["obs", "column"]}
        log_lik = {}
        try:
            log_lik = {"y": self.log_likelihood()}
        except NotImplementedError:
            pass
        return az.from_dict(
            posterior=posterior, sample_stats=stats, log_likelihood=log_lik or None,
            observed_data={"y": self.y}, constant_data={"X": self.X}, coords=coords, dims=dims)
