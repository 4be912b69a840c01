"""Problems with a failure region: the objective raises there, as a diverging simulation or training run does.

Where evaluations fail, a model that leaves the failures out of its data keeps the prior's uncertainty over the
failing region, so an acquisition may return there again and again; `BayesOpt(on_failure="worst")` fits each
failed configuration at the worst value so far instead. Each region below leaves the optimum feasible, so the
known optimum and the regret are those of the problem it wraps. Defined on 2026-12-07, before any run on them:
- ``hartmann6_fail``: Hartmann-6, failing where x0 > 0.75 (a quarter of the box; the minimizer has x0 = 0.20).
- ``styblinski_tang4_fail``: Styblinski–Tang in 4-D, failing where x0 > 3 (a fifth of the box; the minimizer
  has x0 = -2.90, and a local minimum at x0 = 2.75 lies beside the region).
- ``jenatton_small_fail``: Jenatton et al.'s small function, failing where the chosen leaf's parameter
  (x4..x7, in [-1, 1]) is above 0.5 (a quarter of every leaf; the minimizer has x4 = 0).
Two more, defined after those runs (18:37 UTC) and before any run on them, with the region's edge beside the
minimizer, the case where fitting failures at the worst value could push the search off the best points:
- ``hartmann6_fail_edge``: Hartmann-6 failing where x0 < 0.18 (the minimizer has x0 = 0.2017).
- ``styblinski_tang4_fail_edge``: Styblinski–Tang-4 failing where x0 < -3.1 (the minimizer has x0 = -2.9035).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from optim.bench.problems.base import Problem
from optim.bench.problems.jenatton import jenatton_small
from optim.bench.problems.synthetic import hartmann6, styblinski_tang

LEAF_PARAMETERS = ("x4", "x5", "x6", "x7")


class FailedRun(FloatingPointError):
    """The objective's failure in its failure region (recorded by the loop as a failed evaluation)."""


def with_failure_region(problem: Problem, name: str, fails: Callable[[dict], bool], region: str) -> Problem:
    """`problem` renamed `name`, raising FailedRun wherever `fails(config)` holds (`region` says where)."""
    value = problem.fn

    def fn(config: dict) -> float:
        if fails(config):
            raise FailedRun(f"the run failed ({region})")
        return value(config)
    return dataclasses.replace(problem, name=name, fn=fn, info={**problem.info, "failure_region": region})


def hartmann6_fail(noise_std: float = 0.0, seed: int = 0) -> Problem:
    return with_failure_region(hartmann6(noise_std, seed), "hartmann6_fail", lambda c: c["x0"] > 0.75, "x0 > 0.75")


def styblinski_tang4_fail(noise_std: float = 0.0, seed: int = 0) -> Problem:
    return with_failure_region(styblinski_tang(4, noise_std, seed), "styblinski_tang4_fail", lambda c: c["x0"] > 3.0,
                               "x0 > 3")


def jenatton_small_fail(noise_std: float = 0.0, seed: int = 0) -> Problem:
    return with_failure_region(jenatton_small(True, noise_std, seed), "jenatton_small_fail",
                               lambda c: any(c.get(k, 0.0) > 0.5 for k in LEAF_PARAMETERS), "leaf parameter > 0.5")


def hartmann6_fail_edge(noise_std: float = 0.0, seed: int = 0) -> Problem:
    return with_failure_region(hartmann6(noise_std, seed), "hartmann6_fail_edge", lambda c: c["x0"] < 0.18,
                               "x0 < 0.18")


def styblinski_tang4_fail_edge(noise_std: float = 0.0, seed: int = 0) -> Problem:
    return with_failure_region(styblinski_tang(4, noise_std, seed), "styblinski_tang4_fail_edge",
                               lambda c: c["x0"] < -3.1, "x0 < -3.1")
