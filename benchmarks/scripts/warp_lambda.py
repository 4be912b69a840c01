"""Issue 23: where does a warped model put the warp's power lambda, against the marginal-normality fit of the output
transform, on the data a run had after its first N evaluations?

For each (problem, seed) the first N configurations and values of a run in the results file (by default auto's pick,
`addtree/yeo-johnson`, whose proposals do not depend on the warped models) are fitted by each named warped surrogate
(loop settings: 300 warm-up steps, 100 draws, 2 chains, seed = the run's seed), and the 10th, 50th and 90th
percentiles of the draws' lambda are printed beside SciPy's maximum-likelihood lambda of the standardized values (what
`output_transform="yeo-johnson"` uses). A posterior that piles against an end of its prior's range is held there
by the prior, not by the data.
Run: python benchmarks/scripts/warp_lambda.py FILE.jsonl --problems P ... [--seeds 0 1] [--n 20]
     [--models addtree_yj addtree_yjw] [--method addtree/yeo-johnson]"""

import argparse

import numpy as np
from scipy import stats

from inference import sample
from optim.bench import get_problem
from optim.bench.report import load_records
from optim.registry import SURROGATES
from zoo.warping import WARP_SITE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--problems", nargs="+", required=True)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--models", nargs="+", default=["addtree_yj", "addtree_yjw"])
    parser.add_argument("--method", default="addtree/yeo-johnson")
    args = parser.parse_args()
    records = {(r["problem"], r["seed"]): r for r in load_records(args.path) if r["method"] == args.method}
    heads = " | ".join(f"{m}: q10 / q50 / q90" for m in args.models)
    print(f"| problem | seed | ML lambda (standardized values) | {heads} |")
    print("|---|---|---|" + "---|" * len(args.models))
    for problem in args.problems:
        space = get_problem(problem).space
        for seed in args.seeds:
            record = records[(problem, seed)]
            X = space.encode(record["configs"][:args.n])
            y = np.asarray(record["values"][:args.n], dtype=np.float64)
            ml = stats.yeojohnson((y - y.mean()) / y.std())[1]
            cells = []
            for name in args.models:
                post = sample(SURROGATES[name](space), X, y, seed, num_warmup=300, num_samples=100, num_chains=2)
                q = np.quantile(np.asarray(post.flat_samples()[WARP_SITE]), [0.1, 0.5, 0.9])
                cells.append(" / ".join(f"{v:.2f}" for v in q))
            print(f"| {problem} | {seed} | {ml:.2f} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
