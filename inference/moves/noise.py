"""Metropolis–Hastings update of a GP noise variance given a cached noise-free kernel (BARK, 003 App. H).

A Gaussian random walk on theta = log(sigma^2). In theta the target density is
p(sigma^2) p(y | sigma^2) sigma^2 (the Jacobian of sigma^2 = exp(theta)), and the walk is symmetric,
so the log acceptance ratio is the change of log prior + log likelihood + theta. (The paper walks on a
softplus scale instead; any bijection is correct with its own Jacobian.) The kernel without noise is
computed once, so each of the `steps` proposals costs one Cholesky.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from inference.moves.binary import metropolis_accept

STEP_SCALE = 0.5  # standard deviation of the walk on log(sigma^2)
STEPS = 4  # proposals per sweep (cheap: the kernel is shared)


def noise_walk(key, noise, log_density, context):
    """`STEPS` random-walk MH steps on log(noise); returns (noise, acceptance rate).

    `context` offers `noise_free_kernel()` [n, n], `noise_prior` (a NumPyro distribution) and
    `noise_loglik(K, noise)`, the model's own likelihood as a function of the noise (`zoo.bark.ForestContext`).
    `log_density` is not evaluated: it would re-score the structure's prior and kernel per proposal."""
    del log_density
    K = context.noise_free_kernel()
    prior = context.noise_prior

    def target(v):
        return prior.log_prob(v) + context.noise_loglik(K, v) + jnp.log(v)

    def step(carry, k):
        v, lp = carry
        k_prop, k_acc = jax.random.split(k)
        proposal = v * jnp.exp(STEP_SCALE * jax.random.normal(k_prop))
        lp_new = target(proposal)
        accept = metropolis_accept(k_acc, lp_new - lp)
        return (jnp.where(accept, proposal, v), jnp.where(accept, lp_new, lp)), accept.astype(jnp.float64)

    (noise, _), accepted = jax.lax.scan(step, (noise, target(noise)), jax.random.split(key, STEPS))
    return noise, jnp.mean(accepted)


