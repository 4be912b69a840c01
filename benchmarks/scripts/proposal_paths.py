"""Issue 23: over how many paths of a conditional space does a method spread its BO proposals?

For each run in the results files, the proposals after the initial design up to evaluation `--until` are reduced to
their decisions (the configuration's parameters named d0, d1, ...: the seeded family's decision variables,
`optim.bench.problems`), and the number of distinct decision settings among them is counted. A method that commits to
the path it believes best counts few; one whose proposals wander between paths counts many. Printed: per instance
the mean over the seeds read, and the mean over instances.
Run: python benchmarks/scripts/proposal_paths.py FILE.jsonl [FILE.jsonl ...] --methods M ... [--seeds 5] [--until 30]"""

import argparse
import re

import numpy as np

from optim.bench.report import load_records

DECISION = re.compile(r"^d\d+$")


def distinct_paths(record: dict, until: int) -> int:
    """Distinct decision settings among the run's proposals n_init+1..until."""
    configs = record["configs"][record["n_init"]:until]
    return len({tuple(sorted((k, v) for k, v in c.items() if DECISION.match(k))) for c in configs})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--methods", nargs="+", required=True)
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1")
    parser.add_argument("--until", type=int, default=30)
    args = parser.parse_args()
    records = [r for path in args.paths for r in load_records(path)
               if r["method"] in args.methods and r["seed"] < args.seeds]
    problems = sorted({r["problem"] for r in records}, key=lambda p: (len(p), p))
    print(f"| method | {' | '.join(problems)} | mean |")
    print("|---|" + "---|" * (len(problems) + 1))
    for method in args.methods:
        per = [np.mean([distinct_paths(r, args.until) for r in records if r["method"] == method and r["problem"] == p])
               for p in problems]
        print(f"| {method} | {' | '.join(f'{v:.1f}' for v in per)} | {np.mean(per):.2f} |")


if __name__ == "__main__":
    main()
