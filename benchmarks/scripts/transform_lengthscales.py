"""What an output transform does to Add-Tree's lengthscales on Jenatton et al.'s small function.

The function is additive along each path: on the optimal leaf f = x4^2 + 0.1 + r8, with r8 a parameter of the
inner vertex x1=0 (linear) and x4 one of the leaf (a bowl). Add-Tree's kernel is a sum over vertices, so it can
fit that sum with a long lengthscale on r8. A power transform of the values (Yeo-Johnson with lambda far from 1)
bends the sum, the transformed values are no longer additive, and the model needs shorter lengthscales.

For each seed, the first `--n` evaluations that auto's pick (`addtree/yeo-johnson`) recorded in
benchmarks/results/jenatton_auto.jsonl are refitted by the BO loop's own fit (BayesOpt.ask, Add-Tree, the run's
seed) under each transform; the script prints the posterior median lengthscale (unit scale) of r8, x4 and r9
per seed and their medians over the seeds. The same data for every transform, so only the transform differs.
Run: python benchmarks/scripts/transform_lengthscales.py [--seeds 10 --n 45] (about 20 s a fit here)."""

import argparse
import json
from pathlib import Path

import numpy as np

from optim import BayesOpt
from optim.bench.problems import get_problem

RUNS = Path(__file__).resolve().parents[1] / "results" / "jenatton_auto.jsonl"
TRANSFORMS = ("none", "yeo-johnson", "log-tail")
SHOWN = ("r8", "x4", "r9")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--n", type=int, default=45, help="evaluations refitted (default 45)")
    args = parser.parse_args()
    problem = get_problem("jenatton_small")
    runs = {r["seed"]: r for r in map(json.loads, RUNS.read_text().splitlines())
            if r["method"] == "addtree/yeo-johnson" and r["problem"] == "jenatton_small"}
    table = {t: [] for t in TRANSFORMS}
    print("| seed | transform | " + " | ".join(f"{p} lengthscale" for p in SHOWN) + " |")
    print("|---|---|" + "---|" * len(SHOWN))
    for seed in range(args.seeds):
        run = runs[seed]
        for transform in TRANSFORMS:
            opt = BayesOpt(problem.space, "addtree", seed=seed, n_init=run["n_init"], output_transform=transform)
            for config, value in zip(run["configs"][:args.n], run["values"][:args.n]):
                opt.tell(config, value)
            opt.ask()  # the fit behind the next proposal
            draws = np.asarray(opt.posterior.samples["lengthscale"])
            draws = draws.reshape(-1, draws.shape[-1])
            cols = [problem.space.names[c] for c in opt.surrogate.num_cols]
            medians = [float(np.median(draws[:, cols.index(p)])) for p in SHOWN]
            table[transform].append(medians)
            print(f"| {seed} | {transform} | " + " | ".join(f"{v:.2f}" for v in medians) + " |", flush=True)
    for transform, rows in table.items():
        med = np.median(np.array(rows), axis=0)
        print(f"| median over seeds | {transform} | " + " | ".join(f"{v:.2f}" for v in med) + " |")


if __name__ == "__main__":
    main()
