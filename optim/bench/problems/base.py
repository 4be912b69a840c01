"""A benchmark problem: a space, an objective on configurations, its known optimum, optional noise."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from zoo.space import Space


@dataclass
class Problem:
    """Minimization problem. Calling it evaluates the objective (plus N(0, noise_std^2) if noisy)."""

    name: str
    space: Space
    fn: Callable[[dict], float]
    optimum: float | None = None  # best reachable value, for regret
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

    def regret(self, value: float) -> float:
        """value - optimum (needs a known optimum)."""
        if self.optimum is None:
            raise ValueError(f"{self.name} has no known optimum")
        return float(value) - self.optimum
