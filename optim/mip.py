"""Global maximization of BARK's integrated UCB as a mixed-integer program solved by SCIP (003 Sec. 6.1, App. J).

The posterior forests are written as a MIP (see ``optim/_scip_worker.py`` for the formulation) and
solved in a child process with a timeout: SCIP can abort the whole process on hard instances, and a
BO run must survive that. SCIP is warm-started with the best point of a Sobol pool scored by the
same integrated acquisition; if the solve fails, times out without an incumbent, or its point scores
worse than the pool's best, the pool's best point is returned and the reason is recorded.

The returned point lies inside the winning leaf box (the centre of its interval for reals, the grid
value nearest the centre for integers, the chosen category), and the returned value is the
acquisition that ``AcquisitionFunction`` (i.e. the surrogate's ``predict``) gives at that point.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optim.acquisition import UCB
from zoo.space import CATEGORICAL, INTEGER, Space
from zoo.trees import FEATURE, MASK, SPLIT, THRESHOLD, route_forest

WORKER = Path(__file__).with_name("_scip_worker.py")


@dataclass(frozen=True)
class MIPConfig:
    """Knobs of the MIP acquisition optimizer (paper: 100 s and a 10% gap with Gurobi)."""

    time_limit: float = 3.0  # seconds SCIP may spend solving
    gap: float = 0.10  # relative optimality gap at which SCIP stops
    n_pool: int = 1024  # Sobol pool that scores the warm start and the fallback
    timeout_margin: float = 30.0  # extra seconds (model building, start-up) before the child is killed


def _leaves_and_splits(tree: np.ndarray):
    """Leaves (heap ids, ascending) and decision nodes of one heap-array tree, with the leaves (as
    positions in that list) under each side of each decision node."""
    split = tree[:, SPLIT] > 0.5
    n_nodes = tree.shape[0]
    exists = np.zeros(n_nodes, bool)
    exists[0] = True
    for i in range(n_nodes):
        if exists[i] and split[i]:
            exists[2 * i + 1] = exists[2 * i + 2] = True
    leaves = [i for i in range(n_nodes) if exists[i] and not split[i]]
    index = {leaf: k for k, leaf in enumerate(leaves)}

    def under(i):
        out, stack = [], [i]
        while stack:
            a = stack.pop()
            if split[a]:
                stack += [2 * a + 1, 2 * a + 2]
            else:
                out.append(index[a])
        return sorted(out)
    splits = [(i, under(2 * i + 1), under(2 * i + 2)) for i in range(n_nodes) if exists[i] and split[i]]
    return leaves, splits


def describe_forests(forests: np.ndarray, spec) -> dict:
    """Forests [S, m, nodes, width] as plain data for the MIP builder (``_scip_worker.add_forest_structure``):
    the sorted split thresholds of each numeric column, the category count of each categorical one, and
    per tree its leaves and its decision nodes as (kind, column, threshold position or left categories,
    left leaves, right leaves)."""
    parts = [[_leaves_and_splits(tree) for tree in forest] for forest in forests]
    thresholds: dict[int, set] = {}
    for forest, per in zip(forests, parts):
        for tree, (_, splits) in zip(forest, per):
            for i, _, _ in splits:
                j = int(tree[i, FEATURE])
                if spec.kinds[j] != CATEGORICAL:
                    thresholds.setdefault(j, set()).add(float(tree[i, THRESHOLD]))
    thresholds = {j: np.array(sorted(v)) for j, v in thresholds.items()}
    position = {j: {v: k for k, v in enumerate(vals)} for j, vals in thresholds.items()}

    def rule(tree, i):
        j = int(tree[i, FEATURE])
        if spec.kinds[j] == CATEGORICAL:
            return "cat", j, [int(q) for q in np.flatnonzero(tree[i, MASK: MASK + int(spec.n_cats[j])] > 0.5)]
        return "num", j, position[j][float(tree[i, THRESHOLD])]

    trees = [[{"leaves": np.array(leaves), "n_leaves": len(leaves),
               "splits": [(*rule(tree, i), left, right) for i, left, right in splits]}
              for tree, (leaves, splits) in zip(forest, per)] for forest, per in zip(forests, parts)]
    categories = {j: int(spec.n_cats[j]) for j in range(spec.dim) if spec.kinds[j] == CATEGORICAL}
    return {"thresholds": thresholds, "categories": categories, "trees": trees}


def build_problem(acqf, space: Space, config: MIPConfig, x0: np.ndarray, seed: int) -> dict:
    """The MIP description (plain numpy / python) of an AcquisitionFunction over BARK posterior forests."""
    acq = acqf.acquisition
    if not isinstance(acq, UCB):
        raise ValueError(f"the MIP optimizer maximizes UCB only; got {acq.name!r} (use acquisition='ucb')")
    spec = acqf.surrogate.spec
    samples, data, pre = acqf.prepared
    forests = np.asarray(samples["forest"])
    n = int(np.sum(np.asarray(data.mask)))
    S, m = forests.shape[:2]
    problem = describe_forests(forests, spec)
    point_heap = np.asarray(pre["leaves"])[:, :, :n]
    x0_heap = np.asarray(route_forest(spec, forests.reshape((-1,) + forests.shape[2:]), np.asarray(x0)[None]))
    x0_leaf = []
    for s in range(S):
        for t, tree in enumerate(problem["trees"][s]):  # heap ids -> positions in the tree's leaf list
            tree["point_leaf"] = np.searchsorted(tree["leaves"], point_heap[s, t]).tolist()
        x0_leaf.append([int(np.searchsorted(tree["leaves"], x0_heap[s * m + t, 0]))
                        for t, tree in enumerate(problem["trees"][s])])
    x0_cat = {j: (k - 1 if x0[j] < 0 else int(round(x0[j]))) for j, k in problem["categories"].items()}
    return {**problem, "S": S, "m": m, "n": n,
            "L": np.asarray(pre["L"])[:, :n, :n], "alpha": np.asarray(pre["alpha"])[:, :n],
            "y_mean": float(data.y_mean), "y_std": float(data.y_std),
            "beta": float(acq.beta_t(acqf.t, space.dim)), "time_limit": config.time_limit, "gap": config.gap,
            "x0": np.asarray(x0, dtype=np.float64), "x0_cat": x0_cat, "x0_leaf": x0_leaf, "seed": seed}


def point_from_solution(problem: dict, result: dict, space: Space, spec) -> np.ndarray:
    """An encoded row inside the leaf box the solution selects (centre; integers and categories valid)."""
    x = space.fill_row()
    for j in range(space.dim):
        if spec.kinds[j] == CATEGORICAL:
            q = int(np.argmax(result["c"][j]))
            x[j] = -1.0 if q >= len(space.columns[j].choices) else float(q)
            continue
        lo, hi = float(spec.lo0[j]), float(spec.hi0[j])
        if j in problem["thresholds"]:
            v = problem["thresholds"][j]
            on = np.flatnonzero(np.asarray(result["w"][j]) > 0.5)
            k = int(on[0]) if len(on) else len(v)
            lo = float(v[k - 1]) if k > 0 else lo
            hi = float(v[k]) if k < len(v) else hi
        centre = 0.5 * (lo + hi)
        if spec.kinds[j] == INTEGER:
            span = spec.grid[j]
            grid = np.arange(int(span) + 1) / span
            inside = grid[(grid > lo) & (grid <= hi)]
            centre = float(inside[np.argmin(np.abs(inside - centre))]) if len(inside) else centre
        x[j] = min(max(centre, 0.0), 1.0)
    return x


def run_worker(problem: dict, timeout: float) -> dict:
    """Solve in a child process; any crash, timeout or missing result becomes {'status': reason}."""
    with tempfile.TemporaryDirectory(prefix="treezoo-mip-") as tmp:
        src, dst = os.path.join(tmp, "problem.pkl"), os.path.join(tmp, "result.pkl")
        with open(src, "wb") as f:
            pickle.dump(problem, f)
        try:
            proc = subprocess.run([sys.executable, str(WORKER), src, dst], capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"status": "killed: timeout"}
        if proc.returncode != 0 or not os.path.exists(dst):
            tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
            return {"status": f"crashed: exit {proc.returncode} {tail[0][:200]}"}
        with open(dst, "rb") as f:
            return pickle.load(f)


def sobol_pool(space: Space, n: int, rng: np.random.Generator) -> np.ndarray:
    return space.encode(space.sobol(n, seed=int(rng.integers(2**31))))


def optimize_mip(acqf, space: Space, rng: np.random.Generator, config=None):
    """Maximize BARK's integrated UCB; returns (encoded row, acquisition value, info dict)."""
    config = config if isinstance(config, MIPConfig) else MIPConfig()
    t0 = time.perf_counter()
    pool = sobol_pool(space, config.n_pool, rng)
    values = acqf.values(pool)
    best = int(np.argmax(values))
    x_pool, v_pool = pool[best], float(values[best])
    problem = build_problem(acqf, space, config, x_pool, seed=int(rng.integers(2**31)))
    result = run_worker(problem, config.time_limit + config.timeout_margin)
    info = {"optimizer": "mip", "status": result["status"], "gap": result.get("gap"),
            "mip_value": result.get("objective"), "pool_value": v_pool,
            "warm_start_accepted": result.get("warm_start_accepted"),
            "build_seconds": result.get("build_seconds"), "solve_seconds": result.get("solve_seconds"),
            "fallback": None}
    if "w" not in result:
        info["fallback"] = f"no MIP solution ({result['status']})"
        x, v = x_pool, v_pool
    else:
        x = point_from_solution(problem, result, space, acqf.surrogate.spec)
        x = space.encode(space.decode(x))  # canonical: inactive columns hold their fill values
        v = float(acqf.values(x[None])[0])
        if v < v_pool:
            info["fallback"] = "pool point scored higher than the MIP point"
            x, v = x_pool, v_pool
    info["seconds"] = time.perf_counter() - t0
    return x, v, info
