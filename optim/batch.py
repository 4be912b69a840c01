"""How evaluations in flight (asked, not yet told) enter the next proposal: each gets a fantasy value, every
posterior draw is conditioned on the fantasies (`Posterior.conditioned_on`), and the integrated acquisition
of that conditioned posterior is maximized. Its variance is then small at the pending points, so the next
proposal goes elsewhere; the hyperparameters and structure stay the draws fitted to the real data.

- ``believer``: the Kriging believer (Ginsbourger, Le Riche & Carraro 2010), averaged over the posterior:
  a pending point's fantasy is the posterior mean of f there, integrated over the draws. It keeps the
  model's shape and only removes the uncertainty the pending evaluation will remove.
- ``liar``: the constant liar CL-min of the same paper: every pending point is assumed to return the best
  value seen so far, which pushes the batch away from the incumbent more strongly.

Both reduce to sequential BO when nothing is pending. BENCHMARKS.md ("Parallel evaluation") compares them.
"""

from __future__ import annotations

import numpy as np

BATCH_STRATEGIES = ("believer", "liar")


def check_batch_strategy(strategy: str) -> str:
    if strategy not in BATCH_STRATEGIES:
        raise ValueError(f"batch_strategy must be one of {BATCH_STRATEGIES}, got {strategy!r}")
    return strategy


def fantasy_values(strategy: str, posterior, X_pending: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Fantasy observations (model units, as `y`) for the encoded pending rows `X_pending`."""
    if strategy == "believer":
        mean, _ = posterior.predict(X_pending)
        return np.asarray(mean).mean(axis=0)
    if strategy == "liar":
        return np.full(len(X_pending), float(np.min(y)))
    raise ValueError(f"unknown batch strategy {strategy!r}")


def with_pending(strategy: str, posterior, X: np.ndarray, y: np.ndarray, X_pending: np.ndarray):
    """The posterior conditioned on the observations and on fantasies at the pending rows (or itself if none)."""
    if len(X_pending) == 0:
        return posterior
    fantasies = fantasy_values(strategy, posterior, X_pending, y)
    return posterior.conditioned_on(np.vstack([X, X_pending]), np.concatenate([y, fantasies]))
