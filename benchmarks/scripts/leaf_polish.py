"""Issue 23: once a run on Jenatton's functions is within 1e-2 of the optimum, do its proposals on the optimal leaf
resolve the minimum or scatter around it?

The optimal leaf of both functions (000 Section 5.1; `optim.bench.problems.jenatton`) is the one every decision of
which is 0 (x1 = x2 = 0 on small; x1 = x2 = x4 = 0 on large). For each run in the results files, every proposal (after
the initial design, up to evaluation `--until`) made while the best value so far is within 1e-2 of the optimum and
landing on that leaf is compared with the best so far: whether it improves on it, and log10 of its regret over the
best-so-far regret (0: as good; 2: a hundred times the regret). A model that resolves the bottom of the bowl proposes
points near its minimizer, so the ratio stays near or below 0; one whose posterior cannot tell points there apart
proposes across the bottom, far above the incumbent's regret.
Run: python benchmarks/scripts/leaf_polish.py FILE.jsonl [FILE.jsonl ...] [--methods M ...] [--until 50]"""

import argparse
import math

import numpy as np

from optim.bench.report import group, load_records, one_run_per_cell

FLOOR = 1e-14  # regrets below this are taken as this, so an exact hit has a finite log


def on_optimal_leaf(config: dict) -> bool:
    """Every decision (an integer in the configuration) is 0: the optimal path of both Jenatton functions."""
    return all(value == 0 for value in config.values() if isinstance(value, int))


def polish(record: dict, until: int) -> list[tuple[bool, float]]:
    """(improves on the best so far, log10 regret ratio) for each qualifying proposal of one run."""
    optimum, best, out = record["optimum"], math.inf, []
    for i, (value, config) in enumerate(zip(record["values"][:until], record["configs"][:until])):
        if i >= record["n_init"] and best - optimum < 1e-2 and on_optimal_leaf(config):
            out.append((value < best, math.log10(max(value - optimum, FLOOR) / max(best - optimum, FLOOR))))
        best = min(best, value)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--methods", nargs="*")
    parser.add_argument("--until", type=int, default=50, help="count proposals up to this many evaluations")
    args = parser.parse_args()
    groups = group(one_run_per_cell([r for f in args.files for r in load_records(f)]))
    print("| problem | method | runs | proposals on the optimal leaf | improving | log10 regret / best-so-far "
          "regret: median [q25, q75] |")
    print("|---|---|---|---|---|---|")
    for (problem, method), runs in sorted(groups.items()):
        if not problem.startswith("jenatton") or (args.methods and method not in args.methods):
            continue
        rows = [row for r in runs for row in polish(r, args.until)]
        if not rows:
            continue
        ratios = np.array([ratio for _, ratio in rows])
        q25, q50, q75 = np.quantile(ratios, [0.25, 0.5, 0.75])
        print(f"| {problem} | {method} | {len(runs)} | {len(rows)} | {sum(i for i, _ in rows)} "
              f"| {q50:.2f} [{q25:.2f}, {q75:.2f}] |")


if __name__ == "__main__":
    main()
