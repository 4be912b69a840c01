"""`treezoo` command line: run BO on a built-in problem, plot or report a saved run, list problems and surrogates."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

from optim.batch import BATCH_STRATEGIES


def integer_at_least(low: int):
    """An argparse type: an integer >= low, with a one-line error otherwise."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value
    return parse


def finite_nonnegative(text: str) -> float:
    """An argparse type: a finite noise standard deviation >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def acquisition_name(text: str) -> str:
    """An acquisition name with its option ('logei', 'logei,xi=0.01', 'ucb,beta=2'), checked here."""
    from optim.acquisition import get_acquisition

    try:
        get_acquisition(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _parser() -> argparse.ArgumentParser:
    from optim.bench.problems import PROBLEMS
    from optim.registry import available
    from optim.transforms import OUTPUT_TRANSFORMS

    p = argparse.ArgumentParser(prog="treezoo", description="Bayesian optimization with tree-structured surrogates")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="minimize a built-in problem and print the best configuration")
    run.add_argument("--problem", default="jenatton_small", choices=sorted(PROBLEMS))
    run.add_argument("--surrogate", default="auto", choices=available(),
                     help="default auto: picked from the space and --deterministic (the pick is printed)")
    run.add_argument("--acquisition", default=None, type=acquisition_name, metavar="{logei,ei,pi,ucb}[,OPTION]",
                     help="default: the surrogate's own (UCB for bark, log-EI for the others); 'logei,xi=0.01' "
                          "asks for improvement beyond 0.01 standard deviations of y, 'ucb,beta=2' fixes beta")
    run.add_argument("--output-transform", default=None, choices=OUTPUT_TRANSFORMS,
                     help="fit the model to a monotone transform of the values (heavy-tailed objectives); "
                          "default: a resumed --save journal's, else the one --surrogate auto pairs with its "
                          "pick, else none")
    run.add_argument("--deterministic", action="store_true",
                     help="the objective returns exact values: the model's noise prior moves near zero")
    run.add_argument("--budget", type=integer_at_least(1), default=30, help="number of evaluations (default 30)")
    run.add_argument("--n-init", type=integer_at_least(1), default=None, help="initial Sobol design size")
    run.add_argument("--seed", type=integer_at_least(0), default=0)
    run.add_argument("--noise", type=finite_nonnegative, default=0.0, help="observation noise std added to the problem")
    run.add_argument("--save", default=None,
                     help="journal the run to this file as it goes; an existing journal of the same run is resumed")
    run.add_argument("--workers", type=integer_at_least(1), default=None,
                     help="evaluations run at once (a process pool; with --dask-scheduler: the cluster's threads)")
    run.add_argument("--dask-scheduler", default=None, metavar="ADDRESS",
                     help="evaluate on a Dask cluster (e.g. tcp://host:8786); needs pip install 'treezoo[dask]'")
    run.add_argument("--timeout", type=positive_seconds, default=None,
                     help="seconds after which a running evaluation is recorded as failed")
    run.add_argument("--batch-strategy", default="believer", choices=list(BATCH_STRATEGIES),
                     help="how evaluations in flight enter the next proposals (default believer)")
    run.add_argument("--chain-workers", type=integer_at_least(0), default=0,
                     help="run each fit's MCMC chains in this many child processes, one core each (default 0: in "
                          "this process); pays where a fit takes seconds")
    run.add_argument("--on-failure", default=None, choices=["worst", "ignore"],
                     help="what the model makes of a failed evaluation: fit it at the worst value so far, so that "
                          "proposals leave a region that fails (default; a resumed --save journal's setting), or "
                          "leave it out")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--plot", default=None, metavar="FILE",
                     help="write the run's convergence plot here at the end (.png, .pdf, .svg; needs matplotlib)")
    run.add_argument("--wall-clock", action="store_true",
                     help="with --plot: seconds since the first proposal on the x axis, and a panel of the "
                          "evaluations in flight (how busy --workers were)")
    plot = sub.add_parser("plot", help="draw the convergence plot of a run saved with --save (finished or running)")
    plot.add_argument("path", help="the run's journal (or a snapshot saved by BayesOpt.save)")
    plot.add_argument("--out", default=None, metavar="FILE",
                      help="the figure's file (default: the journal's name with .png)")
    plot.add_argument("--optimum", type=float, default=None,
                      help="a known minimum: plot the regret on a log scale")
    plot.add_argument("--seconds", action="store_true",
                      help="add a panel of each proposal's fit and acquisition seconds (with --wall-clock: of the "
                           "evaluations in flight)")
    plot.add_argument("--wall-clock", action="store_true",
                      help="seconds since the first proposal on the x axis instead of the evaluation number")
    status = sub.add_parser("status", help="report a run saved with --save (finished or running): evaluations, "
                                           "failures, the best, what is in flight and for how long")
    status.add_argument("path", help="the run's journal (or a snapshot saved by BayesOpt.save)")
    status.add_argument("--csv", default=None, metavar="FILE",
                        help="also write the history as a table: a row per evaluation, a column per parameter")
    sub.add_parser("problems", help="list built-in problems")
    sub.add_parser("surrogates", help="list registered surrogates")
    return p


def _short_warning(message, category, filename, lineno, line=None) -> str:
    return f"treezoo: {message}\n"


def main(argv=None) -> int:
    import warnings
    warnings.formatwarning = _short_warning  # a user reads the message, not our source line
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "plot":
        return _plot_saved_run(parser, args)
    if args.command == "status":
        return _report_saved_run(parser, args)
    if args.command == "run":
        if args.plot is not None:
            _check_plot_file(parser, "--plot", args.plot)
        elif args.wall_clock:
            parser.error("--wall-clock is a setting of --plot FILE, which is not given")
        if args.deterministic and (args.noise > 0 or args.surrogate == "random"):
            parser.error("--deterministic needs a model (not random search) and a noiseless problem (--noise 0)")
        if args.n_init is not None and args.n_init > args.budget:
            parser.error(f"--n-init {args.n_init} exceeds --budget {args.budget}")
        if args.save is not None:
            from optim.loop import check_save_folder
            try:
                check_save_folder(args.save)
            except ValueError as exc:
                parser.error(f"--save {exc}")
    from optim.bench.problems import PROBLEMS, ProblemByName, get_problem
    from optim.registry import available

    if args.command == "problems":
        for name in sorted(PROBLEMS):
            prob = get_problem(name)
            optimum = prob.optimum if prob.optimum_computed else "exact, computed when a run needs it"
            print(f"{name:28s} dim={prob.space.dim:3d} paths={len(prob.space.paths):2d} optimum={optimum}")
        return 0
    if args.command == "surrogates":
        print("\n".join(available()))
        return 0

    from optim.loop import BayesOpt, minimize

    problem = get_problem(args.problem, noise_std=args.noise, seed=args.seed)
    if args.output_transform is None and args.save is not None:  # unset: a resumed journal's, as minimize does
        from optim.journal import read_header
        args.output_transform = (read_header(args.save) or {}).get("output_transform")
    try:  # the surrogate, acquisition and options are checked before any evaluation is spent
        checked = BayesOpt(problem.space, surrogate=args.surrogate, acquisition=args.acquisition, seed=args.seed,
                           n_init=args.n_init, output_transform=args.output_transform,
                           deterministic=args.deterministic, batch_strategy=args.batch_strategy,
                           on_failure=args.on_failure)
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    executor = None
    if args.dask_scheduler is not None:
        try:
            from distributed import Client
        except ImportError:
            parser.error("--dask-scheduler needs Dask: pip install 'treezoo[dask]'")
        try:
            executor = Client(args.dask_scheduler, timeout=30)
        except (OSError, ValueError, TypeError) as exc:
            parser.error(f"--dask-scheduler {args.dask_scheduler}: cannot connect ({exc})")
    named = checked.surrogate_spec + (" (auto)" if checked.auto_choice else "")
    print(f"treezoo: minimizing {problem.name} (dim {problem.space.dim}, {len(problem.space.paths)} path(s)) "
          f"with surrogate={named}, acquisition={args.acquisition or 'default'}, "
          f"output transform={checked.output_transform}, budget={args.budget}, "
          f"seed={args.seed}" + (", deterministic" if args.deterministic else ""),
          flush=True)
    if args.workers or executor is not None:
        print(f"treezoo: {args.workers or 'all'} evaluations at once on "
              + (f"the Dask cluster at {args.dask_scheduler}" if executor is not None else "a process pool"), flush=True)
    t0 = time.perf_counter()
    try:
        # worker processes get a problem that pickles (by name); in this process, the problem itself
        objective = problem if (args.workers or 1) == 1 and executor is None and args.timeout is None else \
            ProblemByName(args.problem, noise_std=args.noise, seed=args.seed)
        result = minimize(objective, problem.space, surrogate=args.surrogate, budget=args.budget, seed=args.seed,
                          n_init=args.n_init, acquisition=args.acquisition, progress=not args.quiet,
                          checkpoint=args.save, output_transform=args.output_transform,
                          deterministic=args.deterministic, n_workers=args.workers, executor=executor,
                          timeout=args.timeout, batch_strategy=args.batch_strategy,
                          chain_workers=args.chain_workers, on_failure=args.on_failure)
    except ValueError as exc:  # e.g. --save names the journal of another run
        print(f"treezoo: {exc}", file=sys.stderr)
        return 2
    finally:
        if executor is not None:
            executor.close()
    failed = sum(h['status'] != 'ok' for h in result.history)
    if result.best_value is None:
        first = next((h["error"] for h in result.history if h["error"]), "non-finite values")
        print(f"every evaluation failed ({failed} of {len(result.history)}); the first: {first}", file=sys.stderr)
        return 1
    print(f"best value:  {result.best_value:.6g}")
    if problem.optimum is not None:
        print(f"regret:      {problem.regret(result.best_value):.3e}  (known optimum {problem.optimum})")
    print(f"best config: {json.dumps(result.best_config)}")
    print(f"evaluations: {len(result.history)} ({failed} failed) in {time.perf_counter() - t0:.1f} s")
    if args.plot is not None:  # with --noise the observed values may fall below the optimum: plot them as they are
        optimum = problem.optimum if args.noise == 0 else None
        result.plot(optimum, seconds=args.wall_clock, wall_clock=args.wall_clock, path=args.plot,
                    title=f"{problem.name}, {checked.surrogate_spec}, seed {args.seed}")
        print(f"plot:        {args.plot}")
    return 0


def _check_plot_file(parser, flag: str, path: str) -> None:
    """Refuse, before any work, a figure file matplotlib cannot write or a folder that does not exist."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        parser.error(f'{flag} needs matplotlib: pip install "treezoo[plot]"')
    suffix = os.path.splitext(path)[1].lstrip(".").lower()
    formats = Figure().canvas.get_supported_filetypes()
    if suffix not in formats:
        parser.error(f"{flag} {path}: the file's suffix must name a figure format ({', '.join(sorted(formats))})")
    _check_folder(parser, flag, path)


def _check_folder(parser, flag: str, path: str) -> None:
    """Refuse, before any work, an output file whose folder does not exist."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        parser.error(f"{flag} {path}: the folder {folder} does not exist")


def _load_saved_run(parser, path: str):
    """The run saved at `path`, read without taking its lock (a missing file is refused as a usage error); None
    once the reason it cannot be read is printed."""
    if not os.path.isfile(path):
        parser.error(f"{path}: no such file")
    from optim.loop import BayesOpt
    try:
        return BayesOpt.load(path)
    except (ValueError, TypeError) as exc:
        print(f"treezoo: {exc}", file=sys.stderr)
        return None


def _report_saved_run(parser, args) -> int:
    """`treezoo status`: print optim.status's report of a saved run (and its table with --csv)."""
    if args.csv is not None:
        _check_folder(parser, "--csv", args.csv)
    opt = _load_saved_run(parser, args.path)
    if opt is None:
        return 2
    from optim.status import run_status
    print(f"{args.path}")
    print("\n".join(run_status(opt)))
    if args.csv is not None:
        opt.to_dataframe().to_csv(args.csv, index=False)
        print(f"table:       {args.csv} ({len(opt.history)} rows)")
    return 0


def _plot_saved_run(parser, args) -> int:
    """`treezoo plot`: draw a saved run's history."""
    out = args.out or os.path.splitext(args.path)[0] + ".png"
    _check_plot_file(parser, "--out", out)
    opt = _load_saved_run(parser, args.path)
    if opt is None:
        return 2
    from optim.plots import plot_history
    running = f", {len(opt.pending)} running" if opt.pending else ""
    try:
        plot_history(opt.history, args.optimum, seconds=args.seconds, wall_clock=args.wall_clock, path=out,
                     title=f"{os.path.basename(args.path)}: {len(opt.history)} evaluations{running}")
    except (ValueError, TypeError) as exc:  # e.g. a value below the stated optimum, or --wall-clock without stamps
        print(f"treezoo: {exc}", file=sys.stderr)
        return 2
    best = opt.best_value
    print(f"{len(opt.history)} evaluations ({len(opt.pending)} running), best "
          f"{'none yet' if best is None else format(best, '.6g')}: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
