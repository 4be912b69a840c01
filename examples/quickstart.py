"""Quickstart: minimize a built-in conditional problem with the fully Bayesian GP.

Jenatton et al.'s tree-structured function: x1 picks a subtree, x2/x3 pick a leaf, each leaf owns
one real parameter, and each subtree a shared one. Optimum 0.1. Run: python examples/quickstart.py
(writes quickstart.png, the run's convergence plot, where matplotlib is installed).
"""

import os

from optim import minimize
from optim.bench import get_problem

FAST = os.environ.get("TREEZOO_EXAMPLES_FAST") == "1"  # the test suite runs every example quickly

problem = get_problem("jenatton_small")
print(problem.space)
result = minimize(problem, problem.space, surrogate="gp", budget=6 if FAST else 30, seed=0,
                  n_init=5, progress=not FAST)
print(result)
print(f"regret {problem.regret(result.best_value):.2e}")
sources = [h["source"] for h in result.history]
print("evaluations by source:", {s: sources.count(s) for s in set(sources)})
try:  # the regret of each evaluation and the best so far, on a log scale
    path = os.path.join(os.environ.get("TREEZOO_EXAMPLES_OUT", "."), "quickstart.png")
    result.plot(problem.optimum, path=path)
    print(f"convergence plot: {path}")
except ImportError as exc:
    print(exc)
