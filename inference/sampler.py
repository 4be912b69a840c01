"""Metropolis-within-Gibbs: custom MH moves for discrete sites, then one NUTS step for continuous sites.

One sweep (pure function over a NamedTuple state) updates every discrete site with its move,
refreshes the cached potential energy and gradient, then takes one NUTS transition. Chains are
vectorized with ``vmap``; the whole run is one jitted ``lax.scan`` compiled once per (surrogate,
settings, data bucket), so a BO run that calls :func:`sample` every iteration compiles a handful of
times. A previous :class:`Posterior` warm-starts every chain (state, step size and mass matrix).
"""

from __future__ import annotations

import functools
import time
from typing import Any, Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import handlers
from numpyro.distributions import biject_to
from numpyro.infer.hmc import hmc
from numpyro.infer.util import constrain_fn, potential_energy

from inference.moves import MOVES
from inference.posterior import Posterior, WarmStart
from zoo.base import Surrogate
from zoo.data import bucket_size, make_data


class GibbsState(NamedTuple):
    """State of one chain: NumPyro's HMC state for continuous sites plus discrete site values."""

    hmc: Any
    discrete: dict


class MovesOnly(NamedTuple):
    """Stands in for the HMC state of a model whose every site is updated by moves (e.g. BARK)."""

    z: dict
    potential_energy: Any


def potential_fn_gen(surrogate: Surrogate):
    """(data, discrete values) -> potential energy of the continuous sites in unconstrained space."""
    def gen(data, discrete):
        model = handlers.condition(surrogate.model, data=discrete)
        return lambda z: potential_energy(model, (data,), {}, z)
    return gen


def init_unconstrained(surrogate: Surrogate, data, discrete, key, radius: float = 2.0) -> dict:
    """Uniform(-radius, radius) draws for every continuous site, in unconstrained space (jittable)."""
    k_trace, key = jax.random.split(key)
    model = handlers.seed(handlers.condition(surrogate.model, data=discrete), rng_seed=k_trace)
    trace = handlers.trace(model).get_trace(data)
    z = {}
    for name, site in trace.items():
        if site["type"] == "sample" and not site["is_observed"]:
            shape = jnp.shape(biject_to(site["fn"].support).inv(site["value"]))
            key, sub = jax.random.split(key)
            z[name] = jax.random.uniform(sub, shape, minval=-radius, maxval=radius)
    return z


def resolve_moves(surrogate: Surrogate, moves: Mapping | None) -> tuple:
    """(site, move) pairs: the surrogate's families from MOVES, overridden by `moves`."""
    moves = dict(moves or {})
    out = []
    for site, family in surrogate.discrete_sites.items():
        move = moves.pop(site, None) or MOVES.get(family)
        if move is None:
            raise ValueError(f"no move for discrete site {site!r} of family {family!r}; "
                             f"register one with inference.moves.register_move or pass moves={{...}}")
        out.append((site, move))
    if moves:
        raise ValueError(f"moves given for unknown discrete sites {sorted(moves)}; "
                         f"{surrogate.name} has {sorted(surrogate.discrete_sites)}")
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _runner(surrogate, moves, num_warmup, num_samples, num_chains, thinning, cold, max_tree_depth,
            target_accept_prob):
    """Build the jitted, chain-vectorized run for one configuration (cached: compile once)."""
    gen = potential_fn_gen(surrogate)
    init_kernel, sample_kernel = hmc(potential_fn_gen=gen, algo="NUTS")

    def sweep(state: GibbsState, key, data):
        hmc_state, disc = state
        move_info = {}
        if moves:
            for (site, move), k in zip(moves, jax.random.split(key, len(moves))):
                z, current = hmc_state.z, disc

                def log_density(value, site=site, current=current, z=z):
                    return -gen(data, {**current, site: value})(z)
                if getattr(move, "needs_context", False):  # structure-aware moves (e.g. BARK's trees)
                    context = surrogate.move_context(data, z, disc)
                    new, accepted = move(k, disc[site], log_density, context)
                else:
                    new, accepted = move(k, disc[site], log_density)
                disc = {**disc, site: new}
                move_info[site] = accepted
            if isinstance(hmc_state, MovesOnly):  # its potential is computed only when a draw is kept
                info = {"diverging": jnp.array(False), "acceptance_rate": jnp.array(1.0), "n_steps": jnp.array(0)}
                return GibbsState(hmc_state, disc), (info, move_info)
            pe, grad = jax.value_and_grad(gen(data, disc))(hmc_state.z)
            hmc_state = hmc_state._replace(potential_energy=pe, z_grad=grad)
        hmc_state = sample_kernel(hmc_state, model_args=(data, disc))
        info = {"diverging": hmc_state.diverging, "acceptance_rate": hmc_state.accept_prob,
                "n_steps": hmc_state.num_steps}
        return GibbsState(hmc_state, disc), (info, move_info)

    def run_chain(key, z0, disc0, step0, inv_mass0, data):
        k_init, k_warm, k_draw = jax.random.split(key, 3)
        if not z0:  # no continuous site: moves only, no NUTS
            hmc_state = MovesOnly({}, jnp.array(0.0))  # its potential is filled in when a draw is kept
        else:
            hmc_state = init_kernel(
                z0, num_warmup, step_size=step0, inverse_mass_matrix=inv_mass0,
                adapt_step_size=True, adapt_mass_matrix=cold, dense_mass=False,
                target_accept_prob=target_accept_prob, max_tree_depth=max_tree_depth,
                model_args=(data, disc0), rng_key=k_init)
        state = GibbsState(hmc_state, disc0)
        state, _ = jax.lax.scan(lambda s, k: (sweep(s, k, data)[0], None), state,
                                jax.random.split(k_warm, num_warmup))

        def draw(s, k):
            s, (info, move_info) = jax.lax.scan(lambda s, k: sweep(s, k, data), s,
                                                jax.random.split(k, thinning))
            hs, disc = s
            if isinstance(hs, MovesOnly):
                hs = MovesOnly({}, gen(data, disc)({}))
                s = GibbsState(hs, disc)
                energy, step_size = hs.potential_energy, jnp.array(0.0)
            else:
                energy, step_size = hs.energy, hs.adapt_state.step_size
            model = handlers.condition(surrogate.model, data=disc)
            values = {**constrain_fn(model, (data,), {}, hs.z, return_deterministic=True), **disc}
            stats = {"lp": -hs.potential_energy, "energy": energy, "step_size": step_size,
                     "diverging": jnp.any(info["diverging"]),
                     "acceptance_rate": jnp.mean(info["acceptance_rate"]),
                     "n_steps": jnp.mean(info["n_steps"].astype(jnp.float64))}
            moves_mean = {k_: jnp.mean(v, axis=0) for k_, v in move_info.items()}
            return s, (values, stats, moves_mean)

        state, (values, stats, move_stats) = jax.lax.scan(draw, state, jax.random.split(k_draw, num_samples))
        hs = state.hmc
        if isinstance(hs, MovesOnly):
            last = WarmStart({}, state.discrete, jnp.array(0.0), jnp.zeros(0))
        else:
            last = WarmStart(hs.z, state.discrete, hs.adapt_state.step_size, hs.adapt_state.inverse_mass_matrix)
        return values, stats, move_stats, last

    def run_cold(key, data):
        k_disc, k_z, k_run = jax.random.split(key, 3)
        disc0 = surrogate.init_discrete(k_disc, data)
        z0 = init_unconstrained(surrogate, data, disc0, k_z)
        return run_chain(k_run, z0, disc0, 1.0, None, data)

    def run(key, *args):  # key splitting inside the jit: no eager (separately compiled) key ops
        keys = jax.random.split(key, num_chains)
        if cold:
            return jax.vmap(run_cold, in_axes=(0, None))(keys, *args)
        return jax.vmap(run_chain, in_axes=(0, 0, 0, 0, 0, None))(keys, *args)
    return jax.jit(run)


def as_key(key):
    """An int seed or a JAX PRNG key -> raw key words; for ints, the same words as jax.random.PRNGKey
    (high and low 32 bits), made in NumPy so that no separate XLA computation is compiled."""
    if isinstance(key, (int, np.integer)):
        seed = int(key)
        if not 0 <= seed < 2**64:
            raise ValueError(f"an integer seed must be in [0, 2^64), got {seed}")
        return np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=np.uint32)
    return key


def sample(surrogate: Surrogate, X, y, key, num_warmup: int = 300, num_samples: int = 100,
           num_chains: int = 2, thinning: int = 1, init: Posterior | WarmStart | None = None,
           moves: Mapping | None = None, max_tree_depth: int = 8,
           target_accept_prob: float = 0.8, size: int | None = None) -> Posterior:
    """Draw `num_chains` x `num_samples` posterior samples of `surrogate` given encoded X [n, D] and y [n].

    Continuous sites: NUTS (step size adapted during `num_warmup`; mass matrix too on a cold start).
    Discrete sites: the moves named by the surrogate (or `moves={site: move}`), once per sweep.
    `init`: a previous Posterior of the same surrogate (or its `last_state`); each chain continues
    from its last state with the mass matrix kept, so a short `num_warmup` suffices after new data.
    `size`: pad the data to this many rows (default: the surrogate's bucket, see `Surrogate.bucket_steps`).
    """
    for name, v in (("num_warmup", num_warmup), ("num_samples", num_samples), ("num_chains", num_chains),
                    ("thinning", thinning)):
        if not isinstance(v, (int, np.integer)) or v < (0 if name == "num_warmup" else 1):
            raise ValueError(f"{name} must be an integer >= {0 if name == 'num_warmup' else 1}, got {v!r}")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != surrogate.space.dim:
        raise ValueError(f"X must be encoded rows [n, {surrogate.space.dim}], got shape {X.shape}")
    size = bucket_size(X.shape[0], steps=surrogate.bucket_steps) if size is None else size
    data = make_data(X, y, size=size, fill_row=surrogate.space.fill_row())
    move_pairs = resolve_moves(surrogate, moves)
    key = as_key(key)
    cold = init is None
    run = _runner(surrogate, move_pairs, int(num_warmup), int(num_samples), int(num_chains), int(thinning), cold,
                  int(max_tree_depth), float(target_accept_prob))
    t0 = time.perf_counter()
    if cold:
        out = run(key, data)
    else:
        if isinstance(init, Posterior):
            if init.surrogate != surrogate:
                raise ValueError("init must be a Posterior of an equal surrogate (same model and space)")
            init = init.last_state
        chains = int(np.shape(init.step_size)[0])
        if chains != num_chains:
            raise ValueError(f"init has {chains} chains, asked for {num_chains}")
        out = run(key, init.z, init.discrete, init.step_size, init.inverse_mass_matrix, data)
    values, stats, move_stats, last = jax.tree_util.tree_map(np.asarray, out)
    return Posterior(surrogate=surrogate, data=data, X=X, y=np.asarray(y, dtype=np.float64).reshape(-1),
                     samples=values, stats=stats, move_stats=move_stats, last_state=WarmStart(*last),
                     seconds=time.perf_counter() - t0)
