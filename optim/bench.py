"""`treezoo-bench`: run methods on problems over seeds, write JSON lines, print regret and timing tables.

    treezoo-bench run --problems hartmann6 jenatton_small --methods gp random --seeds 5 \
        --budget 50 --n-init 10 --out bench_results/foundation.jsonl --jobs 2
    treezoo-bench table bench_results/foundation.jsonl --at 20 50
    treezoo-bench timing --sizes 20 50 100 --out bench_results/timing.json
    treezoo-bench compiles --iterations 100

Every method sees the same initial design for a given seed (the loop's Sobol design depends only
on the space and the seed). Finished (method, problem, seed, budget, n_init) cells found in the
output file are skipped, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np


def _versions() -> dict:
    import importlib.metadata as md
    out = {"python": platform.python_version()}
    for pkg in ("treezoo", "jax", "numpyro", "numpy", "scipy"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def run_cell(method: str, problem_name: str, seed: int, budget: int, n_init: int, noise: float = 0.0) -> dict:
    """One BO run; returns a JSON-able record with the full trace (failures recorded, not raised)."""
    from optim.loop import minimize
    from optim.problems import get_problem

    problem = get_problem(problem_name, noise_std=noise, seed=seed)
    t0 = time.perf_counter()
    record = {"method": method, "problem": problem_name, "seed": seed, "budget": budget, "n_init": n_init,
              "noise": noise, "optimum": problem.optimum, "date": datetime.date.today().isoformat(),
              "versions": _versions()}
    try:
        res = minimize(problem, problem.space, surrogate=method, budget=budget, seed=seed, n_init=n_init)
    except Exception as exc:  # one crashing run must not stop the others
        record.update(status="crashed", error=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - t0)
        return record
    record.update(
        status="ok", seconds=time.perf_counter() - t0,
        values=[h["value"] for h in res.history], eval_status=[h["status"] for h in res.history],
        sources=[h["source"] for h in res.history], configs=[h["config"] for h in res.history],
        fit_seconds=[h["fit_seconds"] for h in res.history], acq_seconds=[h["acq_seconds"] for h in res.history])
    return record


def _cell_key(r: dict) -> tuple:
    return (r["method"], r["problem"], int(r["seed"]), int(r["budget"]), int(r["n_init"]), float(r.get("noise", 0.0)))


def load_records(path) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def cmd_run(args) -> int:
    done = {_cell_key(r) for r in load_records(args.out) if r.get("status") == "ok"}
    cells = [(m, p, s, args.budget, args.n_init, args.noise) for p in args.problems for m in args.methods
             for s in range(args.seed0, args.seed0 + args.seeds)]
    todo = [c for c in cells if c not in done]
    print(f"treezoo-bench: {len(cells)} cells, {len(cells) - len(todo)} already in {args.out}, running {len(todo)}",
          flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)

    def write(rec):
        with open(args.out, "a") as f:
            f.write(json.dumps(rec) + "\n")
        best = min([v for v in rec.get("values", []) if v is not None and np.isfinite(v)], default=None)
        print(f"  {rec['method']:>10s} {rec['problem']:>24s} seed {rec['seed']}: {rec['status']}, "
              f"best {best}, {rec['seconds']:.1f} s", flush=True)

    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
            for rec in pool.map(run_cell, *zip(*todo)) if todo else []:
                write(rec)
    else:
        for c in todo:
            write(run_cell(*c))
    return 0


def best_so_far(values) -> np.ndarray:
    v = np.array([np.inf if (x is None or not np.isfinite(x)) else x for x in values], dtype=float)
    return np.minimum.accumulate(v)


def summarize(records, at, tol=1e-2):
    """Per (problem, method): quartiles of log10 regret at each budget in `at`, hit rate, timings."""
    groups: dict = {}
    for r in records:
        if r.get("status") == "ok":
            groups.setdefault((r["problem"], r["method"]), []).append(r)
    rows = []
    for (problem, method), recs in sorted(groups.items()):
        row = {"problem": problem, "method": method, "seeds": len(recs)}
        for b in at:
            vals = []
            for r in recs:
                trace = best_so_far(r["values"])
                if len(trace) >= b:
                    reg = trace[b - 1] - r["optimum"] if r["optimum"] is not None else trace[b - 1]
                    vals.append(np.log10(max(reg, 1e-12)) if r["optimum"] is not None else reg)
            row[b] = np.percentile(vals, [25, 50, 75]) if vals else None
        final = [best_so_far(r["values"])[-1] - r["optimum"] for r in recs if r["optimum"] is not None]
        row["hits"] = (sum(f < tol for f in final), len(final))
        bo = [(f, a) for r in recs for f, a, s in zip(r["fit_seconds"], r["acq_seconds"], r["sources"]) if s == "bo"]
        row["fit_s"] = float(np.mean([f for f, _ in bo])) if bo else 0.0
        row["acq_s"] = float(np.mean([a for _, a in bo])) if bo else 0.0
        row["run_s"] = float(np.median([r["seconds"] for r in recs]))
        rows.append(row)
    return rows


def format_table(rows, at) -> str:
    head = ["problem", "method", "seeds"] + [f"log10 regret @{b}: median [q25, q75]" for b in at] + \
           [f"within 1e-2 @{max(at)}", "s/iter fit", "s/iter acq", "s/run (median)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["problem"], r["method"], str(r["seeds"])]
        for b in at:
            q = r[b]
            cells.append("n/a" if q is None else f"{q[1]:.2f} [{q[0]:.2f}, {q[2]:.2f}]")
        cells += [f"{r['hits'][0]}/{r['hits'][1]}", f"{r['fit_s']:.2f}", f"{r['acq_s']:.2f}", f"{r['run_s']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cmd_table(args) -> int:
    records = [r for path in args.files for r in load_records(path)]
    print(format_table(summarize(records, args.at), args.at))
    return 0


def timing_at_size(n: int, dim: int = 6, repeats: int = 3, seed: int = 0) -> dict:
    """Seconds for one warm-started BO iteration (fit, acquisition) of the GP on Hartmann-like data of size n."""
    from optim.loop import BayesOpt
    from optim.problems import hartmann6

    problem = hartmann6(extra_dims=dim - 6) if dim >= 6 else None
    opt = BayesOpt(problem.space, "gp", seed=seed, n_init=n)
    for config in problem.space.sobol(n, seed=seed):
        opt.tell(config, problem(config))
    fits, acqs = [], []
    for _ in range(repeats + 1):  # the first (cold) iteration compiles and is not counted
        c = opt.ask()
        opt.tell(c, problem(c))
        h = opt.history[-1]
        fits.append(h["fit_seconds"])
        acqs.append(h["acq_seconds"])
    return {"n": n, "dim": dim, "fit_s": float(np.median(fits[1:])), "acq_s": float(np.median(acqs[1:])),
            "cold_fit_s": fits[0], "cold_acq_s": acqs[0]}


def cmd_timing(args) -> int:
    rows = [timing_at_size(n, args.dim, args.repeats) for n in args.sizes]
    print("| n | d | fit s/iter (warm) | acquisition s/iter | total | first (cold, compiling) fit + acq |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']} | {r['dim']} | {r['fit_s']:.2f} | {r['acq_s']:.2f} | {r['fit_s'] + r['acq_s']:.2f} | "
              f"{r['cold_fit_s']:.1f} + {r['cold_acq_s']:.1f} |")
    return 0


def cmd_compiles(args) -> int:
    from optim.diagnostics import compile_count
    from optim.loop import BayesOpt
    from optim.problems import get_problem

    start = compile_count()
    problem = get_problem(args.problem)
    opt = BayesOpt(problem.space, "gp", seed=0, n_init=args.n_init)
    per_iter = []
    t0 = time.perf_counter()
    for _ in range(args.n_init + args.iterations):
        before = compile_count()
        c = opt.ask()
        opt.tell(c, problem(c))
        per_iter.append(compile_count() - before)
    total = compile_count() - start
    bo = per_iter[args.n_init:]
    print(f"{args.problem}: {args.iterations} BO iterations after {args.n_init} initial points "
          f"(n = {args.n_init} .. {args.n_init + args.iterations}) in {time.perf_counter() - t0:.0f} s")
    print(f"XLA compilations: {total} in all; {sum(bo)} during BO iterations; "
          f"iterations that compiled: {[i + args.n_init for i, k in enumerate(bo) if k]}")
    print(f"best value {opt.best_value:.5f}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="treezoo-bench", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run (method, problem, seed) cells and append JSON lines")
    r.add_argument("--problems", nargs="+", default=["hartmann6", "jenatton_small"])
    r.add_argument("--methods", nargs="+", default=["gp", "random"])
    r.add_argument("--seeds", type=int, default=5)
    r.add_argument("--seed0", type=int, default=0)
    r.add_argument("--budget", type=int, default=50)
    r.add_argument("--n-init", type=int, default=10)
    r.add_argument("--noise", type=float, default=0.0)
    r.add_argument("--jobs", type=int, default=1)
    r.add_argument("--out", default="bench_results/results.jsonl")
    t = sub.add_parser("table", help="print the regret table from JSON lines")
    t.add_argument("files", nargs="+")
    t.add_argument("--at", nargs="+", type=int, default=[20, 50])
    tm = sub.add_parser("timing", help="seconds per BO iteration at several data sizes")
    tm.add_argument("--sizes", nargs="+", type=int, default=[20, 50, 100])
    tm.add_argument("--dim", type=int, default=6)
    tm.add_argument("--repeats", type=int, default=3)
    c = sub.add_parser("compiles", help="count XLA compilations over a long BO run")
    c.add_argument("--problem", default="hartmann6")
    c.add_argument("--iterations", type=int, default=100)
    c.add_argument("--n-init", type=int, default=10)
    args = p.parse_args(argv)
    return {"run": cmd_run, "table": cmd_table, "timing": cmd_timing, "compiles": cmd_compiles}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
