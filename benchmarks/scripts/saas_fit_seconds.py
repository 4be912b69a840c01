"""Seconds of one fit of BoTorch's SAAS GP, the `botorch_saas` peer, as the data grow: what its 200-evaluation runs cost.

Issue 16 asks for the peers at up to 200 evaluations. The `botorch_saas` peer refits its model from scratch at every
BO iteration (NUTS with the peer's own settings: `BoTorchSAAS`'s warm-up steps, kept samples and thinning), so a run
costs about the sum of its fits. This script times one such fit (the peer's own `acquisition`, which fits and
builds its log-EI) on n uniform random points of a problem (seed 0, one torch thread, the way
`treezoo-bench run --jobs 2` runs a peer) for each `problem:n` given, and prints a table.
It also projects the fits of a whole run, n_init + 1 to budget evaluations: the sum of the fit seconds over
n = n_init .. budget - 1, linear between the measured n (below the smallest measured n, its value). A
projection from random points, not a run: a BO run's points cluster, which may make NUTS faster or slower.
Needs the bench extra (`pip install -e ".[bench]"`).
Run: python benchmarks/scripts/saas_fit_seconds.py additive_star20:50 additive_star20:100 ... [--out FILE.json]
     python benchmarks/scripts/saas_fit_seconds.py --from-json FILE.json [--n-init 10 --budget 200]"""

import argparse
import json
import time

import numpy as np

from optim.bench.peers.botorch_saas import BoTorchSAAS
from optim.bench.problems import get_problem


def fit_seconds(problem, n: int, seed: int = 0) -> float:
    """Wall-clock seconds of the `botorch_saas` peer's model build (its SAAS NUTS fit, then its log-EI) on n uniform
    random points of the problem, given as BoTorchGP's loop gives them (values negated: BoTorch maximizes)."""
    import torch

    X = np.random.default_rng(seed).random((n, problem.space.dim))
    y = np.array([problem(problem.space.decode(row)) for row in X])
    train_x = torch.tensor(X, dtype=torch.float64)
    train_y = -torch.tensor(y, dtype=torch.float64)[:, None]
    start = time.perf_counter()
    BoTorchSAAS().acquisition(train_x, train_y, cat=np.zeros(problem.space.dim, dtype=bool))
    return time.perf_counter() - start


def projected_run_hours(rows: list[dict], n_init: int, budget: int) -> dict[str, float]:
    """Per problem: hours of fits over a run from n_init to budget evaluations, interpolated from the rows."""
    hours = {}
    for name in dict.fromkeys(r["problem"] for r in rows):
        measured = sorted((r["n"], r["fit_seconds"]) for r in rows if r["problem"] == name)
        ns, secs = np.array(measured, dtype=np.float64).T
        hours[name] = float(np.sum(np.interp(np.arange(n_init, budget), ns, secs)) / 3600.0)
    return hours


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cells", nargs="*", help="problem:n, e.g. additive_tree50:200")
    parser.add_argument("--out", help="also write the rows to this JSON file")
    parser.add_argument("--from-json", help="print the table and projection of a file written by --out; fit nothing")
    parser.add_argument("--n-init", type=int, default=10)
    parser.add_argument("--budget", type=int, default=200)
    args = parser.parse_args()
    if bool(args.cells) == bool(args.from_json):
        parser.error("give problem:n cells to time, or --from-json FILE, not both")
    print("| problem | D | n | fit s |")
    print("|---|---|---|---|")
    if args.from_json:
        with open(args.from_json) as f:
            rows = json.load(f)["rows"]
        for r in rows:
            print(f"| {r['problem']} | {r['dim']} | {r['n']} | {r['fit_seconds']:.1f} |")
    else:
        import torch
        torch.set_num_threads(1)
        rows = []
        for cell in args.cells:
            name, n = cell.rsplit(":", 1)
            problem = get_problem(name)
            seconds = fit_seconds(problem, int(n))
            rows.append({"problem": name, "dim": problem.space.dim, "n": int(n), "fit_seconds": seconds})
            print(f"| {name} | {rows[-1]['dim']} | {n} | {seconds:.1f} |", flush=True)
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"date": time.strftime("%Y-%m-%d"), "rows": rows}, f, indent=1)
    print()
    print(f"| problem | projected hours of fits in one run ({args.n_init} initial points, {args.budget} evaluations) |")
    print("|---|---|")
    for name, h in projected_run_hours(rows, args.n_init, args.budget).items():
        print(f"| {name} | {h:.1f} |")


if __name__ == "__main__":
    main()
