"""Mixed-space problems of the BARK paper (003 Sec. 7, App. D; DESIGN.md definitions)."""

from __future__ import annotations

import functools
import itertools
import math

import jax
import numpy as np
from scipy.optimize import minimize as scipy_minimize

from optim.bench.problems.base import Problem
from optim.mip import sum_of_trees_minimum
from zoo.heap_trees import BARTPrior, TreeSpec, compiled_router
from zoo.space import Categorical, Integer, Real, Space

# --------------------------------------------------------------------------- TreeFunction


def _tree_function_space(categorical: bool) -> Space:
    params = [Real(f"x{i}", 0.0, 1.0) for i in range(10)]
    if categorical:
        params += [Categorical(f"c{i}", tuple(range(5))) for i in range(10)]
    return Space(params)


@functools.lru_cache(maxsize=8)
def _tree_function_parts(categorical: bool, function_seed: int, num_trees: int = 50):
    space = _tree_function_space(categorical)
    spec = TreeSpec.from_space(space, max_depth=6, alpha=0.95, beta=2.0)
    forest = np.asarray(BARTPrior(spec, num_trees).sample(jax.random.PRNGKey(function_seed)))
    values = np.random.default_rng(function_seed).standard_normal(forest.shape[:2])
    return space, spec, forest, values


def tree_function(categorical: bool = False, noise_std: float = 0.0, seed: int = 0, function_seed: int = 0) -> Problem:
    """TreeFunction (003): a sum of 50 trees from the BART prior (alpha 0.95, beta 2) with N(0, 1) leaf
    values on [0, 1]^10 (plus 10 five-way categoricals in the `categorical` variant), fixed by
    `function_seed`. The optimum is computed exactly by a MILP over the trees' leaf boxes."""
    space = _tree_function_space(bool(categorical))

    @functools.cache
    def evaluator():  # the forest is drawn (and the router compiled) at the first evaluation, not at listing
        _, spec, forest, values = _tree_function_parts(bool(categorical), int(function_seed))
        return compiled_router(spec), forest, values

    def f(config):
        router, forest, values = evaluator()
        leaves = np.asarray(router(forest, space.encode([config])))[:, 0]
        return float(np.sum(values[np.arange(len(forest)), leaves]))

    optimum = functools.partial(_cached_minimum, bool(categorical), int(function_seed))  # computed on first read
    name = "tree_function_cat" if categorical else "tree_function"
    return Problem(name, space, f, optimum, noise_std, seed)


@functools.lru_cache(maxsize=8)
def _cached_minimum(categorical: bool, function_seed: int) -> float:
    _, spec, forest, values = _tree_function_parts(categorical, function_seed)
    return sum_of_trees_minimum(forest, values, spec)


# --------------------------------------------------------------------------- DiscreteAckley
def ackley(x: np.ndarray, a: float = 20.0, b: float = 0.2, c: float = 2 * math.pi) -> float:
    d = len(x)
    return float(-a * math.exp(-b * math.sqrt(np.sum(x**2) / d)) - math.exp(np.sum(np.cos(c * x)) / d) + a + math.e)


#: best reachable value: binaries at +-1 and reals at 0 (cos(2 pi * +-1) = 1), so the Ackley sum of
#: squares is 10 and the cosine sum is 13
DISCRETE_ACKLEY_MIN = 20.0 * (1.0 - math.exp(-0.2 * math.sqrt(10.0 / 13.0)))


def discrete_ackley(noise_std: float = 0.0, seed: int = 0) -> Problem:
    """DiscreteAckley (003): 10 binary inputs mapped to {-1, 1} and 3 reals in [-1, 1]; Ackley on the
    13-vector. Minimum 20 (1 - exp(-0.2 sqrt(10/13))) = 3.21777, exact."""
    params = [Integer(f"b{i}", 0, 1) for i in range(10)] + [Real(f"r{i}", -1.0, 1.0) for i in range(3)]
    space = Space(params)

    def f(c):
        x = np.array([2.0 * c[f"b{i}"] - 1.0 for i in range(10)] + [c[f"r{i}"] for i in range(3)])
        return ackley(x)
    return Problem("discrete_ackley", space, f, DISCRETE_ACKLEY_MIN, noise_std, seed)


# --------------------------------------------------------------------------- DiscreteRosenbrock
def rosenbrock(x: np.ndarray) -> float:
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))


@functools.lru_cache(maxsize=1)
def discrete_rosenbrock_minimum() -> float:
    """Best reachable value: exhaustive search over the integer chain x1..x6 (4^6 values) and, for each
    x6, a multi-start L-BFGS-B minimization of the terms that involve the reals x7..x10."""
    levels = np.array([-5.0, 0.0, 5.0, 10.0])
    best_tail = {}
    starts = np.random.default_rng(0).uniform(-5, 10, size=(64, 4))
    for x6 in levels:
        def tail(r, x6=x6):
            return rosenbrock(np.concatenate([[x6], r]))
        best_tail[x6] = min(scipy_minimize(tail, s, method="L-BFGS-B", bounds=[(-5, 10)] * 4,
                                           options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 2000}).fun
                            for s in starts)
    best = math.inf
    for head in itertools.product(levels, repeat=6):
        head = np.array(head)
        best = min(best, rosenbrock(head) + best_tail[head[-1]])
    return float(best)


def discrete_rosenbrock(noise_std: float = 0.0, seed: int = 0) -> Problem:
    """DiscreteRosenbrock (003): 6 integers in {-1, 0, 1, 2} scaled by 5 and 4 reals in [-5, 10];
    Rosenbrock on the 10-vector (integers first). Regret against the best reachable value."""
    params = [Integer(f"i{k}", -1, 2) for k in range(6)] + [Real(f"r{k}", -5.0, 10.0) for k in range(4)]
    space = Space(params)

    def f(c):
        return rosenbrock(np.array([5.0 * c[f"i{k}"] for k in range(6)] + [c[f"r{k}"] for k in range(4)]))
    return Problem("discrete_rosenbrock", space, f, discrete_rosenbrock_minimum, noise_std, seed)


# --------------------------------------------------------------------------- PestControl
_PRICE = {1: 1.0, 2: 0.8, 3: 0.7, 4: 0.5}
_MAX_DISCOUNT = {1: 0.2, 2: 0.3, 3: 0.3, 4: 0.0}
_TOLERANCE_RATE = {1: 1.0 / 7.0, 2: 2.5 / 7.0, 3: 2.0 / 7.0, 4: 0.5 / 7.0}
_CONTROL_BETA = {1: 2.0 / 7.0, 2: 3.0 / 7.0, 3: 3.0 / 7.0, 4: 5.0 / 7.0}


def pest_control_value(choices, n_simulations: int = 100, internal_seed: int = 0) -> float:
    """Cost of a pesticide schedule (Oh et al. 2019, as used in 003): at each of the stages choose none (0)
    or one of four pesticides. Pests spread at Beta(1, 17/3) rates; a pesticide kills a Beta(1, b_k)
    fraction, pests grow tolerant to it as it is reused, and repeated purchases get a discount.
    Cost = money spent + the mean number of stages where the infested fraction exceeds 0.1, over
    `n_simulations` Monte Carlo runs drawn from a fixed internal seed (so an evaluation is deterministic;
    every schedule sees the same random numbers)."""
    x = np.asarray(choices, dtype=np.int64)
    rng = np.random.default_rng(internal_seed)
    n_stages = len(x)
    # common random numbers: every schedule sees the same uniforms; Beta(1, b) by inversion, 1 - (1 - u)^(1/b)
    beta1 = lambda u, b: 1.0 - (1.0 - u) ** (1.0 / b)  # noqa: E731
    frac = beta1(rng.random(n_simulations), 30.0)
    u_spread, u_kill = rng.random((n_stages, n_simulations)), rng.random((n_stages, n_simulations))
    control_beta = dict(_CONTROL_BETA)
    paid, above = 0.0, 0.0
    for stage in range(n_stages):
        k = int(x[stage])
        if k > 0:
            nxt = (1.0 - beta1(u_kill[stage], control_beta[k])) * frac
            control_beta[k] += _TOLERANCE_RATE[k] / n_stages
            paid += _PRICE[k] * (1.0 - _MAX_DISCOUNT[k] / n_stages * float(np.sum(x == k)))
        else:
            spread = beta1(u_spread[stage], 17.0 / 3.0)
            nxt = spread * (1.0 - frac) + frac
        above += float(np.mean(frac > 0.1))
        frac = nxt
    return paid + above


def pest_control(noise_std: float = 0.0, seed: int = 0, stages: int = 25) -> Problem:
    """PestControl (003): 25 stages x 5 choices (categorical); unknown optimum (best values reported)."""
    space = Space([Categorical(f"stage{i}", tuple(range(5))) for i in range(stages)])
    return Problem("pest_control", space, lambda c: pest_control_value([c[f"stage{i}"] for i in range(stages)]),
                   None, noise_std, seed)
