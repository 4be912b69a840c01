"""Issue 21: how far can SCIP's bound on BARK's acquisition MIP go at the root, and does branching move it in 10 s?

For each MIP a BARK BO run records (as `treezoo-bench mip-study` records them: default settings, min(2D, 30) Sobol
points, the MIP handed to SCIP at n = 30, 40, 50 and 60 observations), one line of JSON, every value in the MIP's
standardized units and every gap relative to the polished warm start as SCIP states its gap, (bound - start) / |start|:
- the warm start's two parts: the forests' mean of -alpha_s' k_s and of sigma_s, and the UCB weight;
- the mean-only MIP (beta = 0: a linear objective over the trees' leaves) solved to optimality: the most the
  posterior mean can give, against the start's mean;
- the root relaxation run to its end: SCIP's separation (the variance handler's tangent planes and its own cuts)
  without round or stall limits, no gap limit, no heuristics, a node limit of 1; its bound is the formulation's
  root bound;
- 10 s as the BO loop's MIP gets them, and 10 s with pseudo-cost branching (no strong branching at the root):
  the gap, the nodes, the bound.
The variants need SCIP parameters that the library's worker does not take, so this script builds the worker's model
(`optim._scip_worker.build`, the default tangent formulation) in its own process.
Run: python benchmarks/scripts/mip_root_bound.py PROBLEM SEED [--root-seconds S] [--out FILE.jsonl]
Table of a results file: python benchmarks/scripts/mip_root_bound.py --table FILE.jsonl"""

import argparse
import json
import time

import numpy as np
from pyscipopt import SCIP_PARAMSETTING

from optim import _scip_worker as worker
from optim.bench.problems import get_problem
from optim.bench.report import load_records
from optim.bench.runner import append_record, recorded_mips

AT = (30, 40, 50, 60)


def solve(p: dict, seconds: float, settings: str) -> dict:
    """The worker's model of `p`, warm-started at the polished start, under one of the settings above."""
    q = dict(p, formulation="tangent", time_limit=seconds)
    model, w, c, z, kus, obj = worker.build(q)
    if settings == "root":
        model.setParam("separating/maxroundsroot", -1)
        model.setParam("separating/maxstallroundsroot", -1)
        model.setParam("limits/nodes", 1)
        model.setParam("limits/gap", 0.0)  # to the root's own end, not the loop's 10% stop
        model.setHeuristics(SCIP_PARAMSETTING.OFF)
    elif settings == "pscost":
        model.setParam("branching/pscost/priority", 100000)
    elif settings != "default":
        raise ValueError(settings)
    worker.warm_start(model, q, w, c, z, kus, obj)
    t0 = time.perf_counter()
    model.optimize()
    return {"status": model.getStatus(), "bound": model.getDualbound(), "best": model.getPrimalbound(),
            "nodes": model.getNNodes(), "seconds": time.perf_counter() - t0}


def table(path: str) -> str:
    """Markdown: per recorded MIP, the start's parts, the mean-only optimum and the three bounds as gaps."""
    lines = ["| problem | seed | n | start: mean + kappa sd (kappa) | mean-only optimum | root bound: gap (s) "
             "| 10 s: gap (nodes) | 10 s, pseudo-cost branching: gap (nodes) |", "|" + "---|" * 8]
    records = sorted(load_records(path), key=lambda r: (r["problem"], r["seed"], r["n"]))
    for r in records:
        lines.append(f"| {r['problem']} | {r['seed']} | {r['n']} | {r['start_mean']:.3f} + {r['kappa']:g} x "
                     f"{r['start_sd']:.3f} = {r['start']:.3f} | {r['mean_only']['best']:.3f} "
                     f"| {r['root']['gap']:.3f} ({r['root']['seconds']:.0f}) "
                     f"| {r['default']['gap']:.3f} ({r['default']['nodes']}) "
                     f"| {r['pscost']['gap']:.3f} ({r['pscost']['nodes']}) |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", nargs="?")
    parser.add_argument("seed", type=int, nargs="?")
    parser.add_argument("--table", default=None, help="print the table of this results file and stop")
    parser.add_argument("--root-seconds", type=float, default=120.0, help="time limit of the root-only solve")
    parser.add_argument("--out", default=None, help="append the JSON lines to this file too")
    args = parser.parse_args()
    if args.table:
        print(table(args.table))
        return
    if args.problem is None or args.seed is None:
        parser.error("PROBLEM and SEED are needed unless --table is given")
    captured = recorded_mips(get_problem(args.problem), args.seed, AT)
    for n, p in sorted(captured.items()):
        parts = [worker.start_point(p, s) for s in range(p["S"])]
        mean = float(np.mean([-(p["alpha"][s] @ parts[s][0]) for s in range(p["S"])]))
        sd = float(np.mean([part[2] for part in parts]))
        start = worker.start_objective(p)
        mean_only = solve(dict(p, beta=0.0, gap=1e-6), 60.0, "default")
        runs = {name: solve(p, seconds, name) for name, seconds in
                (("root", args.root_seconds), ("default", 10.0), ("pscost", 10.0))}
        record = {"problem": args.problem, "seed": args.seed, "n": n, "kappa": float(np.sqrt(p["beta"])),
                  "start": start, "start_mean": mean, "start_sd": sd,
                  "mean_only": {"status": mean_only["status"], "best": mean_only["best"], "bound": mean_only["bound"]},
                  **{name: dict(r, gap=(r["bound"] - start) / abs(start)) for name, r in runs.items()}}
        print(json.dumps(record), flush=True)
        if args.out:
            append_record(args.out, record)


if __name__ == "__main__":
    main()
