"""Choose a surrogate for your data by PSIS-LOO: the flat `gp` against the tree-aware `addtree`.

Both models are fitted to the same 30 noisy evaluations of Jenatton et al.'s conditional function.
Each posterior's log_likelihood group holds log p(y_i | y_-i, theta), the leave-one-out terms of a GP
(its observations are not independent given theta), so ArviZ's Pareto-smoothed importance sampling
estimates each model's expected log predictive density on a new point (elpd_loo) without refitting.
A higher elpd_loo predicts better; ``elpd_diff`` against its standard error ``dse`` says whether the
difference is real. Works with ArviZ 1.x (DataTree) and 0.x (InferenceData) alike.
Run: python examples/compare_models.py
"""

import os
import warnings

import arviz as az
import numpy as np

import inference
from optim.bench import get_problem
from zoo import GP
from zoo.addtree import AddTree

FAST = os.environ.get("TREEZOO_EXAMPLES_FAST") == "1"

problem = get_problem("jenatton_small", noise_std=0.05, seed=0)
configs = problem.space.sobol(30, seed=3)
X = problem.space.encode(configs)
y = np.array([problem(c) for c in configs])

# fast mode: a quick fit with 32 draws (Pareto smoothing needs at least 25); otherwise a real run
settings = (dict(num_warmup=80, num_samples=16, num_chains=2, max_tree_depth=5) if FAST
            else dict(num_warmup=500, num_samples=500, num_chains=4))
posteriors = {name: inference.sample(model, X, y, key=0, **settings).to_arviz()
              for name, model in [("gp", GP(problem.space)), ("addtree", AddTree(problem.space))]}

with warnings.catch_warnings():
    if FAST:  # 32 draws are too few for Pareto smoothing to be reliable; ArviZ says so for every point
        warnings.simplefilter("ignore")
    for name, idata in posteriors.items():
        print(f"--- {name}")
        print(az.loo(idata))
    table = az.compare(posteriors)
print(table)
best = table.index[0]
print(f"PSIS-LOO prefers {best!r}")
