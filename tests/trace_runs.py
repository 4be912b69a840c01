"""Short seeded BO runs of every registered surrogate, whose full traces `test_traces.py` pins.

`python -m tests.trace_runs` rewrites tests/data/traces.json (do it only when a change of numbers is
intended and explained). The runs share their compiled functions with other tests: `gp` runs with the
default settings as examples/quickstart.py does, the tree models with the FAST settings that the
Add-Tree and Jenatton fixtures sample with.
"""

from __future__ import annotations

import json
import pathlib

from optim import SamplerSettings, minimize
from optim.bench import get_problem
from optim.mip import MIPConfig
from tests.conftest import FAST_OPTIMIZER, FAST_SAMPLER
from zoo import Categorical, Integer, Real, Space

PATH = pathlib.Path(__file__).with_name("data") / "traces.json"

MIXED = Space([Real("a", 0.0, 1.0), Integer("k", 0, 3), Categorical("c", ("x", "y", "z"))])


def mixed_objective(c):
    """A bowl in a, a line in k and a category offset: BARK and the GP on a mixed flat space."""
    return (c["a"] - 0.3) ** 2 + 0.1 * c["k"] + (0.0 if c["c"] == "y" else 0.5)


FAST = {"sampler": FAST_SAMPLER, "optimizer": FAST_OPTIMIZER}

#: name -> (problem or None for MIXED, surrogate name, minimize settings)
RUNS = {
    "gp": ("jenatton_small", "gp", {}),  # the defaults, as in examples/quickstart.py
    "addtree": ("jenatton_small", "addtree", FAST),
    "addtree_ucb": ("jenatton_small", "addtree", {**FAST, "acquisition": "ucb"}),
    "addtree_shared": ("jenatton_small", "addtree_shared", FAST),
    "jenatton": ("jenatton_small", "jenatton", FAST),
    "independent": ("jenatton_small", "independent", FAST),
    "random": ("jenatton_small", "random", {}),
    # SCIP with no time: its point is the warm start's leaf box, so the run does not depend on the clock
    "bark": (None, "bark", {"optimizer": MIPConfig(time_limit=0.0, n_pool=64, max_sweeps=2),
                            "sampler": SamplerSettings(num_chains=2, cold_warmup=40, warm_warmup=0, num_samples=2,
                                                       thinning=5)}),
}
BUDGET, N_INIT, SEED = 7, 5, 0  # two BO steps: the cold fit and one warm-started fit


def run(name: str) -> list[dict]:
    """The history of one run."""
    problem, surrogate, settings = RUNS[name]
    if problem is None:
        objective, space = mixed_objective, MIXED
    else:
        p = get_problem(problem)
        objective, space = p, p.space
    return minimize(objective, space, surrogate, budget=BUDGET, seed=SEED, n_init=N_INIT, **settings).history


def trace(history: list[dict]) -> list[dict]:
    """What is pinned of a history: per evaluation its config, value, source and acquisition value."""
    return [{"config": h["config"], "value": h["value"], "source": h["source"], "acq_value": h["acq_value"]}
            for h in history]


if __name__ == "__main__":
    PATH.parent.mkdir(exist_ok=True)
    traces = {name: trace(run(name)) for name in RUNS}
    PATH.write_text(json.dumps(traces, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PATH}")
