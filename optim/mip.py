"""Global maximization of BARK's integrated UCB as a mixed-integer program solved by SCIP (003 Sec. 6.1, App. J).

The posterior forests are written as a MIP (see ``optim/_scip_worker.py`` for the formulation) and
solved in a child process with a timeout: SCIP can abort the whole process on hard instances, and a
BO run must survive that. The warm start is the best point of a Sobol pool scored by the same
integrated acquisition, polished by coordinate ascent over the forests' leaf intervals (the
acquisition is piecewise constant between split thresholds, so each column has finitely many
distinct values). Moving one column can only change the leaf of the trees that split on it, so the
polishing re-routes just those trees (``BARK.coordinate_moments``), about 1/8 of the forests at D = 10.
Measured on TreeFunction: with the pool point alone, SCIP never improved on its
warm start within 3 s (0 of 250 iterations; its root LP alone takes 1.7-12 s at n = 22-71), while the
polishing raises the acquisition a lot; see BENCHMARKS.md. If the solve fails, times out without an
incumbent, or its point scores worse than the polished start, the start is returned and the reason
is recorded. SCIP's gap and dual bound are in the info: with ``time_limit`` of about 10 s they bound how far
the returned point can be from the acquisition's maximum (BENCHMARKS.md, "The acquisition MIP's variance
constraints"); at the default 1 s SCIP's first LP does not finish beyond n of about 30.

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

from optim._scip_worker import FORMULATIONS
from optim.acquisition import UCB
from optim.local_rows import mixed_local_rows
from zoo.base import CoordinateMoments, offers
from zoo.data import bucket_size
from zoo.heap_trees import FEATURE, MASK, SPLIT, THRESHOLD, compiled_router
from zoo.space import CATEGORICAL, INTEGER, Space

WORKER = Path(__file__).with_name("_scip_worker.py")
#: callables given every MIP problem (``build_problem``'s dict) before it is solved: benchmarks record them
PROBLEM_HOOKS: list = []


@dataclass(frozen=True)
class MIPConfig:
    """Knobs of the MIP acquisition optimizer (paper: 100 s and a 10% gap with Gurobi)."""

    time_limit: float = 1.0  # seconds SCIP may spend solving (from 5 s on with its default root separation)
    gap: float = 0.10  # relative optimality gap at which SCIP stops
    n_pool: int = 512  # Sobol pool whose best point starts the polishing
    n_starts: int = 1  # best pool points polished by coordinate ascent before SCIP
    n_local: int = 0  # rows near the incumbent added to the pool (optim.local_rows.mixed_local_rows), and the incumbent
    max_sweeps: int = 3  # coordinate-ascent sweeps over the columns (each scores every leaf interval once)
    timeout_margin: float = 30.0  # extra seconds (model building, start-up) before the child is killed
    formulation: str = "tangent"  # Eq. 10c: "tangent" (our tangent-plane cuts) or "nonlinear" (SCIP's); see the worker
    #: posterior forests written into the MIP (None: all): that many draws evenly spaced over the chains. SCIP then
    #: maximizes the integrated UCB of those forests only, a smaller MIP; its point is re-scored under the full
    #: integrated acquisition and kept only if it beats the polished start there. The gap and dual bound SCIP
    #: reports are the subset's
    forests: int | None = None

    def __post_init__(self):
        if self.formulation not in FORMULATIONS:
            raise ValueError(f"MIPConfig.formulation must be one of {FORMULATIONS}, got {self.formulation!r}")
        if self.forests is not None and not (isinstance(self.forests, (int, np.integer)) and self.forests >= 1):
            raise ValueError(f"MIPConfig.forests must be a positive integer or None (all), got {self.forests!r}")
        for name in ("n_starts", "n_local"):
            value, least = getattr(self, name), 1 if name == "n_starts" else 0
            if not (isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= least):
                raise ValueError(f"MIPConfig.{name} must be an integer of at least {least}, got {value!r}")


def mip_forest_indices(n_forests: int, wanted: int | None) -> np.ndarray:
    """Which of `n_forests` posterior draws (chain-major) go into the MIP: `wanted` of them evenly spaced, so
    that every chain is represented when `wanted` is at least the number of chains; all when None."""
    if wanted is None or wanted >= n_forests:
        return np.arange(n_forests)
    return np.unique(np.round(np.linspace(0, n_forests - 1, wanted)).astype(int))


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


def check_acquisition(acqf) -> None:
    if not isinstance(acqf.acquisition, UCB):
        raise ValueError(f"the MIP optimizer maximizes UCB only; got {acqf.acquisition.name!r} "
                         "(use acquisition='ucb', or optimizer='leaf_ascent' for other criteria)")


def build_problem(acqf, space: Space, config: MIPConfig, x0: np.ndarray, seed: int, problem: dict | None = None) -> dict:
    """The MIP description (plain numpy / python) of an AcquisitionFunction over BARK posterior forests, those
    that `config.forests` selects (`problem`: the ``describe_forests`` part of those forests, if already made)."""
    check_acquisition(acqf)
    acq = acqf.acquisition
    spec = acqf.surrogate.spec
    posterior = acqf.surrogate.forest_posterior(acqf.prepared)
    data = acqf.posterior.data
    keep = mip_forest_indices(np.asarray(posterior.forests).shape[0], config.forests)
    forests = np.asarray(posterior.forests)[keep]
    n = int(np.sum(np.asarray(data.mask)))
    S, m = forests.shape[:2]
    problem = describe_forests(forests, spec) if problem is None else dict(problem)
    problem["trees"] = [[dict(tree) for tree in forest] for forest in problem["trees"]]
    point_heap = np.asarray(posterior.train_leaves)[keep, :, :n]
    x0_heap = np.asarray(compiled_router(spec)(forests.reshape((-1,) + forests.shape[2:]), np.asarray(x0)[None]))
    x0_leaf = []
    for s in range(S):
        for t, tree in enumerate(problem["trees"][s]):  # heap ids -> positions in the tree's leaf list
            tree["point_leaf"] = np.searchsorted(tree["leaves"], point_heap[s, t]).tolist()
        x0_leaf.append([int(np.searchsorted(tree["leaves"], x0_heap[s * m + t, 0]))
                        for t, tree in enumerate(problem["trees"][s])])
    x0_cat = {j: (k - 1 if x0[j] < 0 else int(round(x0[j]))) for j, k in problem["categories"].items()}
    return {**problem, "S": S, "m": m, "n": n, "forest_indices": keep.tolist(),
            "L": np.asarray(posterior.cholesky)[keep, :n, :n], "alpha": np.asarray(posterior.alpha)[keep, :n],
            "y_mean": float(data.y_mean), "y_std": float(data.y_std),
            "beta": float(acq.beta_t(acqf.t, space.dim)), "time_limit": config.time_limit, "gap": config.gap,
            "formulation": config.formulation,
            "x0": np.asarray(x0, dtype=np.float64), "x0_cat": x0_cat, "x0_leaf": x0_leaf, "seed": seed}


def interval_point(spec, j: int, cuts: np.ndarray, k: int) -> float:
    """A representative encoded value of numeric column j in its k-th interval between sorted split
    thresholds `cuts` (the centre; for integers the grid value nearest the centre, if one lies inside)."""
    lo = float(cuts[k - 1]) if k > 0 else float(spec.lo0[j])
    hi = float(cuts[k]) if k < len(cuts) else float(spec.hi0[j])
    centre = 0.5 * (lo + hi)
    if spec.kinds[j] == INTEGER:
        grid = np.arange(int(spec.grid[j]) + 1) / spec.grid[j]
        inside = grid[(grid > lo) & (grid <= hi)]
        centre = float(inside[np.argmin(np.abs(inside - centre))]) if len(inside) else centre
    return min(max(centre, 0.0), 1.0)


def point_from_solution(problem: dict, result: dict, space: Space, spec) -> np.ndarray:
    """An encoded row inside the leaf box the solution selects (centre; integers and categories valid)."""
    x = space.fill_row()
    for j in range(space.dim):
        if spec.kinds[j] == CATEGORICAL:
            q = int(np.argmax(result["c"][j]))
            x[j] = -1.0 if q >= len(space.columns[j].choices) else float(q)
            continue
        cuts = problem["thresholds"].get(j, np.zeros(0))
        on = np.flatnonzero(np.asarray(result["w"][j]) > 0.5) if j in problem["thresholds"] else []
        x[j] = interval_point(spec, j, cuts, int(on[0]) if len(on) else len(cuts))
    return x


def coordinate_candidates(space: Space, spec, thresholds: dict) -> dict:
    """Per column, the values that reach distinct leaves of the forests: one point per interval between
    the thresholds of a numeric column (columns no tree splits on are left out), every category."""
    out = {}
    for j in range(space.dim):
        if spec.kinds[j] == CATEGORICAL:
            out[j] = np.arange(len(space.columns[j].choices), dtype=np.float64)
        elif j in thresholds:
            cuts = thresholds[j]
            out[j] = np.unique([interval_point(spec, j, cuts, k) for k in range(len(cuts) + 1)])
    return out


def column_trees(problem: dict) -> dict:
    """Per column, the flat indices s * m + t of the posterior trees that split on it (from
    ``describe_forests``): the only trees whose leaf can change when that column alone moves."""
    out: dict[int, list] = {}
    for s, forest in enumerate(problem["trees"]):
        m = len(forest)
        for t, tree in enumerate(forest):
            for j in {split[1] for split in tree["splits"]}:
                out.setdefault(j, []).append(s * m + t)
    return {j: np.array(v, dtype=np.int32) for j, v in out.items()}


def _fast_coordinates(acqf, space: Space) -> bool:
    """Whether one column can be moved alone through the surrogate's `coordinate_moments` (on a
    conditional space moving a column can switch other columns on or off)."""
    return offers(acqf.surrogate, CoordinateMoments) and not space.is_conditional


def polish(acqf, space: Space, candidates: dict, X: np.ndarray, values: np.ndarray, max_sweeps: int = 3,
           batch: int = 256, trees: dict | None = None):
    """Coordinate ascent over leaf intervals from each row of X (Gauss-Seidel): column by column, score
    every candidate value of that column and move the row to its best; up to `max_sweeps` sweeps over
    the columns, stopping early when a sweep changes nothing. The acquisition is piecewise constant in
    each column between thresholds, so a column's candidates cover its changes. With `trees` (from
    ``column_trees``) and a surrogate that offers ``coordinate_moments``, only the trees splitting on
    the moved column are re-scored; otherwise whole rows are."""
    X, values = X.copy(), values.copy()
    fast = trees is not None and _fast_coordinates(acqf, space)
    if fast:
        size = (bucket_size(max((len(c) for c in candidates.values()), default=1), 64),  # few shapes and compiles
                bucket_size(max((len(v) for v in trees.values()), default=1), 128))
    for _ in range(max_sweeps):
        improved = False
        for j, c in candidates.items():
            trial = np.repeat(X, len(c), axis=0)
            trial[:, j] = np.tile(c, len(X))
            if fast:
                v = np.stack([acqf.coordinate_scores(x, j, c, trees.get(j, np.zeros(0, np.int32)), size)
                              for x in X])
            else:
                if space.is_conditional:
                    trial = space.encode([space.decode(row) for row in trial])
                v = acqf.scores(trial, batch=batch).reshape(len(X), len(c))
            best = np.argmax(v, axis=1)
            for r in np.flatnonzero(v[np.arange(len(X)), best] > values + 1e-12):
                X[r], values[r], improved = trial[r * len(c) + best[r]], v[r, best[r]], True
        if not improved:
            break
    return X, values


def sum_of_trees_minimum(forest: np.ndarray, values: np.ndarray, spec) -> float:
    """Exact minimum over the encoded domain of sum_t values[t, leaf_t(x)] for a forest [m, nodes, width]
    written in `spec`: a small MILP over the trees' leaf boxes (the structure constraints of the
    acquisition MIP with a linear objective), solved by SCIP to a zero gap."""
    from pyscipopt import Model, quicksum

    from optim._scip_worker import add_forest_structure

    model = Model("sum-of-trees-min")
    model.hideOutput()
    problem = describe_forests(np.asarray(forest)[None], spec)
    _, _, z = add_forest_structure(model, problem)
    model.setObjective(quicksum(float(values[t, leaf]) * z[0][t][k] for t, tree in enumerate(problem["trees"][0])
                                for k, leaf in enumerate(tree["leaves"])), "minimize")
    model.setParam("limits/gap", 0.0)
    model.optimize()
    if model.getStatus() != "optimal":
        raise RuntimeError(f"sum-of-trees minimum: SCIP ended with status {model.getStatus()}")
    return float(model.getObjVal())


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
        try:
            with open(dst, "rb") as f:
                result = pickle.load(f)
        except Exception as exc:  # a worker that exited 0 but left a damaged file is one more contained fault
            return {"status": f"crashed: unreadable result ({type(exc).__name__})"}
        if not isinstance(result, dict) or "status" not in result:
            return {"status": "crashed: malformed result"}
        return result


def sobol_pool(space: Space, n: int, rng: np.random.Generator) -> np.ndarray:
    return space.encode(space.sobol(n, seed=int(rng.integers(2**31))))


def polished_pool_point(acqf, space: Space, rng: np.random.Generator, n_pool: int, n_starts: int, max_sweeps: int,
                        n_local: int = 0):
    """The best `n_starts` points of a Sobol pool of `n_pool` (with `n_local` > 0: and the incumbent and
    `n_local` rows near it), scored by the integrated acquisition (any criterion), polished by coordinate ascent
    over the posterior forests' leaf intervals; returns (forests, their ``describe_forests`` description, the
    best polished row in canonical form, its integrated value, the pool's best value). The MIP's warm start and
    the whole of the "leaf_ascent" optimizer."""
    pool = sobol_pool(space, n_pool, rng)
    if n_local:
        incumbent = acqf.incumbent
        pool = np.vstack([pool, incumbent[None], mixed_local_rows(space, incumbent, n_local, rng)])
    values = acqf.scores(pool, batch=n_pool)
    forests = np.asarray(acqf.surrogate.forest_posterior(acqf.prepared).forests)
    description = describe_forests(forests, acqf.surrogate.spec)
    top = np.argsort(-values)[:n_starts]
    candidates = coordinate_candidates(space, acqf.surrogate.spec, description["thresholds"])
    X, v = polish(acqf, space, candidates, pool[top], values[top], max_sweeps, trees=column_trees(description))
    x_start = space.encode(space.decode(X[int(np.argmax(v))]))  # canonical row (inactive columns filled)
    return forests, description, x_start, float(acqf.values(x_start[None])[0]), float(np.max(values))


def optimize_mip(acqf, space: Space, rng: np.random.Generator, config: MIPConfig = MIPConfig()):
    """The "mip" optimizer: maximize the integrated UCB of a surrogate that offers
    `zoo.base.ForestPosterior` (BARK); returns (encoded row, acquisition value, info dict).

    The best `n_starts` points of a Sobol pool are polished by coordinate ascent over leaf intervals;
    the best of them warm-starts SCIP (on all forests, or on `config.forests` of them), and whichever of
    SCIP's point and it scores higher under the full integrated acquisition is returned."""
    check_acquisition(acqf)
    t0 = time.perf_counter()
    forests, description, x_start, v_start, v_pool = polished_pool_point(acqf, space, rng, config.n_pool,
                                                                         config.n_starts, config.max_sweeps,
                                                                         config.n_local)
    t_polish = time.perf_counter() - t0
    keep = mip_forest_indices(len(forests), config.forests)
    in_mip = description if len(keep) == len(forests) else describe_forests(forests[keep], acqf.surrogate.spec)
    problem = build_problem(acqf, space, config, x_start, seed=int(rng.integers(2**31)), problem=in_mip)
    for hook in PROBLEM_HOOKS:
        hook(problem)
    result = run_worker(problem, config.time_limit + config.timeout_margin)
    info = {"optimizer": "mip", "status": result["status"], "gap": result.get("gap"),
            "mip_value": result.get("objective"), "pool_value": v_pool, "polished_value": v_start,
            "polish_seconds": t_polish, "warm_start_accepted": result.get("warm_start_accepted"),
            "build_seconds": result.get("build_seconds"), "solve_seconds": result.get("solve_seconds"),
            "dual_bound": result.get("dual_bound"), "n_nodes": result.get("n_nodes"),
            "mip_forests": len(keep), "mip_point_value": None, "fallback": None}
    if "w" not in result:
        info["fallback"] = f"no MIP solution ({result['status']})"
        x, v = x_start, v_start
    else:
        x = point_from_solution(problem, result, space, acqf.surrogate.spec)
        x = space.encode(space.decode(x))  # canonical: inactive columns hold their fill values
        v = info["mip_point_value"] = float(acqf.values(x[None])[0])  # the full integrated acquisition
        if v < v_start - 1e-9:
            info["fallback"] = "polished pool point scored higher than the MIP point"
            x, v = x_start, v_start
    info["seconds"] = time.perf_counter() - t0
    return x, v, info
