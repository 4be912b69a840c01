"""MH move for a vector of binary indicators (feature-selection masks and the like)."""

import jax
import jax.numpy as jnp


def metropolis_accept(key, log_ratio):
    """Accept with probability min(1, exp(log_ratio)); NaN counts as rejection."""
    log_ratio = jnp.where(jnp.isnan(log_ratio), -jnp.inf, log_ratio)
    return jnp.log(jax.random.uniform(key)) < log_ratio


def flip_one_bit(key, value, log_density):
    """Flip one uniformly chosen entry; the proposal is symmetric, so the Hastings term is 1."""
    k_idx, k_acc = jax.random.split(key)
    flat = value.reshape(-1)
    i = jax.random.randint(k_idx, (), 0, flat.shape[0])
    proposal = flat.at[i].set(1 - flat[i]).reshape(value.shape)
    accept = metropolis_accept(k_acc, log_density(proposal) - log_density(value))
    return jnp.where(accept, proposal, value), accept.astype(jnp.float64)
