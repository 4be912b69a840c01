"""Metropolis-within-Gibbs in the blackjax style: a kernel is `init` plus a pure `step(key, state, data)
-> (state, info)` over NamedTuple states, what a step carries kept apart from what it reports.

Two kernels. `gibbs_kernel`: every discrete site is updated by its MH move, the cached potential energy
and gradient are refreshed, then one NUTS transition (NumPyro's HMC) moves the continuous sites.
`moves_kernel`: for models whose every site is moved by MH (BARK), with no NUTS and no gradient; its
potential is computed only when a draw is kept. `run_chain` drives either (warm-up sweeps, then a draw
every `thinning` sweeps, one scan over all sweeps); NUTS chains run in sequence on small data and
batched on large, moves-only chains batched (`_build_run` says why), and the whole run is one jitted function,
compiled once per (surrogate, settings, data bucket) through `zoo.compiled`, so a BO run that calls
:func:`sample` every iteration compiles a handful of times. A previous :class:`Posterior` warm-starts
every chain (state, step size and mass matrix). With `workers` (an `inference.ChainWorkers`) the chains run in
child processes, a block each, side by side.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import handlers
from numpyro.distributions import biject_to
from numpyro.infer.hmc import hmc
from numpyro.infer.hmc_util import dual_averaging
from numpyro.infer.util import constrain_fn, potential_energy

from inference.moves import MOVES, Move
from inference.posterior import Posterior, WarmStart
from zoo.base import StructureMoves, Surrogate, offers
from zoo.compiled import compiled
from zoo.data import bucket_size, make_data


class GibbsState(NamedTuple):
    """What a Gibbs step carries: NumPyro's HMC state of the continuous sites and the discrete values."""

    hmc: Any
    discrete: dict


class MovesState(NamedTuple):
    """What a moves-only step carries: the discrete values (every site of the model)."""

    discrete: dict


class SweepInfo(NamedTuple):
    """What one sweep reports: the NUTS transition's statistics and each discrete site's move statistics."""

    diverging: Any
    acceptance_rate: Any
    n_steps: Any
    moves: dict


class Draw(NamedTuple):
    """What a kept state reports: every site's value (constrained), log density, energy and step size."""

    values: dict
    lp: Any
    energy: Any
    step_size: Any


class Kernel(NamedTuple):
    """init(key, z0, discrete0, step_size, inverse_mass_matrix, data) -> state;
    step(key, state, data) -> (state, SweepInfo); draw(state, data) -> Draw; warm_start(state) -> WarmStart."""

    init: Callable
    step: Callable
    draw: Callable
    warm_start: Callable


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
    """(site, Move) pairs: the surrogate's families from MOVES, overridden by `moves` ({site: Move or
    update function})."""
    moves = dict(moves or {})
    out = []
    for site, family in surrogate.discrete_sites.items():
        move = moves.pop(site, None) or MOVES.get(family)
        if move is None:
            raise ValueError(f"no move for discrete site {site!r} of family {family!r}; "
                             f"register one with inference.moves.register_move or pass moves={{...}}")
        move = move if isinstance(move, Move) else Move(move)
        if move.needs_context and not offers(surrogate, StructureMoves):
            raise ValueError(f"the move for site {site!r} needs a move context, but {surrogate.name!r} does not "
                             "offer zoo.base.StructureMoves")
        out.append((site, move))
    if moves:
        raise ValueError(f"moves given for unknown discrete sites {sorted(moves)}; "
                         f"{surrogate.name} has {sorted(surrogate.discrete_sites)}")
    return tuple(out)


def move_discrete(surrogate, moves, gen, key, z, discrete, data):
    """Update every discrete site once with its move (in order); returns (values, per-site move stats)."""
    stats = {}
    if not moves:
        return discrete, stats
    for (site, move), k in zip(moves, jax.random.split(key, len(moves))):
        current = discrete

        def log_density(value, site=site, current=current):
            return -gen(data, {**current, site: value})(z)
        if move.needs_context:
            new, stats[site] = move.update(k, discrete[site], log_density, surrogate.move_context(data, z, discrete))
        else:
            new, stats[site] = move.update(k, discrete[site], log_density)
        discrete = {**discrete, site: new}
    return discrete, stats


def _site_values(surrogate, data, z, discrete) -> dict:
    model = handlers.condition(surrogate.model, data=discrete)
    return {**constrain_fn(model, (data,), {}, z, return_deterministic=True), **discrete}


def refresh_potential(hs, potential_fn):
    """The HMC state with its cached potential energy and gradient recomputed under the moved discrete
    values: NUTS starts its trajectory from them, so a stale cache would target the wrong conditional."""
    pe, grad = jax.value_and_grad(potential_fn)(hs.z)
    return hs._replace(potential_energy=pe, z_grad=grad)


_, _dual_averaging_update = dual_averaging()


def adapt_step_size(hs, num_warmup: int, target_accept_prob: float):
    """One dual-averaging update (Hoffman & Gelman 2014, Sec. 3.2) of the step size after HMC transition
    hs.i - 1 while it is a warm-up sweep; the last warm-up sweep sets the averaged step size. A single
    window over the whole warm-up: what a warm start needs, whose mass matrix is kept."""
    t = hs.i - 1
    a = hs.adapt_state
    ss = _dual_averaging_update(target_accept_prob - hs.accept_prob, a.ss_state)
    finfo = jnp.finfo(jnp.result_type(a.step_size))
    step = jnp.clip(jnp.exp(jnp.where(t == num_warmup - 1, ss[1], ss[0])), finfo.tiny, finfo.max)
    adapted = a._replace(step_size=step, ss_state=ss)
    return hs._replace(adapt_state=jax.tree_util.tree_map(lambda new, old: jnp.where(t < num_warmup, new, old),
                                                          adapted, a))


def gibbs_kernel(surrogate: Surrogate, moves: tuple, num_warmup: int, adapt_mass_matrix: bool,
                 max_tree_depth: int, target_accept_prob: float) -> Kernel:
    """Discrete moves, then one NUTS transition of the continuous sites (NumPyro's `hmc` functional API).

    A cold start (`adapt_mass_matrix`) uses NumPyro's windowed warm-up (Stan's schedule). A warm start keeps
    the mass matrix and adapts only the step size, by one dual-averaging window over all `num_warmup`
    sweeps (`adapt_step_size`): the windowed schedule would restart the step size at 10x its value at the
    last window's end, leaving a few sweeps to recover (at 20 warm-up sweeps some chains ended with
    acceptance 0)."""
    gen = potential_fn_gen(surrogate)
    init_hmc, sample_hmc = hmc(potential_fn_gen=gen, algo="NUTS")
    windowed = adapt_mass_matrix

    def init(key, z0, discrete0, step_size, inverse_mass_matrix, data):
        state = init_hmc(z0, num_warmup if windowed else 0, step_size=step_size,
                         inverse_mass_matrix=inverse_mass_matrix,
                         adapt_step_size=True, adapt_mass_matrix=adapt_mass_matrix, dense_mass=False,
                         target_accept_prob=target_accept_prob, max_tree_depth=max_tree_depth,
                         model_args=(data, discrete0), rng_key=key)
        return GibbsState(state, discrete0)

    def step(key, state: GibbsState, data):
        hs, discrete = state
        if moves:
            discrete, move_stats = move_discrete(surrogate, moves, gen, key, hs.z, discrete, data)
            hs = refresh_potential(hs, gen(data, discrete))
        else:
            move_stats = {}
        hs = sample_hmc(hs, model_args=(data, discrete))
        if not windowed and num_warmup > 0:
            hs = adapt_step_size(hs, num_warmup, target_accept_prob)
        return GibbsState(hs, discrete), SweepInfo(hs.diverging, hs.accept_prob, hs.num_steps, move_stats)

    def draw(state: GibbsState, data) -> Draw:
        hs = state.hmc
        return Draw(_site_values(surrogate, data, hs.z, state.discrete), -hs.potential_energy, hs.energy,
                    hs.adapt_state.step_size)

    def warm_start(state: GibbsState) -> WarmStart:
        hs = state.hmc
        return WarmStart(hs.z, state.discrete, hs.adapt_state.step_size, hs.adapt_state.inverse_mass_matrix)

    return Kernel(init, step, draw, warm_start)


def moves_kernel(surrogate: Surrogate, moves: tuple) -> Kernel:
    """Every site moved by its MH move; no NUTS, so the potential is computed only for kept draws."""
    gen = potential_fn_gen(surrogate)

    def init(key, z0, discrete0, step_size, inverse_mass_matrix, data):
        return MovesState(discrete0)

    def step(key, state: MovesState, data):
        discrete, move_stats = move_discrete(surrogate, moves, gen, key, {}, state.discrete, data)
        return MovesState(discrete), SweepInfo(jnp.array(False), jnp.array(1.0), jnp.array(0), move_stats)

    def draw(state: MovesState, data) -> Draw:
        energy = gen(data, state.discrete)({})
        return Draw(_site_values(surrogate, data, {}, state.discrete), -energy, energy, jnp.array(0.0))

    def warm_start(state: MovesState) -> WarmStart:
        return WarmStart({}, state.discrete, jnp.array(0.0), jnp.zeros(0))

    return Kernel(init, step, draw, warm_start)


def run_chain(kernel: Kernel, key, z0, discrete0, step_size, inverse_mass_matrix, data, num_warmup: int,
              num_samples: int, thinning: int):
    """One chain: `num_warmup` sweeps, then `num_samples` draws `thinning` sweeps apart; returns the
    draws' values, their statistics, the move statistics (averaged per thinning block) and the warm start.

    The warm-up is one more block, of `num_warmup` sweeps, before the `num_samples` blocks of `thinning`:
    one scan over the blocks, each a loop of its own length, so the sweep (NUTS and the moves) is traced
    and compiled once, not once per phase. The warm-up block's draw is dropped."""
    k_init, k_warm, k_draw = jax.random.split(key, 3)
    state = kernel.init(k_init, z0, discrete0, step_size, inverse_mass_matrix, data)
    # the warm-up sweeps' keys, then each draw's `thinning` keys: the keys a scan per phase would split
    block_keys = jax.vmap(lambda k: jax.random.split(k, thinning))(jax.random.split(k_draw, num_samples))
    keys = jnp.concatenate([jax.random.split(k_warm, num_warmup),
                            block_keys.reshape((num_samples * thinning,) + block_keys.shape[2:])])
    starts = np.concatenate([[0], num_warmup + thinning * np.arange(num_samples)])
    lengths = np.array([num_warmup] + [thinning] * num_samples)
    moves0 = jax.eval_shape(kernel.step, keys[0], state, data)[1].moves
    zeros = SweepInfo(jnp.zeros((), bool), jnp.zeros(()), jnp.zeros(()),
                      jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape), moves0))  # sums over a block

    def block(s, xs):
        start, length = xs

        def sweep(t, carry):
            s, total = carry
            s, info = kernel.step(keys[start + t], s, data)
            total = SweepInfo(total.diverging | info.diverging, total.acceptance_rate + info.acceptance_rate,
                              total.n_steps + info.n_steps,
                              jax.tree_util.tree_map(lambda a, v: a + v, total.moves, info.moves))
            return s, total
        s, total = jax.lax.fori_loop(0, length, sweep, (s, zeros))
        d = kernel.draw(s, data)
        stats = {"lp": d.lp, "energy": d.energy, "step_size": d.step_size, "diverging": total.diverging,
                 "acceptance_rate": total.acceptance_rate / thinning, "n_steps": total.n_steps / thinning}
        return s, (d.values, stats, jax.tree_util.tree_map(lambda v: v / thinning, total.moves))

    state, out = jax.lax.scan(block, state, (starts, lengths))
    values, stats, move_stats = jax.tree_util.tree_map(lambda x: x[1:], out)  # drop the warm-up block's
    return values, stats, move_stats, kernel.warm_start(state)


#: padded data rows up to which NUTS chains run in sequence rather than batched (`_build_run` says why)
SEQUENTIAL_MAX_ROWS = 64


def _build_run(surrogate, moves, num_warmup, num_samples, num_chains, thinning, cold, max_tree_depth,
               target_accept_prob, chains=None):
    """The jitted run of `num_chains` chains for one configuration (a kernel chosen by whether the model has
    continuous sites); with `chains = (lo, hi)` only chains lo..hi-1 of them, with the same keys (what one
    process of `inference.ChainWorkers` runs).

    On up to SEQUENTIAL_MAX_ROWS padded rows, NUTS chains run one after the other (`lax.map`), not batched
    with `vmap`: a batched while loop runs until its slowest chain stops, a batched `cond` computes both
    branches, and batching NUTS's nested loops dominated the compile time (the GP on Jenatton small's 9
    columns, 2 chains, 80 warm-up sweeps: 15 s for the first call and 0.9 s for a repeat batched, 6 s and
    0.3 s in sequence). On more rows the chains' linear algebra dominates and runs faster batched
    (BENCHMARKS.md, "Seconds per BO iteration": a warm fit at n = 100 took 7.2 s in sequence, 4.4 s
    batched; at n = 50, 1.3 s and 1.9 s). Moves-only chains (BARK: no while loops) are always batched,
    which runs them faster than in sequence (a cold BARK run of 300 + 640 sweeps: 7.9 s batched, 9.4 s in
    sequence)."""
    def chain(key, z0, discrete0, step_size, inverse_mass_matrix, data):
        kernel = (gibbs_kernel(surrogate, moves, num_warmup, cold, max_tree_depth, target_accept_prob) if z0
                  else moves_kernel(surrogate, moves))
        return run_chain(kernel, key, z0, discrete0, step_size, inverse_mass_matrix, data, num_warmup,
                         num_samples, thinning)

    def cold_start(key, data):
        k_disc, k_z, k_run = jax.random.split(key, 3)
        discrete0 = surrogate.init_discrete(k_disc, data)
        return k_run, init_unconstrained(surrogate, data, discrete0, k_z), discrete0

    def cold_chain(key, data):
        k_run, z0, discrete0 = cold_start(key, data)
        return chain(k_run, z0, discrete0, 1.0, None, data)

    def run(key, *args):  # key splitting inside the jit: no eager (separately compiled) key ops
        keys = jax.random.split(key, num_chains)
        if chains is not None:
            keys = keys[chains[0]:chains[1]]
        *per_chain, data = args
        if cold:
            has_nuts = bool(jax.eval_shape(cold_start, keys[0], data)[1])
            one_chain, per_chain = (lambda k: cold_chain(k, data)), (keys,)
        else:
            has_nuts = bool(per_chain[0])
            one_chain, per_chain = (lambda *a: chain(*a, data)), (keys, *per_chain)
        if has_nuts and data.X.shape[0] <= SEQUENTIAL_MAX_ROWS:
            return jax.lax.map(lambda a: one_chain(*a), per_chain)
        return jax.vmap(one_chain)(*per_chain)
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
           target_accept_prob: float = 0.8, size: int | None = None, standardize: bool = True,
           chains: tuple[int, int] | None = None, workers=None) -> Posterior:
    """Draw `num_chains` x `num_samples` posterior samples of `surrogate` given encoded X [n, D] and y [n].

    Continuous sites: NUTS (step size adapted during `num_warmup`; mass matrix too on a cold start).
    Discrete sites: the moves named by the surrogate (or `moves={site: move}`), once per sweep.
    `init`: a previous Posterior of the same surrogate (or its `last_state`); each chain continues
    from its last state with the mass matrix kept and its step size re-adapted in one dual-averaging
    window, so a short `num_warmup` suffices after new data.
    `size`: pad the data to this many rows (default: the surrogate's bucket, see `Surrogate.bucket_steps`).
    `standardize=False`: y is already on the models' standardized scale and is modelled as given
    (what simulation-based calibration needs, `inference.calibrate`).
    `chains=(lo, hi)`: run only chains lo..hi-1 of the `num_chains` (their keys unchanged; `init` then holds
    those chains). `workers`: an `inference.ChainWorkers`; the chains are split into contiguous blocks, one per
    child process, run side by side and joined in order. Same seed, same draws for a given number of workers;
    against a run in this process they differ in the last bits (a chain alone is compiled unbatched), which
    MCMC then amplifies, as it would any rounding difference.
    """
    for name, v in (("num_warmup", num_warmup), ("num_samples", num_samples), ("num_chains", num_chains),
                    ("thinning", thinning)):
        if not isinstance(v, (int, np.integer)) or v < (0 if name == "num_warmup" else 1):
            raise ValueError(f"{name} must be an integer >= {0 if name == 'num_warmup' else 1}, got {v!r}")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != surrogate.space.dim:
        raise ValueError(f"X must be encoded rows [n, {surrogate.space.dim}], got shape {X.shape}")
    if chains is not None:
        if not (isinstance(chains, tuple) and len(chains) == 2
                and all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in chains)
                and 0 <= chains[0] < chains[1] <= num_chains):
            raise ValueError(f"chains must be a pair (lo, hi) with 0 <= lo < hi <= num_chains = {num_chains}, "
                             f"got {chains!r}")
        chains = (int(chains[0]), int(chains[1]))
    if isinstance(init, Posterior):
        if init.surrogate != surrogate:
            raise ValueError("init must be a Posterior of an equal surrogate (same model and space)")
        init = init.last_state
    expected = num_chains if chains is None else chains[1] - chains[0]
    if init is not None and int(np.shape(init.step_size)[0]) != expected:
        raise ValueError(f"init has {int(np.shape(init.step_size)[0])} chains, asked for {expected}")
    move_pairs = resolve_moves(surrogate, moves)  # a bad mapping is refused here, before any work
    size = bucket_size(X.shape[0], steps=surrogate.bucket_steps) if size is None else size
    data = make_data(X, y, size=size, fill_row=surrogate.space.fill_row(), standardize=standardize)
    key = as_key(key)
    if workers is not None and chains is None:
        return _sample_in_workers(workers, surrogate, X, y, data, key, init, moves, standardize, num_chains,
                                  dict(num_warmup=num_warmup, num_samples=num_samples, thinning=thinning,
                                       max_tree_depth=max_tree_depth, target_accept_prob=target_accept_prob))
    cold = init is None
    run = compiled("sample", _build_run, surrogate, move_pairs, int(num_warmup), int(num_samples), int(num_chains),
                   int(thinning), cold, int(max_tree_depth), float(target_accept_prob), chains)
    t0 = time.perf_counter()
    if cold:
        out = run(key, data)
    else:
        out = run(key, init.z, init.discrete, init.step_size, init.inverse_mass_matrix, data)
    values, stats, move_stats, last = jax.tree_util.tree_map(np.asarray, out)
    return Posterior(surrogate=surrogate, data=data, X=X, y=np.asarray(y, dtype=np.float64).reshape(-1),
                     samples=values, stats=stats, move_stats=move_stats, last_state=WarmStart(*last),
                     seconds=time.perf_counter() - t0)


def chain_blocks(num_chains: int, n_workers: int) -> list[tuple[int, int]]:
    """Contiguous (lo, hi) blocks of the chains, one per worker used (at most one per chain), sizes within one."""
    k = min(int(n_workers), int(num_chains))
    edges = [round(i * num_chains / k) for i in range(k + 1)]
    return [(edges[i], edges[i + 1]) for i in range(k)]


def _sample_in_workers(workers, surrogate, X, y, data, key, init, moves, standardize, num_chains, settings):
    """`sample` with its chains split over the processes of `workers` (see `sample`'s `workers`); `data` is the
    padded data the workers will build, made here for the returned Posterior."""
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    key = np.asarray(key)
    requests = []
    for lo, hi in chain_blocks(num_chains, workers.size):
        part = None if init is None else jax.tree_util.tree_map(lambda a: np.asarray(a)[lo:hi], init)
        requests.append(dict(surrogate=surrogate, X=X, y=y, key=key, num_chains=int(num_chains), init=part,
                             moves=moves, size=int(data.X.shape[0]), standardize=standardize, chains=(lo, hi),
                             **settings))
    t0 = time.perf_counter()
    parts = workers.map("sample", requests)
    seconds = time.perf_counter() - t0
    join = lambda *groups: jax.tree_util.tree_map(lambda *a: np.concatenate(a, axis=0), *groups)  # noqa: E731
    values, stats, move_stats, last = (join(*[p[i] for p in parts]) for i in range(4))
    return Posterior(surrogate=surrogate, data=data, X=X, y=y, samples=values, stats=stats, move_stats=move_stats,
                     last_state=WarmStart(*last), seconds=seconds)


def sample_parts(**request) -> tuple:
    """What a chain worker returns for one `sample` request: (draws, stats, move stats, warm start) as NumPy."""
    post = sample(**request)
    return post.samples, post.stats, post.move_stats, tuple(post.last_state)
