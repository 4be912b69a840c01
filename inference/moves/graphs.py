"""Metropolis–Hastings moves on forests over the input dimensions (the `graph` site of zoo.additive).

Two moves, each an exact MH step on the joint density (prior, likelihood, Jacobians of the current
continuous state) given by ``log_density``:

- toggle: choose uniformly among the *valid* single-edge changes of the current forest Z, i.e. remove
  one of its |E| edges or add one of the A(Z) absent edges that join two different components (an edge
  that would close a cycle is never proposed). The reverse move is chosen among the valid changes of
  Z', so the Hastings term is N(Z) / N(Z') with N = |E| + A, and A(Z) = (D^2 - sum_c s_c^2) / 2 for
  components of sizes s_c.
- mutation (002 Alg. 5): remove a uniformly chosen edge, which splits its tree into parts P and Q, and
  reconnect them by a uniform pair (p, q) in P x Q. The reverse move removes (p, q) (one of the same
  |E| edges) and picks the old edge among the same |P||Q| pairs, so the proposal is symmetric. It
  moves between forests with the same number of edges, which the toggle move reaches only through a
  lower-likelihood intermediate.

Each sweep makes `TOGGLES` toggle proposals and `MUTATIONS` mutation proposals (a scan); the stats are
the acceptance indicators averaged per move type [2].
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from inference.moves.binary import metropolis_accept
from zoo.forest_prior import component_labels

TOGGLES = 4  # single-edge proposals per sweep
MUTATIONS = 2  # mutation proposals per sweep


def _valid_toggles(Z):
    """[D, D] bool, upper triangle: the single-edge changes that keep Z a forest."""
    D = Z.shape[0]
    labels = component_labels(Z)
    upper = jnp.triu(jnp.ones((D, D), dtype=bool), 1)
    return upper & (Z | (labels[:, None] != labels[None, :]))


def _pick(key, mask):
    """A uniform flat index among the True entries of `mask` (which must have one)."""
    logits = jnp.where(mask.ravel(), 0.0, -jnp.inf)
    return jax.random.categorical(key, logits)


def toggle_step(key, Z, lp, log_density):
    """One toggle proposal and its MH decision: (Z, lp, accepted)."""
    D = Z.shape[0]
    k_pick, k_acc = jax.random.split(key)
    valid = _valid_toggles(Z)
    flat = _pick(k_pick, valid)
    i, j = flat // D, flat % D
    new = Z.at[i, j].set(~Z[i, j]).at[j, i].set(~Z[i, j])
    lp_new = log_density(new)
    log_hastings = jnp.log(jnp.sum(valid)) - jnp.log(jnp.sum(_valid_toggles(new)))
    accept = metropolis_accept(k_acc, lp_new - lp + log_hastings)
    return jnp.where(accept, new, Z), jnp.where(accept, lp_new, lp), accept


def mutation_step(key, Z, lp, log_density):
    """One mutation proposal (remove an edge, reconnect its two parts elsewhere): (Z, lp, accepted)."""
    D = Z.shape[0]
    k_edge, k_pair, k_acc = jax.random.split(key, 3)
    upper = jnp.triu(Z, 1)
    has_edge = jnp.any(upper)
    flat = _pick(k_edge, upper | ~has_edge)  # any pair when there is no edge (then nothing changes)
    i, j = flat // D, flat % D
    cut = Z.at[i, j].set(False).at[j, i].set(False)
    labels = component_labels(cut)
    in_p, in_q = labels == labels[i], labels == labels[j]
    across = jnp.triu((in_p[:, None] & in_q[None, :]) | (in_q[:, None] & in_p[None, :]), 1)
    flat_new = _pick(k_pair, across)
    a, b = flat_new // D, flat_new % D
    new = cut.at[a, b].set(True).at[b, a].set(True)
    new = jnp.where(has_edge, new, Z)
    lp_new = log_density(new)
    accept = has_edge & metropolis_accept(k_acc, lp_new - lp)
    return jnp.where(accept, new, Z), jnp.where(accept, lp_new, lp), accept


def graph_sweep(key, Z, log_density):
    """`TOGGLES` toggle and `MUTATIONS` mutation MH steps; returns (Z, acceptance rate per move type [2])."""
    Z = jnp.asarray(Z).astype(bool)
    k_toggle, k_mutate = jax.random.split(key)
    lp = log_density(Z)

    def run(step, keys, carry):
        def body(c, k):
            z, l = c
            z, l, acc = step(k, z, l, log_density)
            return (z, l), acc.astype(jnp.float64)
        return jax.lax.scan(body, carry, keys)

    (Z, lp), acc_toggle = run(toggle_step, jax.random.split(k_toggle, TOGGLES), (Z, lp))
    (Z, lp), acc_mutate = run(mutation_step, jax.random.split(k_mutate, MUTATIONS), (Z, lp))
    return Z, jnp.stack([jnp.mean(acc_toggle), jnp.mean(acc_mutate)])


def prior_graph_sweep(key, Z, log_density, context):
    """`graph_sweep` with the forest prior `context` (a zoo.forest_prior.ForestPrior) as the whole target:
    the graph ignores the data, so each draw is a (dependent) draw from the prior. For the random-
    decomposition ablation (`Additive(graph="prior")`), not a posterior sampler."""
    del log_density
    return graph_sweep(key, Z, context.log_prob)


__all__ = ["graph_sweep", "prior_graph_sweep", "mutation_step", "toggle_step", "TOGGLES", "MUTATIONS"]
