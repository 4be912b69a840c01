"""How evaluations in flight (asked, not yet told) enter the next proposal: each gets a fantasy value, every
posterior draw is conditioned on the fantasies (`Posterior.conditioned_on`), and the integrated acquisition
of that conditioned posterior is maximized. Its variance is then small at the pending points, so the next
proposal goes elsewhere; the hyperparameters and structure stay the draws fitted to the real data.

- ``believer``: the Kriging believer (Ginsbourger, Le Riche & Carraro 2010), averaged over the posterior:
  a pending point's fantasy is the posterior mean of f there, integrated over the draws. It keeps the model's
  shape and only removes the uncertainty the pending evaluation will remove. The incumbent stays min y, where the
  paper's believer takes the believed values as data and so the best of y and them. So a pending point predicted
  to beat min y keeps an expected improvement of about (min y - its mean) at and around it, and the next slots
  of a batch may refine near it. The paper's incumbent was measured on 2026-12-05 (BENCHMARKS.md, "The
  believer's incumbent") and not adopted: paired ties on all five problems, higher medians on three.
- ``liar``: the constant liar CL-min of the same paper: every pending point is assumed to return the best
  value seen so far, which pushes the batch away from the incumbent more strongly.
- ``fantasy``: one sampled outcome per pending point, y_p ~ N(mu_s(x_p), var_s(x_p)) under one posterior draw s
  picked at random, and the incumbent lowered to the best of the observations and these fantasies. With the
  incumbent so lowered, EI of the conditioned posterior is what a candidate adds to the joint expected
  improvement of the batch given those outcomes: max(0, b - min(f_p, f_x)) = max(0, b - f_p) + max(0,
  min(b, f_p) - f_x). So in expectation over the fantasies the proposal maximizes the sequential-greedy q-EI
  (Ginsbourger et al. 2010; Snoek, Larochelle & Adams 2012 integrate over fantasies the same way); one
  fantasy per proposal is its one-sample estimate, as Thompson sampling uses one draw. The pending points are
  sampled independently (their joint covariance is not drawn).

- ``qei``: per-draw fantasies, the Monte Carlo form of the sequential-greedy q-EI under the fully Bayesian
  posterior. Every posterior draw s gets QEI_FANTASIES joint outcomes at the pending points, each drawn from that
  draw's own predictive (point by point, each conditioned on the ones before: the chain rule, so the pending
  points' correlation under draw s is kept); every (draw, fantasy) pair is conditioned on its own outcomes and
  improves on its own incumbent, min(best y, its fantasies). The integrated acquisition then averages over draws
  and fantasies: for EI, E_s E_{y_P | s} EI_s(x | y_P) = q-EI({P, x}) - q-EI(P), the gain x adds to the batch
  (the identity under ``fantasy`` above, in expectation rather than from one sample). Where ``fantasy`` draws one
  outcome from one random draw and conditions every draw on it, here each draw conditions only on outcomes its
  own hyperparameters and structure could produce. Cost: the acquisition averages QEI_FANTASIES times as many
  samples, and each pending point costs one more `prepare`.

- ``thompson``: each proposal made while points are pending gets its own posterior draw, one of the draws picked
  uniformly at random (its hyperparameters and, for tree models, its structure), conditioned on that draw's own
  posterior mean at the pending points (the believer under that draw), and the incumbent lowered to the best of
  the observations and the conditioned draw's means there (a draw that believes a pending point beats the
  incumbent would otherwise propose it again: conditioning lowers the variance there, not the mean); the
  acquisition is that draw's alone. Where the draw still proposes a point already seen or pending (a noisy leaf
  keeps its variance), `BayesOpt` takes the believer's proposal instead (recorded as ``thompson_fallback``). The
  integrated acquisition averages the draws, so every slot of a batch sees the same surface with a hole at each
  pending point; here each slot sees one plausible model, the diversity Thompson sampling gets from drawing the
  model (Kandasamy et al. 2018 draw a whole function per worker; this draws the hyperparameters and keeps the
  acquisition). Costs no more than ``believer``: one draw instead of all.

Every strategy conditions on the fit's own standardization of y (`conditioned_on(..., keep_scale=True)`): the
draws' amplitudes and noise were fitted on that scale, so each conditioned draw is that draw's exact GP posterior
given the fantasies, and a draw conditioned on its own means keeps its mean everywhere. Until 2026-12-05 the
fantasies were standardized afresh with the data, as a refit would: fantasies near the incumbent (an extreme
value) then widened y's sd, by 18% on a Hartmann-6 fit at n = 30 with 3 pending points, and every draw's
predictive sd with it (BENCHMARKS.md, "The fit's scale for the fantasies").

A surrogate that offers `zoo.base.OutputWarping` predicts on each draw's own warp of y: its predictive means and
sampled outcomes are taken back to the user's units draw by draw (`user_units`) before they serve as fantasies or
incumbents, so every strategy conditions and compares on the scale of the observations.

All of them reduce to sequential BO when nothing is pending. BENCHMARKS.md ("Parallel evaluation") compares them.
"""

from __future__ import annotations

import numpy as np

from zoo.base import OutputWarping, offers

BATCH_STRATEGIES = ("believer", "liar", "fantasy", "qei", "thompson")
#: joint outcomes at the pending points per posterior draw in ``qei`` (32 draws by default: 128 in all)
QEI_FANTASIES = 4


def check_batch_strategy(strategy: str) -> str:
    if strategy not in BATCH_STRATEGIES:
        raise ValueError(f"batch_strategy must be one of {BATCH_STRATEGIES}, got {strategy!r}")
    return strategy


def user_units(posterior, values) -> np.ndarray:
    """Values [S, N] on the posterior draws' prediction scale in the user's units (the same values unless the
    surrogate offers OutputWarping)."""
    if not offers(posterior.surrogate, OutputWarping):
        return np.asarray(values)
    return np.asarray(posterior.surrogate.from_model_scale(posterior.flat_samples(), posterior.data, values))


def fantasy_values(strategy: str, posterior, X_pending: np.ndarray, y: np.ndarray,
                   rng: np.random.Generator | None = None) -> np.ndarray:
    """Fantasy observations (model units, as `y`) for the encoded pending rows `X_pending`; `rng` (needed by
    ``fantasy``) picks the posterior draw and samples its outcomes."""
    if strategy == "believer":
        mean, _ = posterior.predict(X_pending)
        return user_units(posterior, mean).mean(axis=0)
    if strategy == "liar":
        return np.full(len(X_pending), float(np.min(y)))
    if strategy == "fantasy":
        if rng is None:
            raise ValueError("the 'fantasy' batch strategy samples its outcomes: pass rng")
        mean, var = posterior.predict(X_pending)
        draw = rng.integers(mean.shape[0])
        outcomes = mean[draw] + np.sqrt(np.maximum(var[draw], 0.0)) * rng.standard_normal(len(X_pending))
        return user_units(posterior, np.broadcast_to(outcomes, mean.shape))[draw]
    raise ValueError(f"unknown batch strategy {strategy!r}")


def with_pending(strategy: str, posterior, X: np.ndarray, y: np.ndarray, X_pending: np.ndarray,
                 rng: np.random.Generator | None = None):
    """(posterior, incumbent): the posterior conditioned on the observations and on fantasies at the pending
    rows, and the best value the acquisition improves on: min y for ``believer`` and ``liar``, the best of y and
    the fantasies for ``fantasy`` (per copy for ``qei``; for ``thompson`` the conditioned draw's means there).
    With nothing pending: the posterior itself and min y."""
    best = float(np.min(y))
    if len(X_pending) == 0:
        return posterior, best
    if strategy == "qei":
        if rng is None:
            raise ValueError("the 'qei' batch strategy samples its outcomes: pass rng")
        return per_draw_fantasies(posterior, X, y, X_pending, rng)
    if strategy == "thompson":
        if rng is None:
            raise ValueError("the 'thompson' batch strategy picks a posterior draw: pass rng")
        posterior = posterior.draw(int(rng.integers(posterior.num_chains * posterior.num_samples)))
        fantasies = fantasy_values("believer", posterior, X_pending, y)
        conditioned = posterior.conditioned_on(np.vstack([X, X_pending]), np.concatenate([y, fantasies]),
                                               keep_scale=True)
        return conditioned, min(best, float(np.min(user_units(conditioned, conditioned.predict(X_pending)[0]))))
    fantasies = fantasy_values(strategy, posterior, X_pending, y, rng)
    if strategy == "fantasy":
        best = min(best, float(np.min(fantasies)))
    return posterior.conditioned_on(np.vstack([X, X_pending]), np.concatenate([y, fantasies]), keep_scale=True), best


def per_draw_fantasies(posterior, X: np.ndarray, y: np.ndarray, X_pending: np.ndarray, rng: np.random.Generator,
                       per_draw: int = QEI_FANTASIES):
    """``qei``'s (posterior, incumbents): every draw repeated `per_draw` times, each copy conditioned on its own
    joint outcomes at the pending rows (sampled point by point from that copy's predictive given the outcomes
    before), and each copy's incumbent [R] the best of y and its own outcomes (model units, as `y`)."""
    post = posterior.repeated(per_draw)
    draws = post.num_chains * post.num_samples
    rows, values = np.asarray(X, dtype=np.float64), np.tile(np.asarray(y, dtype=np.float64), (draws, 1))
    current = post.conditioned_on(rows, np.asarray(y, dtype=np.float64), keep_scale=True)
    for x in np.asarray(X_pending, dtype=np.float64):
        mean, var = current.predict(x[None, :])
        outcome = user_units(current, mean + np.sqrt(np.maximum(var, 0.0)) * rng.standard_normal((draws, 1)))[:, 0]
        rows, values = np.vstack([rows, x]), np.column_stack([values, outcome])
        current = post.conditioned_on(rows, values, keep_scale=True)
    best = np.minimum(float(np.min(y)), values[:, len(y):].min(axis=1))
    return current, best
