"""The adapter interface every peer optimizer implements for `treezoo-bench`.

A peer runs a whole minimization of a `Problem` under a budget, starting by evaluating the given
initial design through its own API, and returns the same history records as `optim.minimize`
(config, value, status, source, and `fit_seconds`: its own overhead per suggestion).
"""

from __future__ import annotations

import importlib.util
import time

from optim.bench.problems.base import Problem


class Peer:
    """Subclass and write `suggest_loop`; list the import names it needs in `requires`."""

    name: str = "peer"
    requires: tuple = ()
    install_hint: str = 'pip install ".[bench]"'

    def missing(self) -> list[str]:
        """Import names that cannot be found (empty when the peer can run)."""
        return [m for m in self.requires if importlib.util.find_spec(m) is None]

    def run(self, problem: Problem, budget: int, seed: int, initial: list[dict]) -> list[dict]:
        raise NotImplementedError


def evaluate(problem: Problem, config: dict) -> tuple[float | None, str, str | None]:
    """(value, status, error): a raising objective or a NaN/inf value is a failed evaluation."""
    try:
        value = float(problem(config))
    except Exception as exc:
        return None, "error", f"{type(exc).__name__}: {exc}"
    if value != value or value in (float("inf"), float("-inf")):
        return value, "nonfinite", None
    return value, "ok", None


def record(config, value, status, error, source, suggest_seconds) -> dict:
    return {"config": config, "value": value, "status": status, "error": error, "source": source,
            "fit_seconds": suggest_seconds, "acq_seconds": 0.0, "acq_value": None}


class Stopwatch:
    """Time spent by the peer itself (suggesting), excluding objective evaluations."""

    def __init__(self):
        self.t = time.perf_counter()

    def lap(self) -> float:
        now = time.perf_counter()
        dt, self.t = now - self.t, now
        return dt
