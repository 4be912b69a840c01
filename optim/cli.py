"""`treezoo` command line: run BO on a built-in problem, list problems and surrogates."""

from __future__ import annotations

import argparse
import json
import sys
import time


def _parser() -> argparse.ArgumentParser:
    from optim.bench.problems import PROBLEMS
    from optim.registry import available
    from optim.transforms import OUTPUT_TRANSFORMS

    p = argparse.ArgumentParser(prog="treezoo", description="Bayesian optimization with tree-structured surrogates")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="minimize a built-in problem and print the best configuration")
    run.add_argument("--problem", default="jenatton_small", choices=sorted(PROBLEMS))
    run.add_argument("--surrogate", default="gp", choices=available())
    run.add_argument("--acquisition", default=None, choices=["logei", "ei", "pi", "ucb"],
                     help="default: the surrogate's own (UCB for bark, log-EI for the others)")
    run.add_argument("--output-transform", default="none", choices=OUTPUT_TRANSFORMS,
                     help="fit the model to a monotone transform of the values (heavy-tailed objectives)")
    run.add_argument("--deterministic", action="store_true",
                     help="the objective returns exact values: the model's noise prior moves near zero")
    run.add_argument("--budget", type=int, default=30, help="number of evaluations (default 30)")
    run.add_argument("--n-init", type=int, default=None, help="initial Sobol design size")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--noise", type=float, default=0.0, help="observation noise std added to the problem")
    run.add_argument("--save", default=None, help="save the run (JSON) after every evaluation")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    sub.add_parser("problems", help="list built-in problems")
    sub.add_parser("surrogates", help="list registered surrogates")
    return p


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "run" and args.deterministic and (args.noise > 0 or args.surrogate == "random"):
        parser.error("--deterministic needs a model (not random search) and a noiseless problem (--noise 0)")
    from optim.bench.problems import PROBLEMS, get_problem
    from optim.registry import available

    if args.command == "problems":
        for name in sorted(PROBLEMS):
            prob = get_problem(name)
            print(f"{name:28s} dim={prob.space.dim:3d} paths={len(prob.space.paths):2d} optimum={prob.optimum}")
        return 0
    if args.command == "surrogates":
        print("\n".join(available()))
        return 0

    from optim.loop import minimize

    problem = get_problem(args.problem, noise_std=args.noise, seed=args.seed)
    print(f"treezoo: minimizing {problem.name} (dim {problem.space.dim}, {len(problem.space.paths)} path(s)) "
          f"with surrogate={args.surrogate}, acquisition={args.acquisition or 'default'}, budget={args.budget}, "
          f"seed={args.seed}" + (", deterministic" if args.deterministic else ""),
          flush=True)
    t0 = time.perf_counter()
    result = minimize(problem, problem.space, surrogate=args.surrogate, budget=args.budget, seed=args.seed,
                      n_init=args.n_init, acquisition=args.acquisition, progress=not args.quiet,
                      checkpoint=args.save, output_transform=args.output_transform,
                      deterministic=args.deterministic)
    print(f"best value:  {result.best_value:.6g}")
    if problem.optimum is not None and result.best_value is not None:
        print(f"regret:      {problem.regret(result.best_value):.3e}  (known optimum {problem.optimum})")
    print(f"best config: {json.dumps(result.best_config)}")
    failed = sum(h['status'] != 'ok' for h in result.history)
    print(f"evaluations: {len(result.history)} ({failed} failed) in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
