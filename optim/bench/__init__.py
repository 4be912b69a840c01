"""Benchmark tooling, kept apart from the library: problems, peer optimizers' adapters, the
`treezoo-bench` runner, its report and compile diagnostics. Problems and peers use only the public API
of `zoo`, `inference` and `optim`."""

from optim.bench.problems import PROBLEMS, Problem, get_problem
from optim.bench.runner import main

__all__ = ["PROBLEMS", "Problem", "get_problem", "main"]
