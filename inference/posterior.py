"""Posterior samples of a surrogate: predictions, warm starts, pointwise log-likelihoods, conversion to ArviZ."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

import jax
import numpy as np

from inference.arviz_io import from_groups
from zoo.base import Surrogate
from zoo.compiled import compiled
from zoo.data import Data


class WarmStart(NamedTuple):
    """Per-chain state that lets the next run continue where this one stopped."""

    z: dict  # unconstrained continuous sites [C, ...]
    discrete: dict  # discrete sites [C, ...]
    step_size: Any  # [C]
    inverse_mass_matrix: Any  # [C, dim] (diagonal)


def _log_likelihood_fn(surrogate, loo: bool):
    def build(s):
        return jax.jit(jax.vmap(functools.partial(s.log_likelihood, loo=loo), in_axes=(0, None)))
    return compiled("log_likelihood_loo" if loo else "log_likelihood", build, surrogate)


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

    def frozen_chains(self) -> np.ndarray:
        """Boolean [C]: the chains whose kept draws all have one log density, i.e. chains that never moved
        (a warm start whose step size cannot leave a spot the new data made too narrow). A healthy chain of
        more than one draw is never frozen; the BO loop refits such a posterior from a cold start."""
        lp = np.asarray(self.stats["lp"])
        return np.all(lp == lp[:, :1], axis=1) & (lp.shape[1] > 1)

    def flat_samples(self) -> dict:
        """Every site with chains and draws merged: [C * S, ...]."""
        # the leading size spelled out: a site with no entries (a zero-length vector) has no -1 to infer
        return {k: v.reshape((v.shape[0] * v.shape[1],) + v.shape[2:]) for k, v in self.samples.items()}

    def predict(self, Xq) -> tuple[np.ndarray, np.ndarray]:
        """Latent mean and variance per posterior sample, [C*S, N], at encoded rows Xq (user units; for a surrogate
        that offers zoo.base.OutputWarping, each draw's warped scale, which its `from_model_scale` maps back)."""
        Xq = np.atleast_2d(np.asarray(Xq, dtype=np.float64))
        mean, var = self.surrogate.predict(self.flat_samples(), self.data, Xq)  # compiled
        return np.asarray(mean), np.asarray(var)

    def conditioned_on(self, X, y, keep_scale: bool = False) -> "Posterior":
        """The same draws with the data replaced by (X, y): predictions then condition on every point, but
        the hyperparameters and structure are still those drawn given the earlier data. What a BO loop uses
        between MCMC refits (`SamplerSettings.refit_every`, `refit_growth`).

        `y` is [n], or [C*S, n] with one row per draw (in `flat_samples` order): each draw then conditions on its
        own values, as per-draw fantasies at pending points do (optim.batch's ``qei``). The posterior's `y` is then
        the mean over draws (what `AcquisitionFunction.incumbent` reads), its `data.y` the standardized rows.

        `keep_scale`: standardize (X, y) by this posterior's own y_mean and y_std, the scale its draws were fitted
        on, so that each draw's amplitude and noise keep their size in the user's units and the result is that
        draw's exact GP posterior given the new rows. Without it the new rows are standardized afresh, as a refit
        would. The BO loop keeps the scale for pending points, and between refits when its output transform is a
        fixed map (optim.transforms.FIXED_TRANSFORMS)."""
        from zoo.data import bucket_size, make_data

        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if y.ndim == 2 and y.shape[0] != self.num_chains * self.num_samples:
            raise ValueError(f"per-draw y needs one row per draw ({self.num_chains * self.num_samples}), "
                             f"got {y.shape[0]}")
        y = y if y.ndim == 2 else y.reshape(-1)
        data = make_data(X, y, size=bucket_size(X.shape[0], steps=self.surrogate.bucket_steps),
                         fill_row=self.surrogate.space.fill_row(),
                         scale=(self.data.y_mean, self.data.y_std) if keep_scale else None)
        return Posterior(self.surrogate, data, X, y.mean(axis=0) if y.ndim == 2 else y, self.samples, self.stats,
                         self.move_stats, self.last_state)

    def repeated(self, times: int) -> "Posterior":
        """Every draw `times` times in a row (chains kept): the draws that per-draw fantasies need when each draw
        gets several (optim.batch's ``qei``). Predictions average the same mixture; only the cost grows."""
        if not (isinstance(times, (int, np.integer)) and not isinstance(times, bool) and times >= 1):
            raise ValueError(f"times must be an integer >= 1, got {times!r}")
        rep = lambda a: np.repeat(np.asarray(a), times, axis=1)  # noqa: E731
        tree = jax.tree_util.tree_map
        return Posterior(self.surrogate, self.data, self.X, self.y, tree(rep, self.samples), tree(rep, self.stats),
                         tree(rep, self.move_stats), self.last_state, seconds=self.seconds)

    def draw(self, index: int) -> "Posterior":
        """One draw (flat index, `flat_samples` order) as a posterior of one chain and one draw, on the same
        data: what a Thompson-style proposal optimizes (optim.batch's ``thompson``). The warm start is its chain's."""
        total = self.num_chains * self.num_samples
        if not (isinstance(index, (int, np.integer)) and not isinstance(index, bool) and 0 <= index < total):
            raise ValueError(f"index must be an integer in [0, {total}), got {index!r}")
        chain, kept = divmod(int(index), self.num_samples)
        one = lambda a: np.asarray(a)[chain:chain + 1, kept:kept + 1]  # noqa: E731
        tree = jax.tree_util.tree_map
        return Posterior(self.surrogate, self.data, self.X, self.y, tree(one, self.samples), tree(one, self.stats),
                         tree(one, self.move_stats),
                         tree(lambda a: np.asarray(a)[chain:chain + 1], self.last_state), seconds=self.seconds)

    def log_likelihood(self, loo: bool = False) -> np.ndarray:
        """Pointwise log-likelihood per sample, [C, S, n], user units: log p(y_i | y_<i, theta), which sums
        to the joint log-likelihood, or with `loo` log p(y_i | y_-i, theta), the terms PSIS-LOO needs for
        a GP, whose observations are not independent given theta (Burkner, Gabry & Vehtari 2021)."""
        key = "loglik_loo" if loo else "loglik"
        if key not in self._cache:
            ll = _log_likelihood_fn(self.surrogate, loo)(self.flat_samples(), self.data)
            ll = np.asarray(ll)[:, : len(self.y)]
            self._cache[key] = ll.reshape(self.num_chains, self.num_samples, -1)
        return self._cache[key]

    def arviz_groups(self) -> tuple[dict, dict, dict]:
        """(groups, coords, dims) as plain NumPy, whatever ArviZ is installed: groups posterior
        (continuous sites and structure summaries), sample_stats, log_likelihood (leave-one-out terms,
        so that ``az.loo`` / ``az.compare`` are right), observed_data and constant_data."""
        dims, coords = self.surrogate.arviz_dims()
        posterior = {k: np.asarray(v) for k, v in self.samples.items() if k not in self.surrogate.discrete_sites}
        posterior.update(self.surrogate.summarize_discrete(self.samples))
        stats = {k: np.asarray(v) for k, v in self.stats.items()}
        stats["diverging"] = stats["diverging"].astype(bool)
        stats.update(self.surrogate.summarize_moves(self.move_stats))
        n = len(self.y)
        coords = {**coords, "obs": np.arange(n), "column": list(self.surrogate.space.names)}
        dims = {**dims, "y": ["obs"], "X": ["obs", "column"]}
        try:
            log_lik = {"y": self.log_likelihood(loo=True)}
        except NotImplementedError:  # a user's surrogate may not offer pointwise terms
            log_lik = {}
        groups = {"posterior": posterior, "sample_stats": stats, "log_likelihood": log_lik,
                  "observed_data": {"y": np.asarray(self.y)}, "constant_data": {"X": np.asarray(self.X)}}
        return groups, coords, dims

    def to_arviz(self):
        """The posterior as ArviZ's object: ``xarray.DataTree`` with ArviZ 1.x, ``InferenceData`` with 0.x.

        Groups: posterior, sample_stats, log_likelihood (leave-one-out terms), observed_data,
        constant_data. Dims are named after the space (e.g. ``lengthscale`` has dim ``numeric_param``
        with the parameter names as coordinates); padding rows never appear.
        """
        return from_groups(*self.arviz_groups())


def best_chain_indices(posteriors: Sequence[Posterior], num_chains: int) -> np.ndarray:
    """Ascending indices, into the chains of `posteriors` taken in order, of the `num_chains` chains with the
    highest median log density (``stats["lp"]`` over their kept draws; ties keep the earlier chain, a chain whose
    median is not finite ranks last). The posteriors must be of one surrogate, on the same data, with as many
    draws per chain."""
    if not posteriors:
        raise ValueError("best_chains needs at least one posterior")
    first = posteriors[0]
    for p in posteriors[1:]:
        if p.surrogate != first.surrogate:
            raise ValueError("best_chains: the posteriors are of different surrogates")
        if not (np.array_equal(p.X, first.X) and np.array_equal(p.y, first.y)):
            raise ValueError("best_chains: the posteriors were fitted to different data")
        if p.num_samples != first.num_samples:
            raise ValueError(f"best_chains: the runs kept {first.num_samples} and {p.num_samples} draws per chain")
    total = sum(p.num_chains for p in posteriors)
    if not (isinstance(num_chains, (int, np.integer)) and not isinstance(num_chains, bool)
            and 1 <= num_chains <= total):
        raise ValueError(f"num_chains must be an integer in [1, {total}], got {num_chains!r}")
    lp = np.concatenate([np.median(np.asarray(p.stats["lp"]), axis=1) for p in posteriors])
    lp = np.where(np.isfinite(lp), lp, -np.inf)
    return np.sort(np.argsort(-lp, kind="stable")[:num_chains])


def best_chains(posteriors: Sequence[Posterior], num_chains: int) -> Posterior:
    """The `num_chains` chains with the highest median log density (``stats["lp"]`` over their kept draws) among
    runs of one surrogate on the same data, in the order given (ties keep the earlier chain).

    What it is for: a warm-started chain can sit in a mode that the data it now conditions on no longer support
    (on 2-D Exp a treed GP's chains stayed 15-50 nats below cold chains fitted to the same points, predicting
    -0.10 +- 0.22 where cold chains predicted the true -0.43). Running fresh chains beside it and keeping the
    best is a choice among whole chains, as a multi-start initialization makes, not an MCMC step: it favours the
    highest mode found, and a narrow mode can outrank a broad one that holds more mass. Every group (draws,
    statistics, move statistics, warm start) is taken chain by chain, so the result warm-starts the next run."""
    keep = best_chain_indices(posteriors, num_chains)
    first = posteriors[0]

    def pick(*groups):
        return np.concatenate([np.asarray(g) for g in groups], axis=0)[keep]
    stack = lambda name: jax.tree_util.tree_map(pick, *[getattr(p, name) for p in posteriors])  # noqa: E731
    return Posterior(first.surrogate, first.data, first.X, first.y, stack("samples"), stack("stats"),
                     stack("move_stats"), stack("last_state"), seconds=sum(p.seconds for p in posteriors))
