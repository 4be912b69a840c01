"""A benchmark problem: a space, an objective on configurations, its known optimum, optional noise."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from zoo.space import Space


class _LazyOptimum:
    """The `optimum` field: a number, None, or a zero-argument function computed on first read and kept
    (an exact optimum can take seconds, e.g. a MILP; building or listing a problem should not pay it)."""

    def __set_name__(self, owner, name):
        self._slot = "_" + name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return None  # the dataclass default
        value = obj.__dict__[self._slot]
        if callable(value):
            value = obj.__dict__[self._slot] = float(value())
        return value

    def __set__(self, obj, value):
        obj.__dict__[self._slot] = value

    def is_resolved(self, obj) -> bool:
        return not callable(obj.__dict__[self._slot])


@dataclass
class Problem:
    """Minimization problem. Calling it evaluates the objective (plus N(0, noise_std^2) if noisy)."""

    name: str
    space: Space
    fn: Callable[[dict], float]
    optimum: float | Callable[[], float] | None = _LazyOptimum()  # best reachable value, for regret
    noise_std: float = 0.0
    seed: int = 0
    info: dict = field(default_factory=dict)  # problem facts a benchmark may check against (a true graph)
    _rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self):
        self._rng = np.random.default_rng(self.seed)

    def __call__(self, config: dict) -> float:
        value = float(self.fn(self.space.validate(config)))
        if self.noise_std > 0:
            value += self.noise_std * float(self._rng.standard_normal())
        return value

    @property
    def optimum_computed(self) -> bool:
        """Whether the optimum is a number already (or None), i.e. reading it costs nothing."""
        return type(self).__dict__["optimum"].is_resolved(self)

    def regret(self, value: float) -> float:
        """value - optimum (needs a known optimum)."""
        if self.optimum is None:
            raise ValueError(f"{self.name} has no known optimum")
        return float(value) - self.optimum
