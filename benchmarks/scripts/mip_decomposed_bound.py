"""Issue 21: is the mean over forests of each forest's own UCB maximum a tighter bound than SCIP's joint one?

The integrated UCB that BARK's MIP maximizes is a mean over S posterior forests, alpha(x) = (1/S) sum_s a_s(x), so
max_x alpha(x) <= (1/S) sum_s max_x a_s(x): a bound from S MIPs of one forest each (50 trees and one variance
constraint each, against the joint MIP's 16 x 50 trees and 16 constraints). Each is solved by the same SCIP
worker and formulation as the BO loop's MIP (`optim._scip_worker`), and its dual bound is summed, so the bound
holds whether or not a forest's MIP closes. Where the forests' maxima lie apart, the bound exceeds the joint
maximum however long SCIP runs: that part of the gap is the decomposition's own.

The MIPs are recorded as `treezoo-bench mip-study` records them: a BARK BO run (default settings, min(2D, 30)
Sobol points) hands its MIP to SCIP at n = 30, 40, 50 and 60 observations. For each, one line of JSON: the polished
warm start's objective, the decomposed bound, their relative gap (as SCIP states its gap: (bound - start) /
|start|, in the MIP's standardized units) and the statuses of the per-forest solves; and the same for the joint MIP
of all forests under --joint-seconds (SCIP's own bound, as the loop's MIP gets it).
Run: python benchmarks/scripts/mip_decomposed_bound.py PROBLEM SEED SECONDS_PER_FOREST [--out FILE.jsonl]"""

import argparse
import json

import numpy as np

from optim import mip
from optim._scip_worker import start_objective
from optim.bench.problems import get_problem
from optim.bench.runner import append_record, recorded_mips

AT = (30, 40, 50, 60)


def one_forest(p: dict, s: int, seconds: float) -> dict:
    """The MIP of forest s alone (its trees, Cholesky factor and weights), warm-started at the same point."""
    return dict(p, trees=[p["trees"][s]], L=p["L"][s:s + 1], alpha=p["alpha"][s:s + 1], S=1,
                x0_leaf=[p["x0_leaf"][s]], time_limit=seconds, gap=1e-4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem")
    parser.add_argument("seed", type=int)
    parser.add_argument("seconds", type=float, help="SCIP's time limit for each forest's MIP")
    parser.add_argument("--joint-seconds", type=float, default=10.0,
                        help="SCIP's time limit for the joint MIP of all forests, solved too for comparison")
    parser.add_argument("--out", default=None, help="append the JSON lines to this file too")
    args = parser.parse_args()
    captured = recorded_mips(get_problem(args.problem), args.seed, AT)
    for n, p in sorted(captured.items()):
        start = start_objective(p)
        bounds, statuses = [], []
        for s in range(p["S"]):
            result = mip.run_worker(one_forest(p, s, args.seconds), args.seconds + 60.0)
            statuses.append(result["status"])
            if "dual_bound" in result:  # back to the MIP's standardized units
                bounds.append((result["dual_bound"] + p["y_mean"]) / p["y_std"])
        bound = float(np.mean(bounds)) if len(bounds) == p["S"] else None  # a crashed solve leaves no bound
        joint = mip.run_worker(dict(p, time_limit=args.joint_seconds), args.joint_seconds + 60.0)
        joint_bound = (joint["dual_bound"] + p["y_mean"]) / p["y_std"] if "dual_bound" in joint else None
        record = {"problem": args.problem, "seed": args.seed, "n": n, "seconds_per_forest": args.seconds,
                  "forests": p["S"], "start": start, "decomposed_bound": bound,
                  "gap": None if bound is None else (bound - start) / abs(start),
                  "statuses": {k: statuses.count(k) for k in sorted(set(statuses))},
                  "joint_seconds": args.joint_seconds, "joint_status": joint["status"], "joint_bound": joint_bound,
                  "joint_gap": None if joint_bound is None else (joint_bound - start) / abs(start)}
        print(json.dumps(record), flush=True)
        if args.out:
            append_record(args.out, record)


if __name__ == "__main__":
    main()
