"""`treezoo-bench`: run surrogates and peer optimizers side by side, write JSON lines, print tables and plots.

    treezoo-bench run --problems hartmann6 jenatton_small --methods gp random optuna_tpe --seeds 5 \\
        --budget 50 --n-init 10 --out benchmarks/results/foundation.jsonl [--jobs 2]
    treezoo-bench table benchmarks/results/foundation.jsonl --at 20 50 [--reference gp] [--plots DIR]
    treezoo-bench timing --sizes 20 50 100 --out benchmarks/results/timing.json
    treezoo-bench compiles --iterations 100 --out benchmarks/results/compiles.json
    treezoo-bench regression --problem jenatton_small --sizes 10 20 30 40 --seeds 10
    treezoo-bench render BENCHMARKS.md [--check]

Every method evaluates the same initial design for a given seed first (peers through their own
API). Finished (method, problem, seed, budget, n_init, noise) cells found in the output file are
skipped, so an interrupted run resumes; a crashing run is recorded and the others go on. A pairing of one of
our methods with a problem that `BayesOpt` refuses is reported before any run starts.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np

from optim.mip import FORMULATIONS
from optim.batch import BATCH_STRATEGIES
from optim.parallel import tied_to_this_process
from optim.bench import report
from optim.bench.problems.additive import STRUCTURES
from optim.bench.recovery import STARTS
from optim.transforms import OUTPUT_TRANSFORMS

#: method flags for BayesOpt(on_failure=...); without one, the library's default ("worst" since 2026-12-07; the
#: runs before it ignored failures, which '+failignore' repeats)
FAILURE_FLAGS = {"failworst": "worst", "failignore": "ignore"}

#: the batch-strategy flags as the error messages list them: '+believer' / '+liar' / ...
_STRATEGY_FLAGS = " / ".join(f"'+{s}'" for s in BATCH_STRATEGIES)


def _versions(extra=()) -> dict:
    import importlib.metadata as md
    out = {"python": platform.python_version()}
    for pkg in ("treezoo", "jax", "numpyro", "numpy", "scipy", *extra):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    commit = code_commit()
    if commit is not None:
        out["treezoo_commit"] = commit
    return out


@functools.lru_cache(maxsize=1)
def code_commit() -> str | None:
    """The git commit of the checkout this process imported `optim` from, with "+dirty" if its tracked files
    differ from it; None outside a git checkout. Which code ran is then in every record, whatever the current
    directory or PYTHONPATH was (``python -m`` puts the current directory first on the path, so a run meant for
    a worktree but started elsewhere runs that directory's code)."""
    import optim
    root = os.path.dirname(os.path.dirname(os.path.abspath(optim.__file__)))
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _variant(model: str, **options):
    """A builder `space -> model(space, **options)` for the zoo class `model` ("module.Class"), imported on use so
    that listing the variants imports no model."""
    module, _, cls = model.rpartition(".")

    def build(space):
        import importlib
        return getattr(importlib.import_module(module), cls)(space, **options)
    return build


#: ablations and variants run by the benchmarks, not registered in the library (each is a constructor option)
ABLATIONS = {# forests from the prior, ignoring the data (RDUCB-like)
             "additive_random": _variant("zoo.additive.Additive", graph="prior"),
             # the lengthscale prior: the default since 2026-11-27 given by name (its benchmark runs carry this name),
             # and the zoo's 2-D prior, the default before
             "additive_ls015": _variant("zoo.additive.Additive", lengthscale_prior=(0.15, 1.0)),
             "additive_ls2d": _variant("zoo.additive.Additive", lengthscale_prior=None),
             "gp_warp": _variant("zoo.gp.GP", warp=True),  # 004's "BO WARP" baseline: GP(space, warp=True)
             "treed_warp": _variant("zoo.treed.Treed", warp=True),  # 004's "HTBO WARP"
             # the partition sampled under the weighted density; then tgp-like, with the leaf likelihoods only
             "treed_mcmc": _variant("zoo.treed.Treed", partition="mcmc"),
             "treed_bayes": _variant("zoo.treed.Treed", partition="mcmc", likelihood="leaves"),
             # the same with per-leaf input warping: the sampled partition under HTBO WARP's leaves
             "treed_bayes_warp": _variant("zoo.treed.Treed", partition="mcmc", likelihood="leaves", warp=True),
             # Add-Tree with its lengthscales partially pooled across vertices (AddTree(pooled=True)): a vertex seen
             # by few points borrows the lengthscale scale learned on the others
             "addtree_pooled": _variant("zoo.addtree.AddTree", pooled=True)}


def benchmark_model(name: str, space):
    """The model a benchmark names: a variant of ABLATIONS, else a registered surrogate."""
    from optim.registry import make_surrogate
    return ABLATIONS[name](space) if name in ABLATIONS else make_surrogate(name, space)


def methods_available() -> list[str]:
    from optim.bench.peers import PEERS
    from optim.registry import available
    return available() + sorted(ABLATIONS) + sorted(PEERS)


def split_method(method: str) -> tuple[str, str | None, str | None, bool]:
    """'surrogate[:acquisition][/output transform][+deterministic][+qN][+liar][+explore]' -> (surrogate,
    acquisition or None, transform or None, deterministic): 'addtree:logei' is a non-default acquisition, 'gp/log'
    fits the GP to log y, 'addtree+deterministic' tells the model the objective is exact (BayesOpt(deterministic=True)).
    The batch options are read by `batch_options`, the path exploration by `explore_paths`."""
    spec, *flags = method.split("+")
    for flag in flags:
        if flag not in ("deterministic", "explore", *FAILURE_FLAGS) and not _is_batch_flag(flag) \
                and not _is_optimizer_flag(flag):
            raise ValueError(f"unknown method option {flag!r} in {method!r}; the options are '+deterministic', "
                             "'+failworst' / '+failignore' (on_failure='worst', the default, or 'ignore'), "
                             f"'+qN' (synchronous batches of N), {_STRATEGY_FLAGS} (the batch strategy), "
                             "'+explore' (epsilon-greedy paths, see explore_paths), '+pathnearN' (L-BFGS-B: the "
                             "incumbent and N rows near it in its path's pool), '+indep1' (L-BFGS-B: one run per start, "
                             "in lockstep), '+scipT', '+forestsK', '+startsK' and "
                             "'+nearN' (BARK's MIP: T seconds of SCIP, K forests in the MIP, K pool points polished, N "
                             "rows near the incumbent in the pool; see mip_options), '+polishK', "
                             "'+hybrids0' / '+hybrids1', '+localN', '+fineE' (message passing: K candidates polished by "
                             "L-BFGS-B, hybrid rows off or on, N rows near the incumbent, their step sd from 10^-E to "
                             "0.1; see message_passing_options), '+depthK' (NUTS trees of at most 2^K - 1 leapfrog steps) "
                             "'+restartK' (cold chains beside the warm ones every K-th iteration, the best kept; 0: "
                             "never), '+refitK', '+growthP' and '+thinK' (K sweeps between kept draws; see "
                             "sampler_options)")
    spec, _, transform = spec.partition("/")
    name, _, acquisition = spec.partition(":")
    return name, acquisition or None, transform or None, "deterministic" in flags  # None: BayesOpt's default


def _is_batch_flag(flag: str) -> bool:
    return flag in BATCH_STRATEGIES or (flag.startswith("q") and flag[1:].isdigit() and int(flag[1:]) >= 1)


#: method flags that set an optimizer's config field from the number that follows them, with the least number
#: allowed: '+scip10' -> MIPConfig(time_limit=10), '+starts16' -> MIPConfig(n_starts=16), '+near128' ->
#: MIPConfig(n_local=128) (rows near the incumbent in the pool), '+polish0' -> MessagePassingConfig(n_polish=0), '+hybrids0' ->
#: MessagePassingConfig(hybrids=False), '+local0' -> MessagePassingConfig(n_local=0), '+fine2' ->
#: MessagePassingConfig(local_scales=(0.01, 0.1)) (the local rows' step sd log-uniform from 10^-2 to 0.1)
MIP_FLAGS = {"scip": ("time_limit", float, 1), "forests": ("forests", int, 1), "starts": ("n_starts", int, 1),
             "near": ("n_local", int, 0)}
#: '+pathnear64' -> LBFGSConfig(n_local=64): the incumbent and 64 rows near it in the pool of its path (L-BFGS-B);
#: '+indep1' -> LBFGSConfig(independent_starts=True): one L-BFGS-B run per start, in lockstep (optim.lockstep)
LBFGS_FLAGS = {"pathnear": ("n_local", int, 0), "indep": ("independent_starts", lambda v: bool(int(v)), 0)}
MESSAGE_PASSING_FLAGS = {"polish": ("n_polish", int, 0), "hybrids": ("hybrids", lambda v: bool(int(v)), 0),
                         "local": ("n_local", int, 0), "fine": ("local_scales", lambda v: (10.0 ** -int(v), 0.1), 2)}


def _percent(number: str) -> float:
    return int(number) / 100.0


#: method flags that override a field of the model's own loop settings (SamplerSettings.for_surrogate):
#: '+depth3' -> max_tree_depth=3, '+restart5' -> restart_every=5 (cold chains beside the warm ones every 5th
#: iteration, the best kept), '+restart0' -> never, '+refit5' -> refit_every=5, '+growth5' -> refit_growth=0.05
#: (MCMC once the data have grown by 5%), '+thin100' -> thinning=100 (sweeps between kept draws); each is
#: (SamplerSettings field, cast, least value)
SAMPLER_FLAGS = {"depth": ("max_tree_depth", int, 1), "restart": ("restart_every", int, 0),
                 "refit": ("refit_every", int, 1), "growth": ("refit_growth", _percent, 0),
                 "thin": ("thinning", int, 1)}


def _flag_setting(flag: str, flags: dict) -> tuple | None:
    """(config field, value) of `flag` under one of `flags`' prefixes ('scip10' -> ('time_limit', 10.0)), else None."""
    for prefix, (field, cast, least) in flags.items():
        number = flag[len(prefix):]
        if flag.startswith(prefix) and number.isdigit() and int(number) >= least:
            return field, cast(number)
    return None


def _is_optimizer_flag(flag: str) -> bool:
    return any(_flag_setting(flag, flags) is not None
               for flags in (MIP_FLAGS, MESSAGE_PASSING_FLAGS, SAMPLER_FLAGS, LBFGS_FLAGS))


def _options(method: str, flags: dict) -> dict:
    return dict(s for s in (_flag_setting(f, flags) for f in method.split("+")[1:]) if s is not None)


def mip_options(method: str) -> dict:
    """MIPConfig fields set by a method's flags: 'bark+scip10+forests4' -> {time_limit: 10.0, forests: 4},
    'bark+starts16+near128' -> {n_starts: 16, n_local: 128}."""
    return _options(method, MIP_FLAGS)


def forest_search_config(method: str):
    """The settings BARK's pool-search flags give a method: MIPConfig when its criterion is one the MIP writes
    (UCB, BARK's default), else LeafAscentConfig, the optimizer BARK resolves to for log-EI, EI and PI
    ('bark:logei+near128' -> LeafAscentConfig(n_local=128)); None without such flags. Raises ValueError for a
    flag the leaf ascent has no field for ('bark:logei+scip10': it runs no SCIP)."""
    from optim.leaf_ascent import LeafAscentConfig
    from optim.mip import MIPConfig
    from optim.registry import OPTIMIZERS

    options = mip_options(method)
    if not options:
        return None
    _, acquisition, _, _ = split_method(method)
    if acquisition is None or acquisition.partition(",")[0] in OPTIMIZERS["mip"].acquisitions:
        return MIPConfig(**options)
    ascent = {f.name for f in dataclasses.fields(LeafAscentConfig)}
    unused = [f"+{prefix}" for prefix, (name, _, _) in MIP_FLAGS.items() if name in options and name not in ascent]
    if unused:
        raise ValueError(f"{method!r}: {', '.join(unused)} set the MIP, which maximizes "
                         f"{list(OPTIMIZERS['mip'].acquisitions)} only; with {acquisition!r} BARK's search is "
                         "leaf_ascent, which takes '+startsK' and '+nearN'")
    return LeafAscentConfig(**options)


def message_passing_options(method: str) -> dict:
    """MessagePassingConfig fields set by a method's flags: 'additive+polish0' -> {n_polish: 0} (no L-BFGS-B polish),
    'additive:ucb+hybrids0+local0' -> {hybrids: False, n_local: 0} (the paper's candidates alone)."""
    return _options(method, MESSAGE_PASSING_FLAGS)


def sampler_options(method: str) -> dict:
    """SamplerSettings fields a method's flags override in the model's own settings: 'additive+depth3' ->
    {max_tree_depth: 3}, 'treed+restart5' -> {restart_every: 5},
    'gp+growth5' -> {refit_growth: 0.05}, 'bark+thin100' -> {thinning: 100}."""
    return _options(method, SAMPLER_FLAGS)


def batch_options(method: str) -> tuple[int, str]:
    """(batch size, strategy) of a method: 'gp+q4+liar' proposes 4 at a time with the constant liar."""
    flags = method.split("+")[1:]
    q = next((int(f[1:]) for f in flags if f.startswith("q") and f[1:].isdigit()), 1)
    strategy = next((f for f in flags if f in BATCH_STRATEGIES), "believer")
    return q, strategy


#: the probability of a random path per proposal for a method flagged '+explore' (LBFGSConfig.explore_paths)
EXPLORE_PATHS = 0.2


def explore_paths(method: str) -> float:
    """LBFGSConfig.explore_paths for a method: EXPLORE_PATHS with the flag '+explore', else 0."""
    return EXPLORE_PATHS if "explore" in method.split("+")[1:] else 0.0


def run_batches(problem, surrogate, budget: int, seed: int, n_init: int, q: int, **settings) -> list[dict]:
    """Synchronous batch BO: ask q, evaluate them, tell all, repeat (the regret-per-evaluation comparison of
    batch strategies, free of the timing that decides an asynchronous run)."""
    from optim.loop import BayesOpt

    opt = BayesOpt(problem.space, surrogate=surrogate, seed=seed, n_init=n_init, **settings)
    while len(opt.history) < budget:
        for config in opt.ask(min(q, budget - len(opt.history))):
            opt.tell(config, problem(config))
    return opt.history


def method_settings(method: str, space, design: str = "sobol", chain_workers: int = 0) -> tuple:
    """(surrogate, batch size q, BayesOpt keyword settings) of one of our methods on a problem's space, from its
    name and flags ('bark:logei+near128', 'gp+q4+qei', 'additive+depth3', ...)."""
    surrogate, acquisition, transform, deterministic = split_method(method)
    q, strategy = batch_options(method)
    sampler = sampler_options(method)
    if surrogate in ABLATIONS or sampler:  # an instance: its own loop settings are the flags' base
        surrogate = benchmark_model(surrogate, space)
    settings = dict(acquisition=acquisition, design=design, output_transform=transform,
                    deterministic=deterministic, batch_strategy=strategy, chain_workers=chain_workers,
                    on_failure=next((FAILURE_FLAGS[f] for f in method.split("+")[1:] if f in FAILURE_FLAGS), None))
    if sampler:
        from optim.loop import SamplerSettings
        settings["sampler"] = dataclasses.replace(SamplerSettings.for_surrogate(surrogate), **sampler)
    epsilon, forest, passing = explore_paths(method), forest_search_config(method), message_passing_options(method)
    lbfgs = _options(method, LBFGS_FLAGS)
    if epsilon or lbfgs:
        from optim.path_lbfgs import LBFGSConfig
        settings["optimizer"] = LBFGSConfig(explore_paths=epsilon, **lbfgs)
    if forest is not None:
        settings["optimizer"] = forest
    if passing:
        from optim.message_passing import MessagePassingConfig
        settings["optimizer"] = MessagePassingConfig(**passing)
    return surrogate, q, settings


def method_refusal(method: str, problem_name: str, design: str = "sobol") -> str | None:
    """Why BayesOpt refuses one of our methods on a problem (an optimizer that cannot serve the surrogate or its
    criterion, a model that does not take the space, ...), found by building it without evaluating anything;
    None if it is accepted. The runner asks before any cell runs, so that a bad pairing costs no run."""
    from optim.bench.problems import get_problem
    from optim.loop import BayesOpt

    try:
        space = get_problem(problem_name).space
        surrogate, _, settings = method_settings(method, space, design)
        BayesOpt(space, surrogate=surrogate, seed=0, **settings)
    except Exception as exc:  # whatever refuses the build would crash every cell of the pairing
        detail = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        return f"{method!r} on {problem_name!r}: {detail}"
    return None


def run_cell(method: str, problem_name: str, seed: int, budget: int, n_init: int, noise: float = 0.0,
             design: str = "sobol", chain_workers: int = 0) -> dict:
    """One run of one method; a JSON-able record with the full trace (a crash is recorded, not raised).
    `chain_workers`: BayesOpt's, for our methods (peers ignore it); recorded when >= 2."""
    from optim.loop import initial_design, minimize
    from optim.bench.peers import PEERS
    from optim.bench.problems import get_problem

    problem = get_problem(problem_name, noise_std=noise, seed=seed)
    peer = PEERS.get(method)
    record = {"method": method, "problem": problem_name, "seed": seed, "budget": budget, "n_init": n_init,
              "noise": noise, "design": design, "optimum": problem.optimum, "date": datetime.date.today().isoformat(),
              "versions": _versions(peer.requires if peer else ())}
    if chain_workers >= 2 and peer is None:
        record["chain_workers"] = chain_workers
    t0 = time.perf_counter()
    try:
        if peer is not None:
            history = peer.run(problem, budget, seed, initial_design(problem.space, n_init, seed, design))
        else:
            surrogate, q, settings = method_settings(method, problem.space, design, chain_workers)
            if q > 1:
                history = run_batches(problem, surrogate, budget, seed, n_init, q, **settings)
            else:
                history = minimize(problem, problem.space, surrogate=surrogate, budget=budget, seed=seed,
                                   n_init=n_init, **settings).history
    except Exception as exc:  # one crashing run must not stop the others
        record.update(status="crashed", error=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - t0)
        return record
    record.update(
        status="ok", seconds=time.perf_counter() - t0,
        values=[h["value"] for h in history], eval_status=[h["status"] for h in history],
        sources=[h["source"] for h in history], configs=[h["config"] for h in history],
        fit_seconds=[h["fit_seconds"] for h in history], acq_seconds=[h["acq_seconds"] for h in history])
    info = [h.get("optimizer_info") for h in history]
    if any(i is not None for i in info):  # e.g. BARK's MIP: status, gap, fallback per iteration
        record["optimizer_info"] = info
    return record


def _cell_key(r: dict) -> tuple:
    return (r["method"], r["problem"], int(r["seed"]), int(r["budget"]), int(r["n_init"]), float(r.get("noise", 0.0)),
            r.get("design", "sobol"))


def worker_pool(jobs: int) -> ProcessPoolExecutor:
    """The runner's pool of `jobs` spawned workers (JAX in the parent makes fork unsafe), each ending with the
    runner: a killed runner must not leave its cells, up to half an hour of both cores each, running."""
    return ProcessPoolExecutor(jobs, mp_context=get_context("spawn"), **tied_to_this_process())


def cmd_run(args) -> int:
    from optim.bench.peers import PEERS

    methods = []
    for m in args.methods:
        try:
            name, _, transform, _ = split_method(m)
        except ValueError:
            name = transform = None
        if name not in methods_available() or (transform is not None and transform not in OUTPUT_TRANSFORMS):
            print(f"treezoo-bench: unknown method {m!r}; available: {methods_available()}, optionally "
                  f"followed by ':acquisition', '/transform' ({', '.join(OUTPUT_TRANSFORMS)}), '+deterministic', "
                  f"'+qN', {_STRATEGY_FLAGS} and '+explore'",
                  file=sys.stderr)
            return 2
        if name in PEERS and m != name:
            print(f"treezoo-bench: {m!r}: peer methods take no ':', '/' or '+' options", file=sys.stderr)
            return 2
        missing = PEERS[m].missing() if m in PEERS else []
        if missing:
            print(f"treezoo-bench: skipping {m}: {', '.join(missing)} not installed ({PEERS[m].install_hint})")
        else:
            methods.append(m)
    refusals = [why for m in methods if m not in PEERS for p in args.problems
                if (why := method_refusal(m, p, args.design)) is not None]
    if refusals:
        print("treezoo-bench: refused before any run:\n  " + "\n  ".join(refusals), file=sys.stderr)
        return 2
    done = {_cell_key(r) for r in report.load_records(args.out) if r.get("status") == "ok"}
    cells = [(m, p, s, args.budget, args.n_init, args.noise, args.design) for p in args.problems for m in methods
             for s in range(args.seed0, args.seed0 + args.seeds)]
    todo = [c for c in cells if c not in done]
    print(f"treezoo-bench: {len(cells)} cells, {len(cells) - len(todo)} already in {args.out}, running {len(todo)}",
          flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)

    def write(rec):
        append_record(args.out, rec)
        best = min([v for v in rec.get("values", []) if v is not None and np.isfinite(v)], default=None)
        extra = f"best {best}" if rec["status"] == "ok" else rec.get("error", "")
        print(f"  {rec['method']:>14s} {rec['problem']:>24s} seed {rec['seed']}: {rec['status']}, {extra}, "
              f"{rec['seconds']:.1f} s", flush=True)

    if args.jobs > 1 and todo:
        # one thread per worker (XLA, and OpenMP for torch): several multi-threaded processes on few
        # cores thrash badly
        os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        os.environ.setdefault("MKL_NUM_THREADS", "1")
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        with worker_pool(args.jobs) as pool:
            for rec in pool.map(functools.partial(run_cell, chain_workers=args.chain_workers), *zip(*todo)):
                write(rec)
    else:
        for c in todo:
            write(run_cell(*c, chain_workers=args.chain_workers))
    return 0


def cmd_table(args) -> int:
    records = [r for path in args.files for r in report.load_records(path)]
    print(report.regret_table(records, args.at))
    if args.reference:
        print()
        print(report.wilcoxon_table(records, args.reference, max(args.at)))
    if args.plots:
        for problem in sorted({r["problem"] for r in records}):
            print("plot:", report.plot_regret(records, problem, os.path.join(args.plots, f"regret_{problem}.png")))
    return 0


def timing_at_size(n: int, dim: int = 6, repeats: int = 3, seed: int = 0) -> dict:
    """Seconds for one warm-started BO iteration (fit, acquisition) of the GP on Hartmann-6 data of size n."""
    from optim.loop import BayesOpt
    from optim.bench.problems import hartmann6

    problem = hartmann6(extra_dims=dim - 6)
    opt = BayesOpt(problem.space, "gp", seed=seed, n_init=n)
    for config in problem.space.sobol(n, seed=seed):
        opt.tell(config, problem(config))
    fits, acqs = [], []
    for _ in range(repeats + 2):  # iteration 1 is the cold fit, iteration 2 compiles the warm run: not counted
        c = opt.ask()
        opt.tell(c, problem(c))
        h = opt.history[-1]
        fits.append(h["fit_seconds"])
        acqs.append(h["acq_seconds"])
    return {"n": n, "dim": dim, "fit_s": float(np.median(fits[2:])), "acq_s": float(np.median(acqs[2:])),
            "cold_fit_s": fits[0], "cold_acq_s": acqs[0], "date": datetime.date.today().isoformat()}


def binary_tree_space(depth: int):
    """A complete binary conditional space of the given depth with one real on every vertex (2**depth paths,
    2**(depth+1) - 1 reals, 2**depth - 1 decisions), and a seeded objective: a bowl over the reals of the
    path plus a per-leaf offset."""
    from zoo import Node, Real, Space

    counter = iter(range(1 << (depth + 2)))

    def node(level):
        k = next(counter)
        params = (Real(f"x{k}", 0.0, 1.0),)
        if level == depth:
            return Node(f"v{k}", params)
        return Node(f"v{k}", params, choice=f"d{k}", children={0: node(level + 1), 1: node(level + 1)})
    space = Space(node(0))
    rng = np.random.default_rng(depth)
    centre = dict(zip(space.names, rng.uniform(0.2, 0.8, space.dim)))
    offset = {p.leaf: float(v) for p, v in zip(space.paths, rng.uniform(0.0, 1.0, len(space.paths)))}

    def f(config):
        path = space.active_path(config)
        return offset[path.leaf] + sum((v - centre[k]) ** 2 for k, v in config.items() if k.startswith("x"))
    return space, f


def paths_timing(depth: int, n: int, iterations: int, max_paths, seed: int = 0) -> dict:
    """Seconds per BO iteration (fit, acquisition) and the acquisition value reached by the GP with the
    per-path L-BFGS-B optimizer on a complete binary space, every path searched or only the screened ones."""
    from optim.loop import BayesOpt
    from optim.path_lbfgs import LBFGSConfig

    space, f = binary_tree_space(depth)
    opt = BayesOpt(space, "gp", seed=seed, n_init=n, optimizer=LBFGSConfig(max_paths=max_paths))
    for config in space.sobol(n, seed=seed, cover_paths=True):
        opt.tell(config, f(config))
    rows = []
    for _ in range(iterations):
        c = opt.ask()
        opt.tell(c, f(c))
        h = opt.history[-1]
        rows.append({"fit_s": h["fit_seconds"], "acq_s": h["acq_seconds"], "acq_value": h["acq_value"]})
    return {"depth": depth, "paths": len(space.paths), "dim": space.dim, "n": n, "max_paths": max_paths,
            "iterations": rows, "date": datetime.date.today().isoformat()}


def scaling_cell(surrogate: str, n: int, dim: int | None = None, seed: int = 0, cold_warmup: int = 20,
                 problem: str | None = None, chain_workers: int = 0) -> dict:
    """Seconds of one BO iteration of `surrogate` (a registered name or a benchmark variant, optionally with
    sampler flags: 'additive+depth3') at data size n on a named problem, or on the additive GP tree function of
    dimension `dim`: a warm MCMC refit (the second one: the first compiles), an iteration between refits (draws
    conditioned on the new data) and the acquisition. The cold fit that starts the chains uses only `cold_warmup`
    sweeps: it is not what is measured. `chain_workers`: BayesOpt's (k >= 2: the chains in k child processes)."""
    from optim.bench.problems import get_problem
    from optim.bench.problems.additive import additive_gp
    from optim.loop import BayesOpt, SamplerSettings

    problem = get_problem(problem) if problem is not None else additive_gp("tree", dim)
    dim = problem.space.dim
    model = benchmark_model(split_method(surrogate)[0], problem.space)
    settings = dataclasses.replace(SamplerSettings.for_surrogate(model), cold_warmup=cold_warmup,
                                   **sampler_options(surrogate))
    opt = BayesOpt(problem.space, model, seed=seed, n_init=n, sampler=settings, chain_workers=chain_workers)
    for config in problem.space.sobol(n, seed=seed):
        opt.tell(config, problem(config))
    rows, fits = [], []  # (fit s, acq s, MCMC ran) per iteration; the iterations whose fit ran MCMC
    with opt:
        while len(fits) < 3:  # the cold fit, the first warm one (it compiles) and the measured one
            c = opt.ask()
            opt.tell(c, problem(c))
            h = opt.history[-1]
            rows.append((h["fit_seconds"], h["acq_seconds"], not h.get("conditioned", False)))
            if rows[-1][2]:
                fits.append(len(rows) - 1)
    every = fits[2] - fits[1]  # iterations from one MCMC fit to the next at this size (refit_every, refit_growth)
    refit = rows[fits[2]][0]
    between = [f for f, _, mcmc in rows[1:] if not mcmc]
    acq = float(np.median([a for _, a, _ in rows[1:]]))
    return {"surrogate": surrogate, "problem": problem.name, "n": n, "dim": dim, "refit_every": every, "refit_s": refit,
            "between_s": float(np.median(between)) if between else None, "acq_s": acq,
            "per_iteration_s": refit / every + (float(np.median(between)) if between else 0.0)
            * (every - 1) / every + acq,
            **({"chain_workers": chain_workers} if chain_workers >= 2 else {}),
            "date": datetime.date.today().isoformat()}


def regression_cell(model: str, problem_name: str, n: int, seed: int, n_test: int = 50, sampler=None) -> dict:
    """Test MSE of a surrogate's (or a benchmark variant's) posterior-mean prediction from n random training
    points (000 Fig. 4): decisions are fair coin flips and parameters uniform (`Space.sample`), test points
    likewise. Also R^2 (1 - MSE
    over the test values' variance), the Spearman rank correlation of mean and truth (what ranks candidates) and,
    for models with one noise variance, the NLPD (`predictive_scores`). `sampler`: SamplerSettings, None (the
    defaults) or "own" (the model's own BO-loop settings, `SamplerSettings.for_surrogate`). `model` may end in
    '+deterministic' (its noiseless form, as `BayesOpt(deterministic=True)` fits it)."""
    from scipy.stats import spearmanr

    from inference import sample
    from optim.loop import SamplerSettings
    from optim.bench.problems import get_problem

    problem = get_problem(problem_name)
    space = problem.space
    rng = np.random.default_rng(np.random.SeedSequence([seed, n, 7]))
    train, test = space.sample(n, seed=rng), space.sample(n_test, seed=rng)
    X, y = space.encode(train), np.array([problem(c) for c in train])
    Xt, yt = space.encode(test), np.array([problem(c) for c in test])
    name, acquisition, transform, exact = split_method(model)  # 'bark+deterministic': the model's noiseless form
    if acquisition or transform or model.count("+") > exact:
        raise ValueError(f"a regression fits a model, so of the method options only '+deterministic' applies: {model!r}")
    surrogate = benchmark_model(name, space)
    if exact:
        surrogate = surrogate.noiseless()
    s = (SamplerSettings.for_surrogate(surrogate) if sampler == "own"
         else sampler if sampler is not None else SamplerSettings())
    t0 = time.perf_counter()
    post = sample(surrogate, X, y, key=seed, num_warmup=s.cold_warmup,
                  num_samples=s.num_samples, num_chains=s.num_chains, thinning=s.thinning,
                  max_tree_depth=s.max_tree_depth)
    seconds = time.perf_counter() - t0
    moments = post.predict(Xt)
    mean = moments[0].mean(0)
    mse = float(np.mean((mean - yt) ** 2))
    scores = predictive_scores(post, Xt, yt, moments) if "noise" in post.samples else {}
    return {"model": model, "problem": problem_name, "n": n, "seed": seed, "n_test": n_test,
            **({"sampler": "own"} if sampler == "own" else {}),
            "mse": mse, "r2": 1.0 - mse / float(np.var(yt)), "spearman": float(spearmanr(mean, yt).statistic),
            "nlpd": scores.get("nlpd"), "seconds": seconds, "date": datetime.date.today().isoformat()}


DATASETS = ("diabetes",)


def load_dataset(name: str):
    """A scikit-learn bundled regression dataset as (Space of its columns, X raw [N, D], y [N])."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known: {DATASETS}")
    from sklearn.datasets import load_diabetes

    from zoo.space import Real, Space
    data = load_diabetes()
    X, y = np.asarray(data.data, dtype=np.float64), np.asarray(data.target, dtype=np.float64)
    space = Space([Real(f, float(lo), float(hi)) for f, lo, hi in zip(data.feature_names, X.min(0), X.max(0))])
    return space, X, y


def predictive_scores(post, Xt: np.ndarray, yt: np.ndarray, moments=None) -> dict:
    """Test MSE of the posterior-mean prediction and the NLPD: -mean_i log (1/S) sum_s N(y_i | mu_s(x_i),
    var_s(x_i) + noise_s), the sample-averaged Gaussian predictive density of y (noise included). `moments`:
    `post.predict(Xt)` where the caller has it already."""
    mean, var = post.predict(Xt) if moments is None else moments
    noise = np.asarray(post.flat_samples()["noise"]).reshape(-1, 1) * float(post.data.y_std) ** 2
    total = var + noise
    logp = -0.5 * (np.log(2 * np.pi * total) + (yt[None] - mean) ** 2 / total)
    nlpd = -np.mean(np.logaddexp.reduce(logp, axis=0) - np.log(logp.shape[0]))
    return {"mse": float(np.mean((mean.mean(0) - yt) ** 2)), "nlpd": float(nlpd)}


def dataset_regression_cell(model: str, dataset: str, split: int, n_train: int) -> dict:
    """One random train/test split of a bundled dataset: fit the surrogate (its own sampler defaults) on
    n_train rows and score the rest by MSE and NLPD (003 Sec. 7.1 / App. E.1)."""
    from inference import sample
    from optim.loop import SamplerSettings
    from optim.registry import make_surrogate

    space, Xraw, y = load_dataset(dataset)
    rng = np.random.default_rng(np.random.SeedSequence([split, 11]))
    order = rng.permutation(len(y))
    train, test = order[:n_train], order[n_train:]
    names = [c.name for c in space.columns]
    X = space.encode([dict(zip(names, map(float, row))) for row in Xraw])
    surrogate = make_surrogate(model, space)
    s = SamplerSettings.for_surrogate(surrogate)
    t0 = time.perf_counter()
    post = sample(surrogate, X[train], y[train], key=split, num_warmup=s.cold_warmup, num_samples=s.num_samples,
                  num_chains=s.num_chains, thinning=s.thinning, max_tree_depth=s.max_tree_depth,
                  size=n_train)  # one fit per split: no row bucket needed
    scores = predictive_scores(post, X[test], y[test])
    return {"model": model, "dataset": dataset, "split": split, "n_train": n_train, "n_test": len(test), **scores,
            "seconds": time.perf_counter() - t0, "date": datetime.date.today().isoformat()}


def run_cells(name: str, out: str, cells: list, key, cell_fn, describe) -> None:
    """Run the cells not yet in `out` (matched by key(record) == cell), appending one JSON line each."""
    done = {key(r) for r in report.load_records(out)}
    todo = [c for c in cells if c not in done]
    print(f"treezoo-bench {name}: {len(cells)} cells, running {len(todo)}", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    for c in todo:
        rec = cell_fn(*c)
        append_record(out, rec)
        print(f"  {describe(rec)} ({rec['seconds']:.1f} s)", flush=True)


def cmd_regression_data(args) -> int:
    cells = [(m, args.dataset, k, args.n_train) for k in range(args.splits) for m in args.models]
    run_cells("regression-data", args.out, cells, lambda r: (r["model"], r["dataset"], r["split"], r["n_train"]),
              dataset_regression_cell,
              lambda r: f"{r['model']:>8s} split {r['split']:2d}: mse {r['mse']:.4g} nlpd {r['nlpd']:.4f}")
    print(report.dataset_regression_table(report.load_records(args.out), args.reference))
    return 0


def cmd_recovery(args) -> int:
    from optim.bench.recovery import recovery_cell, recovery_table

    cells = [(args.structure, args.dim, n, seed, start, args.warmup, args.samples) for n in args.sizes
             for seed in range(args.seeds) for start in args.starts]
    run_cells("recovery", args.out, cells,
              lambda r: (r["structure"], r["dim"], r["n"], r["seed"], r["start"], r["settings"]["warmup"],
                         r["settings"]["samples"]), recovery_cell,
              lambda r: f"{r['structure']}{r['dim']} n={r['n']} seed {r['seed']} {r['start']:>5s}: F1 {r['f1']:.2f}")
    print(recovery_table(report.load_records(args.out)))
    return 0


def cmd_regression(args) -> int:
    own = "own" if args.sampler == "own" else None
    cells = [(m, args.problem, n, s, args.n_test, own) for n in args.sizes for m in args.models
             for s in range(args.seeds)]
    run_cells("regression", args.out, cells,
              lambda r: (r["model"], r["problem"], r["n"], r["seed"], r["n_test"], r.get("sampler")), regression_cell,
              lambda r: f"{r['model']:>12s} n={r['n']:3d} seed {r['seed']}: mse {r['mse']:.3g}")
    print(report.regression_table(report.load_records(args.out), args.reference))
    return 0


def append_record(path, record) -> None:
    """Append one record to a JSON-lines results file (one line per record, so an interrupted run loses none)."""
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def _write_json(path, data):
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(data, f, indent=1)


def cmd_timing(args) -> int:
    if args.dim < 6:
        raise SystemExit("--dim must be >= 6 (Hartmann-6 plus inert dimensions)")
    rows = [timing_at_size(n, args.dim, args.repeats) for n in args.sizes]
    print(report.timing_table(rows))
    _write_json(args.out, rows)
    return 0


def cmd_paths(args) -> int:
    rows = [paths_timing(args.depth, args.n, args.iterations, None if m == 0 else m) for m in args.max_paths]
    print(report.paths_table(rows))
    _write_json(args.out, rows)
    return 0


def cmd_scaling(args) -> int:
    if args.problems:
        rows = [scaling_cell(args.surrogate, n, problem=p, chain_workers=args.chain_workers)
                for p in args.problems for n in args.sizes]
    else:
        rows = [scaling_cell(args.surrogate, n, d, chain_workers=args.chain_workers)
                for d in args.dims for n in args.sizes]
    print(report.scaling_table(rows))
    _write_json(args.out, rows)
    return 0


def proposes_ahead(propose_ahead: bool, workers: int) -> bool:
    """Whether a parallel run proposes ahead (and its record says so): a 1-worker run never does."""
    return propose_ahead and workers > 1


def parallel_strategy(strategy: str, workers: int) -> str:
    """The batch strategy a parallel run records: a 1-worker run never has a point in flight when it proposes, so
    it is the sequential run under every strategy, recorded as the default's."""
    return strategy if workers > 1 else "believer"


def parallel_cell(problem_name: str, workers: int, seed: int, budget: int, n_init: int, sleep: float,
                  propose_ahead: bool = False, batch_strategy: str = "believer") -> dict:
    """One asynchronous run with `workers` processes on a sleeping objective: values in the order they were
    told and the wall-clock time of each tell. `propose_ahead`: minimize's (a freed worker is fed a proposal
    made while it ran) for more than one worker; a 1-worker run is always the sequential one. `batch_strategy`:
    minimize's (optim.batch)."""
    from optim.bench.problems import ProblemByName, get_problem
    from optim.loop import minimize

    problem = get_problem(problem_name)
    ahead = proposes_ahead(propose_ahead, workers)
    strategy = parallel_strategy(batch_strategy, workers)
    t0, told = time.perf_counter(), []
    res = minimize(ProblemByName(problem_name, sleep=sleep), problem.space, "gp", budget=budget, seed=seed,
                   n_init=n_init, n_workers=workers, propose_ahead=ahead, batch_strategy=strategy,
                   callback=lambda opt: told.append(time.perf_counter() - t0))
    return {"problem": problem_name, "workers": workers, "seed": seed, "budget": budget, "n_init": n_init,
            "sleep": sleep, "propose_ahead": ahead, "batch_strategy": strategy, "optimum": problem.optimum,
            "values": [h["value"] for h in res.history],
            "tell_seconds": told, "fit_seconds": [h["fit_seconds"] for h in res.history],
            "sources": [h["source"] for h in res.history],
            "seconds": time.perf_counter() - t0, "date": datetime.date.today().isoformat(), "versions": _versions()}


def cmd_parallel(args) -> int:
    done = {(r["problem"], r["workers"], r["seed"], r["budget"], r.get("n_init"), r["sleep"],
             r.get("propose_ahead", False), r.get("batch_strategy", "believer")) for r in report.load_records(args.out)}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    # an untimed run first compiles every function a run of this length needs, so that no timed run pays it
    print(f"treezoo-bench parallel: one untimed {args.budget}-evaluation run first (it compiles what the timed runs "
          "need)", flush=True)
    parallel_cell(args.problem, 1, 0, args.budget, args.n_init, 0.0)
    for seed in range(args.seed0, args.seed0 + args.seeds):
        for workers in args.workers:
            ahead = proposes_ahead(args.propose_ahead, workers)
            strategy = parallel_strategy(args.batch_strategy, workers)
            if (args.problem, workers, seed, args.budget, args.n_init, args.sleep, ahead, strategy) in done:
                continue
            rec = parallel_cell(args.problem, workers, seed, args.budget, args.n_init, args.sleep, args.propose_ahead,
                                args.batch_strategy)
            append_record(args.out, rec)
            print(f"  {workers} workers seed {seed}: best {min(rec['values']):.4g} in {rec['seconds']:.0f} s", flush=True)
    try:
        print(report.parallel_table(report.load_records(args.out)))
    except ValueError as exc:  # the 1-worker runs set the target; they may be in another file (render takes several)
        print(f"{exc}; {args.out} has none: render its table together with the file that has them")
    return 0


def journal_cost(sizes, appends: int = 20, seed: int = 0) -> list[dict]:
    """Seconds per evaluation spent writing the run to disk at several run lengths: the journal (one appended
    line per ask and per tell) against rewriting a JSON snapshot (`BayesOpt.save`, the old checkpoint)."""
    import tempfile

    from optim.bench.problems import get_problem
    from optim.loop import BayesOpt

    problem = get_problem("hartmann6")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for n in sizes:
            path = os.path.join(folder, f"run{n}.jsonl")
            opt = BayesOpt(problem.space, "random", seed=seed, n_init=1, journal=path)
            for _ in range(n):
                c = opt.ask()
                opt.tell(c, problem(c))
            journal_s, snapshot_s = [], []
            for _ in range(appends):  # the next evaluations, timed: one ask and one tell each
                t0 = time.perf_counter()
                c = opt.ask()
                opt.tell(c, problem(c))
                journal_s.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                opt.save(os.path.join(folder, "snapshot.json"))
                snapshot_s.append(time.perf_counter() - t0)
            opt.close()
            rows.append({"n": n, "journal_ms": 1e3 * float(np.median(journal_s)),
                         "snapshot_ms": 1e3 * float(np.median(snapshot_s)), "journal_bytes": os.path.getsize(path),
                         "appends": appends, "date": datetime.date.today().isoformat()})
    return rows


def cmd_journal_cost(args) -> int:
    rows = journal_cost(args.sizes)
    print(report.journal_table(rows))
    _write_json(args.out, rows)
    return 0


def cmd_compiles(args) -> int:
    from optim.bench.diagnostics import compile_count
    from optim.loop import BayesOpt
    from optim.bench.problems import get_problem

    start = compile_count()
    problem = get_problem(args.problem)
    opt = BayesOpt(problem.space, args.surrogate, seed=0, n_init=args.n_init)
    per_iter = []
    t0 = time.perf_counter()
    for _ in range(args.n_init + args.iterations):
        before = compile_count()
        c = opt.ask()
        opt.tell(c, problem(c))
        per_iter.append(compile_count() - before)
    bo = per_iter[args.n_init:]
    result = {"problem": args.problem, "surrogate": args.surrogate, "iterations": args.iterations, "n_init": args.n_init,
              "total": compile_count() - start, "during_bo": sum(bo),
              "compiled_at": [i + args.n_init + 1 for i, k in enumerate(bo) if k],
              "per_compiling_iteration": [k for k in bo if k], "seconds": time.perf_counter() - t0,
              "best_value": opt.best_value, "date": datetime.date.today().isoformat()}
    print(report.compiles_table(result))
    _write_json(args.out, result)
    return 0


def cmd_bark_updates(args) -> int:
    """Time one BARK sweep (m trees, one chain) with the low-rank update and with a fresh Cholesky per
    proposal, at several data sizes, and measure how far the two likelihood changes differ."""
    import jax
    import jax.numpy as jnp

    from inference.moves.tree_moves import forest_sweep, propose
    from zoo import Real, Space
    from zoo.bark import BARK, ForestKernelLikelihood
    from zoo.data import make_data
    from zoo.heap_trees import route, route_forest

    space = Space([Real(f"x{i}", 0.0, 1.0) for i in range(args.dim)])
    rows = []
    for n in args.sizes:
        rng = np.random.default_rng(n)
        X = rng.random((n, args.dim))
        data = make_data(X, np.sin(6 * X[:, 0]) + X[:, 1] + 0.1 * rng.standard_normal(n), size=n)
        row = {"n": n, "date": datetime.date.today().isoformat()}
        for update in ("lowrank", "cholesky"):
            s = BARK(space, update=update)
            forest = s.forest_prior().sample(jax.random.PRNGKey(0))
            ctx = s.move_context(data, {}, {"forest": forest, "noise": jnp.array(0.05)})
            sweep = jax.jit(lambda k, f, ctx=ctx: forest_sweep(k, f, None, ctx))
            f, _ = sweep(jax.random.PRNGKey(1), forest)
            jax.block_until_ready(f)
            times = []
            for r in range(args.repeats):
                t0 = time.perf_counter()
                f, _ = sweep(jax.random.PRNGKey(2 + r), f)
                jax.block_until_ready(f)
                times.append(time.perf_counter() - t0)
            row[f"{update}_ms"] = 1e3 * float(np.median(times))
        s = BARK(space)
        forest = s.forest_prior().sample(jax.random.PRNGKey(0))
        leaves = route_forest(s.spec, forest, data.X)
        noise = jnp.array(0.05)
        plug = {u: ForestKernelLikelihood(s.num_trees, u, noise, data.mask, data.y) for u in ("lowrank", "cholesky")}
        low, chol = plug["lowrank"].init(leaves), plug["cholesky"].init(leaves)
        worst = 0.0
        for k in range(args.proposals):  # accept every proposal: errors accumulate as in a sweep
            t = k % s.num_trees
            p = propose(s.spec, jax.random.PRNGKey(100 + k), forest[t])
            if not bool(p.possible):  # the sweep rejects these without touching the cache
                continue
            new_t = route(s.spec, p.tree, data.X)
            d_low, low = plug["lowrank"].delta(low, t, p.kind, p.node, leaves[t], new_t)
            d_chol, chol = plug["cholesky"].delta(chol, t, p.kind, p.node, leaves[t], new_t)
            worst = max(worst, abs(float(d_low) - float(d_chol)))
            forest, leaves = forest.at[t].set(p.tree), leaves.at[t].set(new_t)
        row["max_abs_delta_difference"] = worst
        row["proposals"] = args.proposals
        rows.append(row)
        print(f"n={n}: low-rank {row['lowrank_ms']:.2f} ms/sweep, Cholesky {row['cholesky_ms']:.2f} ms/sweep, "
              f"max |difference of log-likelihood changes| over {args.proposals} accepted moves {worst:.2e}")
    _write_json(args.out, {"dim": args.dim, "trees": 50, "rows": rows})
    return 0


def recorded_mips(problem, seed: int, at, n_init: int | None = None) -> dict:
    """{n: the acquisition MIP a BARK BO run (default settings, `n_init` or min(2D, 30) initial points) hands to
    SCIP when it has n observations}, for each n in `at` the run reaches by evaluation max(at) + 1."""
    from optim import mip
    from optim.loop import BayesOpt

    captured: dict[int, dict] = {}
    hook = lambda p: captured.setdefault(p["n"], p) if p["n"] in at else None  # noqa: E731
    mip.PROBLEM_HOOKS.append(hook)
    try:
        opt = BayesOpt(problem.space, "bark", seed=seed, n_init=n_init or min(2 * problem.space.dim, 30))
        while len(opt.history) < max(at) + 1 and len(captured) < len(at):
            config = opt.ask()
            opt.tell(config, problem(config))
    finally:
        mip.PROBLEM_HOOKS.remove(hook)
    return captured


def cmd_mip_study(args) -> int:
    """Issue 21's solver measurement: run BARK BO (default settings) on each problem and seed, record the
    acquisition MIP it sends to SCIP when it has n observations (each n of --at), then solve each recorded MIP
    again with every formulation and time limit: SCIP's status, relative gap and whether its point beats the
    polished warm start (in the MIP's own objective, the integrated UCB of the posterior forests)."""
    from optim import mip
    from optim._scip_worker import start_objective
    from optim.bench.problems import get_problem

    done = set()
    if os.path.exists(args.out):
        with open(args.out) as f:
            done = {(r["problem"], r["seed"], r["n"], r["formulation"], r["time_limit"]) for r in map(json.loads, f)}
    for name in args.problems:
        problem = get_problem(name)
        for seed in range(args.seeds):
            wanted = [(n, f, t) for n in args.at for f in args.formulations for t in args.limits
                      if (name, seed, n, f, t) not in done]
            if not wanted:
                continue
            captured = recorded_mips(problem, seed, args.at, args.n_init)
            for n, formulation, limit in wanted:
                if n not in captured:
                    continue
                p = dict(captured[n], formulation=formulation, time_limit=float(limit))
                start = -p["y_mean"] + p["y_std"] * start_objective(p)
                t0 = time.perf_counter()
                result = mip.run_worker(p, limit + 60.0)
                record = {"problem": name, "seed": seed, "n": n, "formulation": formulation, "time_limit": limit,
                          "status": result["status"], "gap": result.get("gap"), "objective": result.get("objective"),
                          "dual_bound": result.get("dual_bound"), "start": start, "n_nodes": result.get("n_nodes"),
                          "lp_iterations": result.get("lp_iterations"), "seconds": time.perf_counter() - t0,
                          "forests": p["S"], "trees": p["m"], "date": datetime.date.today().isoformat(),
                          "versions": _versions()}
                append_record(args.out, record)
                print(f"{name} seed {seed} n={n} {formulation} {limit:g} s: {record['status']}, gap {record['gap']}, "
                      f"objective {record['objective']} (start {start:.4f})", flush=True)
    return 0


def cmd_render(args) -> int:
    ok = report.render(args.document, check=args.check)
    if args.check and not ok:
        print(f"{args.document} is out of date with its results; run: treezoo-bench render {args.document}")
        return 1
    return 0


CONDITIONAL_SPACE = "jenatton_small"  # the conditional space surrogates of tree spaces are calibrated on


def calibration_variants() -> dict:
    """Models calibrated besides the registered surrogates: the treed GP with a sampled partition under the
    leaves' own likelihoods (the treed variant that is a generative model), small enough for 12 points."""
    from zoo.treed import Treed
    return {"treed_bayes": lambda space: Treed(space, partition="mcmc", likelihood="leaves", max_depth=2, min_leaf=3)}


def calibration_model(name: str, dim: int = 2):
    """(model, space label) of a registered surrogate or calibration variant, on the space it is calibrated on:
    the conditional benchmark space for tree-space surrogates, else the unit cube of `dim` reals."""
    from optim.bench.problems import get_problem
    from optim.registry import SURROGATES
    from zoo import Real, Space

    models = {**SURROGATES, **calibration_variants()}
    if name not in models:
        raise ValueError(f"unknown surrogate {name!r}; known: {sorted(models)}")
    if name in ("addtree", "addtree_shared", "jenatton", "independent"):
        return models[name](get_problem(CONDITIONAL_SPACE).space), "conditional"
    return models[name](Space([Real(f"x{i}", 0.0, 1.0) for i in range(dim)])), f"flat-{dim}"


def cmd_calibrate(args) -> int:
    """Simulation-based calibration of registered surrogates (inference.calibrate); appends one JSON line per
    surrogate (quantities, the smallest p-value, the verdict, seconds) and writes its ECDF plot."""
    import inference

    for name in args.surrogates:
        try:
            model, space_label = calibration_model(name, args.dim)
        except ValueError as exc:
            raise SystemExit(f"treezoo-bench calibrate: {exc}") from None
        settings = dict(num_warmup=args.warmup, num_samples=args.samples, num_chains=args.chains, thinning=args.thinning)
        if model.sampler_defaults.get("thinning", 1) > args.thinning:  # BARK's MH-only sweeps mix slowly
            settings["thinning"] = int(model.sampler_defaults["thinning"])
        res = inference.calibrate(model, n_points=args.n_points, num_simulations=args.simulations, seed=args.seed,
                                  warm_start=args.warm_start, warm_warmup=args.warm_warmup, **settings)
        res.surrogate = name  # the registered name (the independent-leaf variant's model is a Jenatton too)
        print(res.table())
        worst = min(res.p_values, key=res.p_values.get)
        record = {"surrogate": name, "space": space_label,
                  "n_points": args.n_points, "simulations": args.simulations, "draws": res.num_draws,
                  "warm_start": args.warm_start, "settings": res.settings, "quantities": len(res.ranks),
                  "worst": worst, "min_p": res.p_values[worst], "level": res.level, "passed": res.passed,
                  "failed": res.failed(), "seconds": round(res.seconds, 1), "date": datetime.date.today().isoformat()}
        if args.plots:
            os.makedirs(args.plots, exist_ok=True)
            tag = "_warm" if args.warm_start else ""
            res.plot(os.path.join(args.plots, f"sbc_{name}{tag}.png"))
            record["plot"] = os.path.join(args.plots, f"sbc_{name}{tag}.png")
        if args.out:
            os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
            append_record(args.out, record)
    return 0


def main(argv=None) -> int:
    from optim.bench.problems import PROBLEMS
    from optim.cli import integer_at_least, finite_nonnegative

    p = argparse.ArgumentParser(prog="treezoo-bench", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run (method, problem, seed) cells and append JSON lines")
    r.add_argument("--problems", nargs="+", default=["hartmann6", "jenatton_small"], choices=sorted(PROBLEMS),
                   metavar="PROBLEM")
    r.add_argument("--methods", nargs="+", default=["gp", "random"],
                   help="surrogates and peers; 'surrogate:acquisition' (e.g. addtree:logei) overrides the acquisition")
    r.add_argument("--seeds", type=integer_at_least(1), default=5)
    r.add_argument("--seed0", type=integer_at_least(0), default=0)
    r.add_argument("--budget", type=integer_at_least(1), default=50)
    r.add_argument("--n-init", type=integer_at_least(1), default=10)
    r.add_argument("--noise", type=finite_nonnegative, default=0.0)
    r.add_argument("--design", choices=["sobol", "paths"], default="sobol",
                   help="initial design; 'paths' covers every root-to-leaf path once first")
    r.add_argument("--jobs", type=integer_at_least(1), default=1, help="worker processes (each with one XLA thread)")
    r.add_argument("--chain-workers", type=integer_at_least(0), default=0,
                   help="our methods' fits run their chains in this many child processes (BayesOpt's chain_workers); "
                        "with --jobs 1, so that a run has the cores to itself")
    r.add_argument("--out", default="benchmarks/results/results.jsonl")
    t = sub.add_parser("table", help="regret table (and paired tests, plots) from JSON lines")
    t.add_argument("files", nargs="+")
    t.add_argument("--at", nargs="+", type=int, default=[20, 50])
    t.add_argument("--reference", default=None, help="method for paired Wilcoxon wins/ties/losses")
    t.add_argument("--plots", default=None, help="folder for regret-vs-evaluations PNGs")
    tm = sub.add_parser("timing", help="seconds per BO iteration at several data sizes")
    tm.add_argument("--sizes", nargs="+", type=int, default=[20, 50, 100])
    tm.add_argument("--dim", type=int, default=6)
    tm.add_argument("--repeats", type=int, default=3)
    tm.add_argument("--out", default=None)
    c = sub.add_parser("compiles", help="count XLA compilations over a long BO run")
    c.add_argument("--problem", default="hartmann6")
    c.add_argument("--surrogate", default="gp")
    c.add_argument("--iterations", type=int, default=100)
    c.add_argument("--n-init", type=int, default=10)
    c.add_argument("--out", default=None)
    pa = sub.add_parser("paths", help="acquisition cost on a deep conditional space: every path vs screened paths")
    pa.add_argument("--depth", type=integer_at_least(1), default=6)
    pa.add_argument("--n", type=integer_at_least(2), default=40, help="evaluations told before timing")
    pa.add_argument("--iterations", type=integer_at_least(1), default=3)
    pa.add_argument("--max-paths", nargs="+", type=integer_at_least(0), default=[0, 8],
                    help="LBFGSConfig.max_paths settings to compare; 0 means every path")
    pa.add_argument("--out", default=None)
    sc = sub.add_parser("scaling", help="seconds per BO iteration vs data size and dimension (high-dimensional models)")
    sc.add_argument("--surrogate", default="additive")
    sc.add_argument("--sizes", nargs="+", type=integer_at_least(2), default=[50, 100, 200])
    sc.add_argument("--dims", nargs="+", type=integer_at_least(2), default=[20, 50])
    sc.add_argument("--problems", nargs="+", default=None, help="named problems instead of additive GP functions")
    sc.add_argument("--chain-workers", type=integer_at_least(0), default=0,
                    help="run each fit's chains in this many child processes (BayesOpt's chain_workers; 0: in this one)")
    sc.add_argument("--out", default=None)
    rg = sub.add_parser("regression", help="test MSE vs training size per surrogate (000 Fig. 4)")
    rg.add_argument("--problem", default="jenatton_small")
    rg.add_argument("--models", nargs="+", default=["addtree", "independent", "jenatton"])
    rg.add_argument("--sizes", nargs="+", type=int, default=[10, 20, 30, 40])
    rg.add_argument("--seeds", type=int, default=10)
    rg.add_argument("--n-test", type=integer_at_least(2), default=50, help="random test points per fit")
    rg.add_argument("--sampler", default="default", choices=["default", "own"],
                    help="default: the GP's sampler settings for every model; own: each model's BO-loop cold fit")
    rg.add_argument("--reference", default="addtree", help="model the paired tests compare against")
    rg.add_argument("--out", default="benchmarks/results/regression.jsonl")
    rd_ = sub.add_parser("regression-data", help="test MSE and NLPD on a bundled dataset over random splits")
    rd_.add_argument("--dataset", default="diabetes", choices=DATASETS)
    rd_.add_argument("--models", nargs="+", default=["bark", "gp"])
    rd_.add_argument("--splits", type=int, default=20)
    rd_.add_argument("--n-train", type=int, default=150)
    rd_.add_argument("--reference", default="bark", help="model the paired tests compare against")
    rd_.add_argument("--out", default="benchmarks/results/regression_data.jsonl")
    rc = sub.add_parser("recovery", help="edge recovery of the additive posterior from n random points, cold vs "
                                         "truth-started chains")
    rc.add_argument("--structure", default="star", choices=STRUCTURES)
    rc.add_argument("--dim", type=integer_at_least(3), default=20)
    rc.add_argument("--sizes", nargs="+", type=integer_at_least(2), default=[50, 100, 200])
    rc.add_argument("--seeds", type=integer_at_least(1), default=2)
    rc.add_argument("--starts", nargs="+", default=list(STARTS), choices=STARTS)
    rc.add_argument("--warmup", type=integer_at_least(1), default=150, help="warm-up sweeps (the BO loop's cold fit: 150)")
    rc.add_argument("--samples", type=integer_at_least(1), default=50, help="draws per chain, 2 sweeps apart")
    rc.add_argument("--out", required=True)
    bu = sub.add_parser("bark-updates", help="BARK tree-move likelihood: low-rank update vs fresh Cholesky")
    bu.add_argument("--sizes", nargs="+", type=int, default=[50, 150])
    bu.add_argument("--dim", type=int, default=10)
    bu.add_argument("--repeats", type=int, default=20)
    bu.add_argument("--proposals", type=int, default=200)
    bu.add_argument("--out", default=None)
    cb = sub.add_parser("calibrate", help="simulation-based calibration of registered surrogates' samplers")
    cb.add_argument("--surrogates", nargs="+", default=["gp"])
    cb.add_argument("--simulations", type=integer_at_least(10), default=100)
    cb.add_argument("--n-points", type=integer_at_least(2), default=8)
    cb.add_argument("--dim", type=integer_at_least(1), default=2, help="dimension of the flat space")
    cb.add_argument("--warmup", type=integer_at_least(1), default=200)
    cb.add_argument("--samples", type=integer_at_least(1), default=50)
    cb.add_argument("--chains", type=integer_at_least(1), default=2)
    cb.add_argument("--thinning", type=integer_at_least(1), default=2)
    cb.add_argument("--warm-start", action="store_true", help="check the BO loop's warm-started path")
    cb.add_argument("--warm-warmup", type=integer_at_least(0), default=40,
                    help="warm-up sweeps of the warm-started run (the BO loop's default 40)")
    cb.add_argument("--seed", type=integer_at_least(0), default=0)
    cb.add_argument("--plots", default=None, help="folder for the ECDF-difference plots")
    cb.add_argument("--out", default=None, help="JSON lines file to append one record per surrogate to")
    pl = sub.add_parser("parallel", help="asynchronous BO with several worker processes on a sleeping objective")
    pl.add_argument("--problem", default="hartmann6", choices=sorted(PROBLEMS))
    pl.add_argument("--workers", nargs="+", type=integer_at_least(1), default=[1, 2, 4, 8])
    pl.add_argument("--seeds", type=integer_at_least(1), default=3)
    pl.add_argument("--seed0", type=integer_at_least(0), default=0,
                    help="first seed (seeds seed0 .. seed0 + seeds - 1): several processes can share the seeds")
    pl.add_argument("--budget", type=integer_at_least(2), default=30)
    pl.add_argument("--n-init", type=integer_at_least(1), default=7)
    pl.add_argument("--sleep", type=finite_nonnegative, default=4.0, help="seconds each evaluation sleeps")
    pl.add_argument("--propose-ahead", action="store_true",
                    help="runs with more than one worker propose ahead (minimize(propose_ahead=True)); without "
                         "this flag a freed worker waits for the fit on its result (minimize's default)")
    pl.add_argument("--batch-strategy", default="believer", choices=list(BATCH_STRATEGIES),
                    help="how the points in flight enter a proposal (optim.batch); 1-worker runs are the same "
                         "under every strategy and are recorded as the default's")
    pl.add_argument("--out", default="benchmarks/results/parallel.jsonl")
    jc = sub.add_parser("journal-cost", help="seconds per evaluation to journal a run, vs its length")
    jc.add_argument("--sizes", nargs="+", type=integer_at_least(1), default=[10, 100, 1000])
    jc.add_argument("--out", default=None)
    ms = sub.add_parser("mip-study", help="BARK's acquisition MIP: gap and improvement per formulation and time limit")
    ms.add_argument("--problems", nargs="+", default=["tree_function", "tree_function_cat", "pest_control"])
    ms.add_argument("--seeds", type=integer_at_least(1), default=1)
    ms.add_argument("--at", nargs="+", type=int, default=[30, 40, 50, 60], help="observations at which MIPs are recorded")
    ms.add_argument("--n-init", type=integer_at_least(2), default=None, help="default: min(2 x dimension, 30)")
    ms.add_argument("--limits", nargs="+", type=float, default=[1.0, 10.0], help="SCIP time limits (s)")
    ms.add_argument("--formulations", nargs="+", default=["tangent", "nonlinear"], choices=FORMULATIONS)
    ms.add_argument("--out", required=True)
    rd = sub.add_parser("render", help="regenerate the tables of a Markdown document from its results")
    rd.add_argument("document")
    rd.add_argument("--check", action="store_true", help="exit 1 if the document is out of date")
    args = p.parse_args(argv)
    if args.command == "run" and args.n_init > args.budget:
        p.error(f"--n-init {args.n_init} exceeds --budget {args.budget}")
    if args.command == "table":
        missing = [f for f in args.files if not os.path.exists(f)]
        if missing:
            p.error(f"no such results file: {', '.join(missing)}")
    commands = {"run": cmd_run, "table": cmd_table, "timing": cmd_timing, "compiles": cmd_compiles,
                "paths": cmd_paths, "scaling": cmd_scaling, "regression": cmd_regression,
                "regression-data": cmd_regression_data, "render": cmd_render, "bark-updates": cmd_bark_updates,
                "calibrate": cmd_calibrate, "parallel": cmd_parallel, "journal-cost": cmd_journal_cost,
                "mip-study": cmd_mip_study, "recovery": cmd_recovery}
    try:
        return commands[args.command](args)
    except report.ResultsFileError as exc:
        p.error(str(exc))


if __name__ == "__main__":
    sys.exit(main())
