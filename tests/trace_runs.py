"""Short seeded BO runs of every registered surrogate, whose full traces `test_traces.py` pins.

`python -m tests.trace_runs [NAME ...]` rewrites tests/data/traces.json (every run, or the named ones; do it
only when a change of numbers is intended and explained). The runs share their compiled functions with other
tests: `gp` runs with the default settings as examples/quickstart.py does, the tree models with the FAST
settings that the Add-Tree and Jenatton fixtures sample with.

The same seed gives the same run bit for bit only on the same processor with the same numerical
libraries: XLA compiles for the host's instruction set, and a last-bit difference grows through
hundreds of MCMC steps into another run. The file therefore records the `fingerprint` of the machine,
libraries and XLA flags (tests/xla_test_flags.py) it was written with, and the pinned traces are checked only
where it matches.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import platform
from importlib.metadata import version

import tests.xla_test_flags  # noqa: F401  (before JAX starts: the traces are pinned under the suite's XLA flags)

from optim import SamplerSettings, minimize
from optim.bench import get_problem
from optim.grid import GridConfig
from optim.message_passing import MessagePassingConfig
from optim.mip import MIPConfig
from tests.conftest import FAST_OPTIMIZER, FAST_SAMPLER
from zoo import Categorical, Integer, Real, Space

PATH = pathlib.Path(__file__).with_name("data") / "traces.json"

MIXED = Space([Real("a", 0.0, 1.0), Integer("k", 0, 3), Categorical("c", ("x", "y", "z"))])


def mixed_objective(c):
    """A bowl in a, a line in k and a category offset: BARK and the GP on a mixed flat space."""
    return (c["a"] - 0.3) ** 2 + 0.1 * c["k"] + (0.0 if c["c"] == "y" else 0.5)


FLAT6 = Space([Real(f"x{i}", 0.0, 1.0) for i in range(6)])


def additive_objective(c):
    """A cheap additive function on [0, 1]^6: 2-D parts on (x0, x1) and (x2, x3), a 1-D part on x4."""
    x = [c[f"x{i}"] for i in range(6)]
    return (x[0] - 0.3) ** 2 + 2 * (x[0] - x[1]) ** 2 + (x[2] - 0.7) ** 2 + (x[2] + x[3] - 1.2) ** 2 + 0.5 * (x[4] - 0.5) ** 2


FAST = {"sampler": FAST_SAMPLER, "optimizer": FAST_OPTIMIZER}
FAST_MESSAGE_PASSING = MessagePassingConfig(structures=2, repeats=1, n_raw=64, n_polish=2, maxiter=30, n_local=32)

N_INIT, SEED = 5, 0
COLD, WARM = N_INIT + 1, N_INIT + 2  # budgets: one BO step (the cold fit), or two (and a warm-started fit)

#: name -> (problem name, or the (objective, space) pair, surrogate name, minimize settings, budget). The warm-started fit is
#: pinned for the GP and BARK (the two sampler kernels); the tree models' runs stop after their cold fit,
#: which keeps the default suite within its time (each warm fit is one more compiled sampler run).
RUNS = {
    "gp": ("jenatton_small", "gp", {}, WARM),  # the defaults, as in examples/quickstart.py
    "addtree": ("jenatton_small", "addtree", FAST, COLD),
    "addtree_ucb": ("jenatton_small", "addtree", {**FAST, "acquisition": "ucb"}, COLD),
    "addtree_shared": ("jenatton_small", "addtree_shared", FAST, COLD),
    "addtree_yj": ("jenatton_small", "addtree_yj", FAST, COLD),  # the warp's power sampled: its own compiled sampler
    "gp_yj": ("jenatton_small", "gp_yj", FAST, COLD),
    "addtree_yjw": ("jenatton_small", "addtree_yjw", FAST, COLD),  # the wide warp: its inverse bisects
    "gp_yjw": ("jenatton_small", "gp_yjw", FAST, COLD),
    "jenatton": ("jenatton_small", "jenatton", FAST, COLD),
    "independent": ("jenatton_small", "independent", FAST, COLD),
    "random": ("jenatton_small", "random", {}, WARM),
    # SCIP with no time: its point is the warm start's leaf box, so the run does not depend on the clock
    "gp_saas": ((additive_objective, FLAT6), "gp_saas", FAST, COLD),
    "additive": ((additive_objective, FLAT6), "additive", {"sampler": FAST_SAMPLER, "optimizer": FAST_MESSAGE_PASSING},
                 COLD),
    "treed": ("rkhs1d", "treed", {"sampler": FAST_SAMPLER, "optimizer": GridConfig(n_grid=512, n_polish=2, maxiter=20)},
              COLD),
    "bark": ((mixed_objective, MIXED), "bark", {"optimizer": MIPConfig(time_limit=0.0, n_pool=64, max_sweeps=2),
                            "sampler": SamplerSettings(num_chains=2, cold_warmup=40, warm_warmup=0, num_samples=2,
                                                       thinning=5)}, WARM),
}


def fingerprint() -> dict:
    """The processor (model and instruction-set flags, hashed), the numerical libraries' versions and XLA_FLAGS."""
    cpu = {}
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "flags") and key.strip() not in cpu:
                cpu[key.strip()] = value.strip()
    except OSError:
        cpu["model name"] = platform.processor()
    return {"cpu": cpu.get("model name", ""), "cpu_flags": hashlib.sha256(cpu.get("flags", "").encode()).hexdigest()[:16],
            "machine": platform.machine(), "python": platform.python_version(),
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
            **{pkg: version(pkg) for pkg in ("jax", "jaxlib", "numpy", "scipy", "numpyro", "PySCIPOpt")}}


def run(name: str) -> list[dict]:
    """The history of one run."""
    problem, surrogate, settings, budget = RUNS[name]
    if isinstance(problem, tuple):
        objective, space = problem
    else:
        p = get_problem(problem)
        objective, space = p, p.space
    return minimize(objective, space, surrogate, budget=budget, seed=SEED, n_init=N_INIT, **settings).history


def trace(history: list[dict]) -> list[dict]:
    """What is pinned of a history: per evaluation its config, value, source and acquisition value."""
    return [{"config": h["config"], "value": h["value"], "source": h["source"], "acq_value": h["acq_value"]}
            for h in history]


if __name__ == "__main__":
    import sys

    # `python -m tests.trace_runs [NAME ...]`: re-pin every run, or only the named ones (the others kept, which
    # needs the file's fingerprint to be this machine's)
    names = sys.argv[1:] or list(RUNS)
    unknown = sorted(set(names) - set(RUNS))
    if unknown:
        sys.exit(f"unknown runs {unknown}; the runs: {sorted(RUNS)}")
    PATH.parent.mkdir(exist_ok=True)
    traces = {}
    if len(names) < len(RUNS):
        pinned = json.loads(PATH.read_text())
        if pinned["fingerprint"] != fingerprint():
            sys.exit("the pinned traces were written on another machine or library set: re-pin them all")
        traces = pinned["traces"]
    traces.update({name: trace(run(name)) for name in names})
    PATH.write_text(json.dumps({"fingerprint": fingerprint(), "traces": traces}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PATH}")
