"""Built-in benchmark problems (DESIGN.md definitions), by name."""

from __future__ import annotations

from functools import partial

from optim.bench.problems.additive import additive_gp, hartmann6_permuted
from optim.bench.problems.base import Problem
from optim.bench.problems.conditional_family import FAMILY_SIZE, HELD_OUT, conditional_family
from optim.bench.problems.failing import (hartmann6_fail, hartmann6_fail_edge, jenatton_small_fail,
                                          styblinski_tang4_fail, styblinski_tang4_fail_edge)
from optim.bench.problems.jenatton import jenatton_large, jenatton_small
from optim.bench.problems.mixed import discrete_ackley, discrete_rosenbrock, pest_control, tree_function
from optim.bench.problems.ml import compression, mlp_tuning, svr_diabetes
from optim.bench.problems.nonstationary import bowl_basin4, gramacy_lee1d, gramacy_lee2d, rkhs1d
from optim.bench.problems.synthetic import exp2d, hartmann6, styblinski_tang

PROBLEMS = {
    "jenatton_small": partial(jenatton_small, shared=True),
    "jenatton_small_noshared": partial(jenatton_small, shared=False),
    "jenatton_large": partial(jenatton_large, shared=True),
    "jenatton_large_noshared": partial(jenatton_large, shared=False),
    "exp2d": exp2d,
    "hartmann6": hartmann6,
    "hartmann6_aug20": partial(hartmann6, extra_dims=14),
    "styblinski_tang2": partial(styblinski_tang, dim=2),
    "styblinski_tang4_aug20": partial(styblinski_tang, dim=4, extra_dims=16),
    # need the `ml` extra (scikit-learn), imported on first evaluation
    "mlp_breast_cancer": partial(mlp_tuning, dataset="breast_cancer"),
    "mlp_digits": partial(mlp_tuning, dataset="digits"),
    "compression": compression,
    "svr_diabetes": svr_diabetes,
    # mixed spaces (003)
    "tree_function": tree_function,
    "tree_function_cat": partial(tree_function, categorical=True),
    "discrete_ackley": discrete_ackley,
    "discrete_rosenbrock": discrete_rosenbrock,
    "pest_control": pest_control,
    # high-dimensional, additive (002)
    "additive_star20": partial(additive_gp, "star", 20),
    "additive_tree50": partial(additive_gp, "tree", 50),
    "additive_grid25": partial(additive_gp, "grid", 25),
    "additive_partition12": partial(additive_gp, "partition", 12),
    "additive_path100": partial(additive_gp, "path", 100),
    "styblinski_tang20": partial(styblinski_tang, dim=20),
    "styblinski_tang50": partial(styblinski_tang, dim=50),
    "styblinski_tang100": partial(styblinski_tang, dim=100),
    "hartmann6_perm20": partial(hartmann6_permuted, extra_dims=14),
    # non-stationary (004)
    "rkhs1d": rkhs1d,
    "gramacy_lee1d": gramacy_lee1d,
    "gramacy_lee2d": gramacy_lee2d,
    "bowl_basin4": bowl_basin4,
    # failure regions: the objective raises there (optim.bench.problems.failing)
    "hartmann6_fail": hartmann6_fail,
    "styblinski_tang4_fail": styblinski_tang4_fail,
    "jenatton_small_fail": jenatton_small_fail,
    "hartmann6_fail_edge": hartmann6_fail_edge,
    "styblinski_tang4_fail_edge": styblinski_tang4_fail_edge,
    # a seeded family of conditional problems (issue 23); instances HELD_OUT are never tuned on
    **{f"conditional_{i}": partial(conditional_family, i) for i in range(FAMILY_SIZE)},
}


def get_problem(name: str, noise_std: float = 0.0, seed: int = 0) -> Problem:
    """A fresh problem instance by name (see PROBLEMS)."""
    if name not in PROBLEMS:
        raise ValueError(f"unknown problem {name!r}; available: {sorted(PROBLEMS)}")
    return PROBLEMS[name](noise_std=noise_std, seed=seed)


class ProblemByName:
    """A built-in problem that pickles as its name and settings, for evaluation in worker processes (the
    problems hold local functions, which do not pickle): each process builds it at its first call.
    `sleep` seconds are spent before each evaluation (a stand-in for an expensive experiment). Noise
    comes from a stream per process (seeded by the seed and the process id): independent across
    workers, not reproducible."""

    def __init__(self, name: str, noise_std: float = 0.0, seed: int = 0, sleep: float = 0.0):
        get_problem(name)  # an unknown name fails here, in the parent
        self.name, self.noise_std, self.seed, self.sleep = name, float(noise_std), int(seed), float(sleep)
        self._built = None

    def __getstate__(self):
        return {"name": self.name, "noise_std": self.noise_std, "seed": self.seed, "sleep": self.sleep}

    def __setstate__(self, state):
        self.__dict__.update(state, _built=None)

    def __call__(self, config: dict) -> float:
        import os
        import time

        import numpy as np

        if self._built is None:
            self._built = (get_problem(self.name, seed=self.seed), np.random.default_rng([self.seed, os.getpid()]))
        problem, rng = self._built
        if self.sleep > 0:
            time.sleep(self.sleep)
        value = problem(config)
        return value + self.noise_std * float(rng.standard_normal()) if self.noise_std > 0 else value


__all__ = ["Problem", "PROBLEMS", "get_problem", "ProblemByName", "jenatton_small", "jenatton_large", "exp2d",
           "hartmann6", "styblinski_tang",
           "mlp_tuning", "compression", "svr_diabetes", "tree_function", "discrete_ackley", "discrete_rosenbrock", "pest_control",
           "additive_gp", "hartmann6_permuted", "rkhs1d", "gramacy_lee1d", "gramacy_lee2d", "bowl_basin4",
           "conditional_family", "FAMILY_SIZE", "HELD_OUT"]
