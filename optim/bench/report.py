"""Tables, paired tests and plots from benchmark records, and BENCHMARKS.md blocks regenerated from them.

BENCHMARKS.md holds blocks like::

    <!-- treezoo-bench: regret benchmarks/results/foundation.jsonl --at 20 50 -->
    ...table...
    <!-- /treezoo-bench -->

`treezoo-bench render BENCHMARKS.md` rewrites every block from the JSON it names, and
`treezoo-bench render --check BENCHMARKS.md` fails if the document and the data have drifted apart.
"""

from __future__ import annotations

import json
import os
import re
import shlex

import numpy as np
from scipy.stats import permutation_test, rankdata, wilcoxon


class ResultsFileError(ValueError):
    """A results file that cannot be read: the message names the file and line."""


def load_records(path) -> list[dict]:
    """JSON lines (one record per run) or a JSON document (timing, compiles); a missing file is empty."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        text = f.read()
    if not str(path).endswith(".jsonl"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ResultsFileError(f"{path}: not a JSON document ({exc.msg} at line {exc.lineno})") from None
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ResultsFileError(f"{path}:{number}: not a JSON record ({exc.msg}); a run cut off while writing "
                                   "leaves a truncated last line: remove it and run again") from None
        if not isinstance(record, dict):
            raise ResultsFileError(f"{path}:{number}: a record must be a JSON object, got {type(record).__name__}")
        records.append(record)
    return records


def _same_values(a, b) -> bool:
    """Equal evaluation values, a NaN equal to a NaN (a failed evaluation recorded twice)."""
    return len(a) == len(b) and all(x == y or (x != x and y != y) for x, y in zip(a, b))


def one_run_per_cell(records) -> list[dict]:
    """`records` with each (problem, method, seed) counted once, so that no table pools a seed twice: a run that
    repeats another value for value, or that is the first evaluations of a longer run of the same cell (a smaller
    budget of one seeded run), gives way to the longest, in the place of the first. Two runs of one cell that
    differ (another code or host under the same label) raise a ResultsFileError: give one of them another label."""
    out: list = []
    where: dict = {}
    for r in records:
        if r.get("status") != "ok" or not {"problem", "method", "seed", "values"} <= r.keys():
            out.append(r)
            continue
        key = (r["problem"], r["method"], r["seed"])
        if key not in where:
            where[key] = len(out)
            out.append(r)
            continue
        first = out[where[key]]
        short, long = sorted((first["values"], r["values"]), key=len)
        if not _same_values(short, long[:len(short)]):
            raise ResultsFileError(f"two different runs of {r['method']} on {r['problem']}, seed {r['seed']}, in one "
                                   "table: a table counts each seed once; give one of them another method label")
        if len(r["values"]) > len(first["values"]):
            out[where[key]] = r
    return out


def best_so_far(values) -> np.ndarray:
    v = np.array([np.inf if (x is None or not np.isfinite(x)) else x for x in values], dtype=float)
    return np.minimum.accumulate(v)


def regret_trace(record) -> np.ndarray:
    """Best-so-far regret per evaluation (best value where the optimum is unknown)."""
    trace = best_so_far(record["values"])
    return trace - record["optimum"] if record.get("optimum") is not None else trace


def _log_regret(x):
    return np.log10(np.maximum(x, 1e-12))


def group(records) -> dict:
    groups: dict = {}
    for r in records:
        if r.get("status") == "ok":
            groups.setdefault((r["problem"], r["method"]), []).append(r)
    return groups


def summarize(records, at, tol=1e-2) -> list[dict]:
    """Per (problem, method): quartiles of log10 regret at each budget in `at`, hit rate, timings."""
    rows = []
    for (problem, method), recs in sorted(group(records).items()):
        known = recs[0].get("optimum") is not None
        row = {"problem": problem, "method": method, "seeds": len(recs), "known": known}
        for b in at:
            vals = [regret_trace(r)[b - 1] for r in recs if len(r["values"]) >= b]
            vals = _log_regret(np.array(vals)) if known else np.array(vals)
            row[b] = np.percentile(vals, [25, 50, 75]) if len(vals) else None
        final = [regret_trace(r)[-1] for r in recs]
        row["hits"] = (sum(f < tol for f in final), len(final)) if known else None
        iters = [(f, a) for r in recs for f, a, s in zip(r["fit_seconds"], r["acq_seconds"], r["sources"])
                 if s != "init"]
        row["fit_s"] = float(np.median([f for f, _ in iters])) if iters else 0.0  # median: compiles aside
        row["acq_s"] = float(np.median([a for _, a in iters])) if iters else 0.0
        row["run_s"] = float(np.median([r["seconds"] for r in recs]))
        rows.append(row)
    return rows


def _seconds(s: float) -> str:
    return "0" if s == 0 else ("<0.01" if s < 0.01 else f"{s:.2f}")


def regret_table(records, at) -> str:
    """Median and quartiles of log10 regret per (problem, method); for problems whose optimum is unknown
    the cells hold the best value found, and the header says so."""
    unknown = [r.get("optimum") is None for r in records]
    label = ("best value" if all(unknown) else
             "log10 regret (best value where no optimum is known)" if any(unknown) else "log10 regret")
    fmt = ".2f" if label == "log10 regret" else ".4f"  # best values (e.g. error rates) need the digits
    head = (["problem", "method", "seeds"] + [f"{label} @{b}: median [q25, q75]" for b in at]
            + ["within 1e-2 @ end", "s/iter fit (median)", "s/iter acq (median)", "s/run (median)"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in summarize(records, at):
        cells = [r["problem"], r["method"], str(r["seeds"])]
        for b in at:
            q = r[b]
            cells.append("n/a" if q is None else f"{q[1]:{fmt}} [{q[0]:{fmt}}, {q[2]:{fmt}}]")
        hits = "n/a" if r["hits"] is None else f"{r['hits'][0]}/{r['hits'][1]}"
        cells += [hits, _seconds(r["fit_s"]), _seconds(r["acq_s"]), f"{r['run_s']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cost_table(records, reference: str, bound: float = 2.0) -> str:
    """Seconds per BO iteration of each method against `reference` on each problem: medians over the model's
    iterations (design points aside) of the fit, the acquisition and their sum, and the ratio of the sums;
    a last line counts the problems where a method is within `bound` times the reference."""
    head = ["problem", "method", "runs", "fit s/iter", "acq s/iter", "fit + acq s/iter",
            f"fit + acq vs {reference} (ratio of medians)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def medians(recs):
        iters = [(f, a) for r in recs for f, a, s in zip(r["fit_seconds"], r["acq_seconds"], r["sources"])
                 if s != "init"]
        return tuple(float(np.median(x)) for x in ([f for f, _ in iters], [a for _, a in iters],
                                                   [f + a for f, a in iters]))
    groups = group(records)
    within: dict = {}
    for (problem, method), recs in sorted(groups.items()):
        fit, acq, total = medians(recs)
        ratio = "-"
        if method != reference and (problem, reference) in groups:
            r = total / medians(groups[(problem, reference)])[2]
            ratio = f"{r:.2f}"
            within.setdefault(method, []).append(r <= bound)
        lines.append(f"| {problem} | {method} | {len(recs)} | {fit:.2f} | {acq:.2f} | {total:.2f} | {ratio} |")
    counts = ", ".join(f"{m} {sum(w)}/{len(w)}" for m, w in sorted(within.items()))
    return "\n".join(lines + ["", f"Within {bound:g}x of {reference}'s seconds per iteration: {counts}"])


def best_table(records, at) -> str:
    """Mean and standard deviation over seeds of the best value found after each budget in `at`, per
    (problem, method), as 004 Table 1 reports them; with median seconds per iteration."""
    head = (["problem", "method", "seeds"] + [f"best value @{b}: mean ± sd" for b in at]
            + ["s/iter fit (median)", "s/iter acq (median)"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rows = {(r["problem"], r["method"]): r for r in summarize(records, at)}
    for (problem, method), recs in sorted(group(records).items()):
        cells = [problem, method, str(len(recs))]
        for b in at:
            vals = np.array([best_so_far(r["values"])[b - 1] for r in recs if len(r["values"]) >= b])
            cells.append("n/a" if not len(vals) else f"{vals.mean():.3f} ± {vals.std(ddof=1) if len(vals) > 1 else 0.0:.3f}")
        row = rows[(problem, method)]
        cells += [_seconds(row["fit_s"]), _seconds(row["acq_s"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def failures_table(records, at: int, reference: str | None = None) -> str:
    """Per (problem, method): the failed evaluations among the first `at` of each run (median [quartiles] over
    seeds), their share of all those evaluations, the share of the model's proposals that failed, and with a
    `reference` method the two-sided paired signed-rank p of the per-seed failure counts against it."""
    head = ["problem", "method", "seeds", f"failed in the first {at}: median [q25, q75]", "share of evaluations",
            "share of the model's proposals"] + ([f"paired p vs {reference}"] if reference else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    runs = {key: {r["seed"]: r for r in recs if len(r["eval_status"]) >= at} for key, recs in group(records).items()}

    def failed(r):
        return sum(s != "ok" for s in r["eval_status"][:at])
    for (problem, method), by_seed in sorted(runs.items()):
        counts = np.array([failed(r) for r in by_seed.values()], dtype=float)
        bo = [s != "ok" for r in by_seed.values() for s, src in zip(r["eval_status"][:at], r["sources"][:at])
              if src == "bo"]
        cells = [problem, method, str(len(by_seed)), _median_quartiles(counts) if len(counts) else "n/a",
                 f"{counts.sum() / (at * len(counts)):.2f}" if len(counts) else "n/a",
                 f"{np.mean(bo):.2f}" if bo else "n/a"]
        if reference:
            ref = runs.get((problem, reference), {})
            seeds = sorted(set(ref) & set(by_seed))
            cells.append("-" if method == reference or not seeds else
                         f"{paired_p([failed(by_seed[k]) for k in seeds], [failed(ref[k]) for k in seeds]):.3g}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def hits_table(records, below: float, at) -> str:
    """Per (problem, method) with a known optimum: how many seeds are below `below` log10 regret after
    each budget in `at`, and the first evaluation at which each seed got there (seed order; '-' never)."""
    head = (["problem", "method", "seeds"] + [f"below {below:g} @{b}" for b in at]
            + [f"first evaluation below {below:g}, per seed"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (problem, method), recs in sorted(group(records).items()):
        if recs[0].get("optimum") is None:
            continue
        traces = [_log_regret(regret_trace(r)) for r in sorted(recs, key=lambda r: r["seed"])]
        cells = [problem, method, str(len(recs))]
        for b in at:
            reached = [t for t in traces if len(t) >= b]
            cells.append(f"{sum(t[b - 1] < below for t in reached)}/{len(reached)}")
        firsts = [int(np.argmax(t < below)) + 1 if np.any(t < below) else "-" for t in traces]
        cells.append(", ".join(map(str, firsts)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def path_finding_table(records) -> str:
    """Per method, over every run on a conditional problem whose `info` states its argmin (the seeded family):
    does the run find the optimal root-to-leaf path? Columns: runs; how often the initial design's best point
    lies on the optimal path; how often the final best does, split by whether the design's best did; the share
    of the model's (non-design) evaluations spent on the optimal path; the median final regret when the final
    best is on the optimal path and when it is not (a wrong decision costs the family at least 0.1)."""
    from optim.bench.problems import get_problem

    head = ["method", "runs", "design's best on the optimal path", "final best on it, if the design's was",
            "final best on it, if the design's was not", "later evaluations on it", "median regret, final best on it",
            "median regret, final best elsewhere"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by_method: dict = {}
    problems: dict = {}  # one instance per problem name, not one per record
    for r in records:
        if r.get("status") != "ok":
            continue
        if r["problem"] not in problems:
            problems[r["problem"]] = get_problem(r["problem"])
        problem = problems[r["problem"]]
        if "argmin" not in problem.info or not problem.space.is_conditional:
            continue
        space = problem.space
        optimal = space.active_path(problem.info["argmin"]).nodes
        on = np.array([space.active_path(c).nodes == optimal for c in r["configs"]])
        values, n0 = np.asarray(r["values"], dtype=float), r["n_init"]
        best = int(np.nanargmin(values))
        later = on[n0:]
        by_method.setdefault(r["method"], []).append(
            (bool(on[int(np.nanargmin(values[:n0]))]), bool(on[best]), float(later.mean()) if len(later) else np.nan,
             float(values[best] - r["optimum"])))
    for method, rows in sorted(by_method.items()):
        design, final, later, regret = (np.array(col) for col in zip(*rows))
        found = [f"{int(final[m].sum())}/{int(m.sum())}" for m in (design, ~design)]
        medians = [f"{np.median(regret[m]):.3f}" if m.any() else "-" for m in (final, ~final)]
        lines.append(f"| {method} | {len(rows)} | {int(design.sum())}/{len(rows)} | {found[0]} | {found[1]} "
                     f"| {np.nanmean(later):.2f} | {medians[0]} | {medians[1]} |")
    return "\n".join(lines)


def paired_p(a, b) -> float:
    """Two-sided paired Wilcoxon signed-rank p of a against b (1 where every pair is equal: no test to run)."""
    return 1.0 if np.allclose(a, b) else signed_rank_p(np.asarray(a, float) - np.asarray(b, float))


#: SciPy's `wilcoxon` runs its exact sign-flip test (all 2^n flips) up to this many pairs when there are ties or zeros
EXACT_FLIPS_UP_TO = 13


def _positive_rank_sum(d, axis=-1):
    """Wilcoxon's T+: the sum of the ranks of |d| (zeros left out, ties averaged) over the positive d, along `axis`."""
    d = np.moveaxis(np.asarray(d, float), axis, -1)
    ranks = rankdata(np.where(d == 0, np.nan, np.abs(d)), axis=-1, nan_policy="omit")
    return np.where(d > 0, ranks, 0.0).sum(axis=-1)


def signed_rank_p(d) -> float:
    """`scipy.stats.wilcoxon(d).pvalue`, two-sided. Where SciPy would run its exact sign-flip test (ties or zeros,
    at most 13 pairs) the 2^n flips are scored at once: SciPy scores them one at a time, 1.2 s a call, most of the
    time `treezoo-bench render` took. Same statistic, same flips, so the same p."""
    d = np.asarray(d, float)
    nonzero = np.abs(d[d != 0])
    if len(d) > EXACT_FLIPS_UP_TO or (len(nonzero) == len(d) and len(np.unique(nonzero)) == len(d)):
        return float(wilcoxon(d).pvalue)
    return float(permutation_test((d,), _positive_rank_sum, vectorized=True, permutation_type="samples",
                                  alternative="two-sided", n_resamples=9999).pvalue)


def _median_quartiles(values) -> str:
    """'median [q25, q75]' of values, two decimals."""
    q = np.percentile(values, [25, 50, 75])
    return f"{q[1]:.2f} [{q[0]:.2f}, {q[2]:.2f}]"


def _reference_pairing(ref: dict, mine: dict) -> tuple[str, str]:
    """(reference lower in k/n seeds, paired p) of two {seed: value} maps over their common seeds; blank if none."""
    seeds = sorted(set(ref) & set(mine))
    if not seeds:
        return "", ""
    a, b = np.array([ref[k] for k in seeds]), np.array([mine[k] for k in seeds])
    return f"{int(np.sum(a < b))}/{len(seeds)}", f"{paired_p(a, b):.3f}"


def paired_tests(records, reference: str, at: int, alpha: float = 0.05) -> list[dict]:
    """Two-sided paired Wilcoxon signed-rank test of each method against `reference` at budget `at`.

    Pairs are seeds; a method wins (loses) when p < alpha and its median regret is lower (higher).
    With 5 seeds the smallest attainable two-sided p is 1/16, so at alpha = 0.05 at least 6 seeds
    are needed for any verdict other than a tie.
    """
    groups = group(records)
    out = []
    for (problem, method), recs in sorted(groups.items()):
        if method == reference or (problem, reference) not in groups:
            continue
        ref = {r["seed"]: regret_trace(r)[at - 1] for r in groups[(problem, reference)] if len(r["values"]) >= at}
        mine = {r["seed"]: regret_trace(r)[at - 1] for r in recs if len(r["values"]) >= at}
        seeds = sorted(set(ref) & set(mine))
        a, b = np.array([mine[s] for s in seeds]), np.array([ref[s] for s in seeds])
        if len(seeds) == 0:
            continue
        p = paired_p(a, b)
        verdict = "tie" if p >= alpha else ("win" if np.median(a) < np.median(b) else "loss")
        out.append({"problem": problem, "method": method, "pairs": len(seeds), "p": p, "verdict": verdict})
    return out


def wilcoxon_table(records, reference, at, alpha=0.05) -> str:
    tests = paired_tests(records, reference, at, alpha)
    lines = [f"| problem | method vs {reference} @{at} | seeds | p (two-sided Wilcoxon) | verdict |",
             "|---|---|---|---|---|"]
    for t in tests:
        lines.append(f"| {t['problem']} | {t['method']} | {t['pairs']} | {t['p']:.3f} | {t['verdict']} |")
    totals = {m: [0, 0, 0] for m in sorted({t["method"] for t in tests})}
    for t in tests:
        totals[t["method"]][["win", "tie", "loss"].index(t["verdict"])] += 1
    lines.append("")
    lines.append("W/T/L per method: " + ", ".join(f"{m} {w}/{t}/{lo}" for m, (w, t, lo) in totals.items()))
    return "\n".join(lines)


def family_table(records, reference: str, at) -> str:
    """Each method against `reference` over a family of problems (issue 23's measure): on how many problems its
    median regret is at or below the reference's, and at least 0.5 log10 below it, at each budget in `at`;
    beside it a two-sided Wilcoxon signed-rank test pooled over all (problem, seed) pairs, on log10 regret
    (log10, so that problems on different scales pool; regrets floored at 1e-12, as in the regret tables), and the
    median of those paired differences, whose sign says which way the test leans (negative: the method is lower)."""
    groups = group(records)
    methods = sorted({m for _, m in groups} - {reference})
    lines = [f"| method vs {reference} | evaluations | problems | median at or below {reference}'s | "
             f"at least 0.5 log10 below | (problem, seed) pairs | median paired difference (log10) | "
             f"pooled p (two-sided Wilcoxon) |",
             "|---|---|---|---|---|---|---|---|"]
    for method in methods:
        for b in at:
            problems = at_or_below = far_below = 0
            diffs = []
            for (problem, m), recs in sorted(groups.items()):
                if m != method or (problem, reference) not in groups:
                    continue
                mine = {r["seed"]: _log_regret(regret_trace(r)[b - 1]) for r in recs if len(r["values"]) >= b}
                ref = {r["seed"]: _log_regret(regret_trace(r)[b - 1]) for r in groups[(problem, reference)]
                       if len(r["values"]) >= b}
                if not mine or not ref:
                    continue
                problems += 1
                gap = np.median(list(mine.values())) - np.median(list(ref.values()))
                at_or_below += gap <= 0.0
                far_below += gap <= -0.5
                diffs += [mine[s] - ref[s] for s in sorted(set(mine) & set(ref))]
            if not problems:
                continue
            p = 1.0 if np.allclose(diffs, 0.0) else signed_rank_p(diffs)
            lines.append(f"| {method} | {b} | {problems} | {at_or_below}/{problems} | {far_below}/{problems} "
                         f"| {len(diffs)} | {np.median(diffs):+.2f} | {p:.2g} |")
    return "\n".join(lines)


def regression_table(records, reference: str = "addtree") -> str:
    """log10 test MSE median [q25, q75] per model and training size; a two-sided paired Wilcoxon p
    (pairs: seeds) against `reference` at each size, and the reference's wins over the seeds."""
    by = {}
    for r in records:
        by.setdefault((r["n"], r["model"]), {})[r["seed"]] = r["mse"]
    lines = [f"| n train | model | seeds | log10 test MSE: median [q25, q75] | {reference} lower in | p vs {reference} |",
             "|---|---|---|---|---|---|"]
    for (n, model), mse in sorted(by.items()):
        wins, p = ("", "") if model == reference else _reference_pairing(by.get((n, reference), {}), mse)
        log_mse = _median_quartiles(np.log10(np.maximum(list(mse.values()), 1e-300)))
        lines.append(f"| {n} | {model} | {len(mse)} | {log_mse} | {wins} | {p} |")
    return "\n".join(lines)


def prediction_table(records, reference: str) -> str:
    """Per problem, training size and model (records of `treezoo-bench regression` that carry R^2): test R^2 and
    the Spearman rank correlation of mean and truth, median [q25, q75] over seeds, the median NLPD, the reference's
    lower-MSE seeds with a two-sided paired Wilcoxon p, and the median seconds per fit."""
    by: dict = {}
    for r in records:
        if "r2" in r:
            by.setdefault((r["problem"], r["n"], r["model"]), {})[r["seed"]] = r
    head = ["problem", "n train", "model", "seeds", "test R^2: median [q25, q75]", "Spearman: median [q25, q75]",
            "NLPD (median)", f"{reference} lower MSE in", f"p vs {reference}", "s per fit"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (problem, n, model), recs in sorted(by.items()):
        nlpd = [r["nlpd"] for r in recs.values() if r.get("nlpd") is not None]
        mse = {k: r["mse"] for k, r in recs.items()}
        ref = {k: r["mse"] for k, r in by.get((problem, n, reference), {}).items()}
        wins, p = ("", "") if model == reference else _reference_pairing(ref, mse)
        seconds = np.median([r["seconds"] for r in recs.values()])
        r2, rho = (_median_quartiles([r[key] for r in recs.values()]) for key in ("r2", "spearman"))
        lines.append(f"| {problem} | {n} | {model} | {len(recs)} | {r2} | {rho} | "
                     f"{f'{np.median(nlpd):.3f}' if nlpd else ''} | {wins} | {p} | {seconds:.0f} |")
    return "\n".join(lines)


def dataset_regression_table(records, reference: str = "bark") -> str:
    """Test NLPD and MSE, mean (sd) over splits per model and dataset; the reference's wins over the
    splits and a two-sided paired Wilcoxon p for each metric."""
    by: dict = {}
    for r in records:
        by.setdefault((r["dataset"], r["n_train"], r["model"]), {})[r["split"]] = r
    head = (f"| dataset | n train | model | splits | NLPD: mean (sd) | MSE: mean (sd) | {reference} lower NLPD in (p) "
            f"| {reference} lower MSE in (p) |")
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for (dataset, n, model), recs in sorted(by.items()):
        cells = [dataset, str(n), model, str(len(recs))]
        for metric in ("nlpd", "mse"):
            v = np.array([r[metric] for r in recs.values()])
            cells.append(f"{v.mean():.4g} ({v.std(ddof=1) if len(v) > 1 else 0.0:.2g})")
        ref = by.get((dataset, n, reference), {})
        splits = sorted(set(ref) & set(recs))
        for metric in ("nlpd", "mse"):
            if model == reference or not splits:
                cells.append("")
                continue
            a, b = np.array([ref[k][metric] for k in splits]), np.array([recs[k][metric] for k in splits])
            cells.append(f"{int(np.sum(a < b))}/{len(splits)} ({paired_p(a, b):.3f})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def per_iteration_table(records, sizes) -> str:
    """Median seconds of fit and acquisition of the BO iteration that saw n observations, per method."""
    head = ["problem", "method"] + [f"n={n}: fit + acq s" for n in sizes]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (problem, method), recs in sorted(group(records).items()):
        cells = [problem, method]
        for n in sizes:
            rows = [(r["fit_seconds"][n], r["acq_seconds"][n]) for r in recs
                    if len(r["values"]) > n and r["sources"][n] != "init"]
            if rows:
                f, a = np.median([x for x, _ in rows]), np.median([x for _, x in rows])
                cells.append(f"{_seconds(f)} + {_seconds(a)}")
            else:
                cells.append("n/a")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def match_table(records, reference: str, at) -> str:
    """Evaluations each method needs for its median regret (over seeds, per evaluation) to reach the
    reference's median regret at `b` evaluations, for each b in `at`; the ratio to b is the sample
    efficiency lost (a batch of q at 1.3 needs 30% more evaluations than sequential for the same regret)."""
    groups = group(records)
    lines = ["| problem | method | " + " | ".join(f"evaluations to {reference}'s median @{b} (ratio)" for b in at) + " |",
             "|---|---|" + "---|" * len(at)]
    for (problem, method), recs in sorted(groups.items()):
        if method == reference or (problem, reference) not in groups:
            continue
        longest = max(len(r["values"]) for r in recs)  # where runs of a method have several budgets: the longest
        ref = np.array([regret_trace(r)[:max(at)] for r in groups[(problem, reference)] if len(r["values"]) >= max(at)])
        curve = np.median(np.array([regret_trace(r) for r in recs if len(r["values"]) == longest]), axis=0)
        cells = []
        for b in at:
            target = np.median(ref[:, b - 1])
            hit = np.nonzero(curve <= target * (1 + 1e-9))[0]
            cells.append("not reached" if not len(hit) else f"{hit[0] + 1} ({(hit[0] + 1) / b:.2f})")
        lines.append(f"| {problem} | {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _first_at_or_below(curve, target) -> int | None:
    """Index of the first entry of `curve` at or below `target` (relative slack 1e-9), or None."""
    hit = np.nonzero(np.asarray(curve) <= target * (1 + 1e-9))[0]
    return int(hit[0]) if len(hit) else None


def _median_regret_over_time(runs, regret) -> tuple[np.ndarray, np.ndarray]:
    """(times, median over runs of the best regret told by each time), at every time a run told a value;
    a run that has told nothing yet counts as infinite regret."""
    times = np.sort(np.concatenate([np.asarray(r["tell_seconds"], dtype=float) for r in runs]))
    per_run = []
    for r in runs:
        told = np.searchsorted(np.asarray(r["tell_seconds"], dtype=float), times, side="right")
        per_run.append(np.where(told > 0, regret[id(r)][np.maximum(told - 1, 0)], np.inf))
    return times, np.median(np.array(per_run), axis=0)


def parallel_table(records, at: int | None = None) -> str:
    """Asynchronous runs by number of workers. The target is the 1-worker runs' median regret after `at`
    evaluations (default: the budget). For each number of workers, the median over runs of the best regret is
    followed against evaluations and against wall-clock seconds, and the table gives where it first reaches
    the target (the match table's method, so that a median over runs of which some never reach it stays
    defined). Runs that proposed ahead (`propose_ahead`), and runs of a batch strategy other than the default, are
    rows of their own. A row's runs may go on past the 1-worker budget (the shortest of its runs sets how far its
    curve goes), so that a target reached only after it can be seen; the columns stop at the 1-worker budget."""
    sequential = (1, False, "believer")  # (workers, proposed ahead, batch strategy) of the runs that set the target
    by_workers: dict[tuple[int, bool, str], list] = {}
    for r in records:
        key = (int(r["workers"]), bool(r.get("propose_ahead", False)), r.get("batch_strategy", "believer"))
        by_workers.setdefault(key, []).append(r)
    if sequential not in by_workers:
        raise ValueError("parallel results need the 1-worker (sequential) runs: they set the target regret")
    budget = min(len(r["values"]) for r in by_workers[sequential])
    at = budget if at is None else int(at)
    if not 1 <= at <= budget:
        raise ValueError(f"--at must be between 1 and the budget {budget}, got {at}")
    regret = {id(r): np.maximum(best_so_far(r["values"]) - r["optimum"], 0.0) for r in records}
    target = float(np.median([regret[id(r)][at - 1] for r in by_workers[sequential]]))
    log10 = (lambda x: f"{np.log10(max(x, 1e-12)):.2f}")
    checkpoints = [at] if at == budget else [at, budget]
    lines = [f"Target: log10 regret {log10(target)} (the 1-worker runs' median after {at} evaluations).", "",
             "| workers | runs | evaluations to target | x sequential | seconds to target | wall-clock speed-up | "
             + " | ".join(f"log10 regret @{b}: median" for b in checkpoints) + " | run seconds: median |",
             "|---|---|---|---|---|---|" + "---|" * len(checkpoints) + "---|"]
    seq_evals = seq_secs = None
    for w, ahead, strategy in sorted(by_workers, key=lambda k: (k[0], k[1], k[2] != "believer", k[2])):
        rs = by_workers[(w, ahead, strategy)]
        length = min(len(r["values"]) for r in rs)
        i = _first_at_or_below(np.median(np.array([regret[id(r)][:length] for r in rs]), axis=0), target)
        times, over_time = _median_regret_over_time(rs, regret)
        j = _first_at_or_below(over_time, target)
        evals, secs = (np.inf if i is None else i + 1), (np.inf if j is None else float(times[j]))
        if (w, ahead, strategy) == sequential:
            seq_evals, seq_secs = evals, secs
        fmt = (lambda x, d: "not reached" if not np.isfinite(x) else f"{x:.{d}f}")
        ratio = evals / seq_evals if np.isfinite(evals) else np.inf
        speed = seq_secs / secs if np.isfinite(secs) else np.inf
        medians = [float(np.median([np.log10(max(regret[id(r)][b - 1], 1e-12)) for r in rs])) if b <= length
                   else np.nan for b in checkpoints]
        label = f"{w}" + (", proposing ahead" if ahead else "") + (f", {strategy}" if strategy != "believer" else "")
        lines.append(f"| {label} | {len(rs)} | {fmt(evals, 0)} | {fmt(ratio, 2)} | {fmt(secs, 0)} | {fmt(speed, 2)} | "
                     + " | ".join("n/a" if np.isnan(m) else f"{m:.2f}" for m in medians)
                     + f" | {float(np.median([r['seconds'] for r in rs])):.0f} |")
    return "\n".join(lines)


def journal_table(rows) -> str:
    lines = ["| evaluations already in the run | journal: ms per evaluation (ask + tell) | JSON snapshot (`save`): "
             "ms per evaluation | journal size |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['n']} | {r['journal_ms']:.2f} | {r['snapshot_ms']:.2f} | {r['journal_bytes'] / 1024:.0f} KiB |")
    return "\n".join(lines)


def timing_table(rows) -> str:
    lines = ["| n | d | fit s/iter (warm start) | acquisition s/iter | total s/iter | "
             "first iteration: cold fit + acq (compiling) |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['n']} | {r['dim']} | {r['fit_s']:.2f} | {r['acq_s']:.2f} | {r['fit_s'] + r['acq_s']:.2f} | "
                     f"{r['cold_fit_s']:.1f} + {r['cold_acq_s']:.1f} |")
    return "\n".join(lines)


def paths_table(rows) -> str:
    """One row per optimizer setting: seconds of the first (cold) and later iterations, and the acquisition
    value each iteration reached (the first iteration's posterior is the same for every setting)."""
    lines = ["| paths | dims | n | paths searched in full | fit s: iteration 1, later (median) | acquisition s: "
             "iteration 1, later (median) | acquisition value at iteration 1 |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        it = r["iterations"]
        later = it[1:] or it
        searched = "all (no screening)" if r["max_paths"] is None else f"{r['max_paths']} after screening"
        lines.append(f"| {r['paths']} | {r['dim']} | {r['n']} | {searched} | {it[0]['fit_s']:.1f}, "
                     f"{np.median([x['fit_s'] for x in later]):.1f} | {it[0]['acq_s']:.1f}, "
                     f"{np.median([x['acq_s'] for x in later]):.1f} | {it[0]['acq_value']:.4f} |")
    return "\n".join(lines)


def graph_f1(edges, truth) -> float:
    """F1 score of an estimated edge set against the true one (002 Eq. 8); 1 when both are empty."""
    est, true = {tuple(sorted(e)) for e in edges}, {tuple(sorted(e)) for e in truth}
    hits = len(est & true)
    if not est and not true:
        return 1.0
    precision = hits / len(est) if est else 0.0
    recall = hits / len(true) if true else 0.0
    return 0.0 if hits == 0 else 2 * precision * recall / (precision + recall)


def f1_table(records, at) -> str:
    """Median [q25, q75] F1 of the posterior-median graph against the problem's true graph, by evaluation."""
    from optim.bench.problems import get_problem

    lines = ["| problem | method | seeds | " + " | ".join(f"F1 @{b}: median [q25, q75]" for b in at) + " |",
             "|" + "---|" * (3 + len(at))]
    groups = {}
    for r in records:
        if r.get("status") == "ok" and r.get("optimizer_info"):
            groups.setdefault((r["problem"], r["method"]), []).append(r)
    for (problem, method), rs in sorted(groups.items()):
        truth = get_problem(problem).info.get("edges")
        if truth is None:
            continue
        cells = []
        for b in at:
            scores = []
            for r in rs:
                infos = [i for i in r["optimizer_info"][:b] if i and "median_graph" in i]
                if infos:
                    scores.append(graph_f1(infos[-1]["median_graph"], truth))
            cells.append(f"{np.median(scores):.2f} [{np.quantile(scores, 0.25):.2f}, {np.quantile(scores, 0.75):.2f}]"
                         if scores else "")
        lines.append(f"| {problem} | {method} | {len(rs)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def scaling_table(rows) -> str:
    """Seconds per BO iteration: a warm MCMC refit, an iteration between refits, the acquisition, and the
    average per iteration (refit / k + between (k - 1) / k + acquisition, MCMC every k iterations)."""
    lines = ["| surrogate | D | n | MCMC every | warm refit s | between refits s | acquisition s | per iteration s (average) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        between = "" if r["between_s"] is None else f"{r['between_s']:.2f}"
        name = r["surrogate"] + (f" ({r['chain_workers']} chain workers)" if r.get("chain_workers") else "")
        lines.append(f"| {name} | {r['dim']} | {r['n']} | {r['refit_every']} | {r['refit_s']:.1f} | {between} | "
                     f"{r['acq_s']:.2f} | {r['per_iteration_s']:.1f} |")
    return "\n".join(lines)


def compiles_table(d) -> str:
    return "\n".join([
        "| problem | surrogate | BO iterations | n at start → end | XLA compilations, whole run | during BO iterations "
        "| iterations that compiled | wall time |",
        "|---|---|---|---|---|---|---|---|",
        f"| {d['problem']} | {d.get('surrogate', 'gp')} | {d['iterations']} | {d['n_init']} → {d['n_init'] + d['iterations']} | {d['total']} "
        f"| {d['during_bo']} | {', '.join(map(str, d['compiled_at']))} | {d['seconds']:.0f} s |"])


def plot_regret(records, problem: str, path: str) -> str:
    """Median best-so-far log10 regret vs evaluations with a quartile band, one colour (and, past ten
    methods, line style) per method; a long legend goes beside the axes, not over the curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = {m: recs for (p, m), recs in sorted(group(records).items()) if p == problem}
    outside = len(groups) > 6
    fig, ax = plt.subplots(figsize=(9.0 if outside else 6.4, 4.2))
    for i, (method, recs) in enumerate(groups.items()):
        n = min(len(r["values"]) for r in recs)
        traces = np.array([regret_trace(r)[:n] for r in recs])
        known = recs[0].get("optimum") is not None
        y = _log_regret(traces) if known else traces
        q25, med, q75 = np.percentile(y, [25, 50, 75], axis=0)
        x = np.arange(1, n + 1)
        colour = plt.cm.tab10(i % 10)
        ax.plot(x, med, color=colour, linestyle=("-", "--", ":")[(i // 10) % 3], label=f"{method} ({len(recs)} seeds)")
        ax.fill_between(x, q25, q75, color=colour, alpha=0.2)
    ax.set_xlabel("evaluations")
    ax.set_ylabel("log10 regret (median, quartile band)")
    ax.set_title(problem)
    ax.grid(alpha=0.3)
    if outside:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        ax.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path


_BLOCK = re.compile(r"(<!-- treezoo-bench: (?P<args>.*?) -->\n)(?P<body>.*?)(<!-- /treezoo-bench -->)", re.S)


#: the kinds whose tables pool one run per seed of each (problem, method) from several files
POOLED_RUN_KINDS = ("regret", "best", "hits", "failures", "wilcoxon", "periter", "mip", "f1", "match", "pathfinding", "cost",
                    "family")
#: the kinds that read every file of FILES (the others read the first)
MULTI_FILE_KINDS = POOLED_RUN_KINDS + ("mipstudy", "parallel")


def tagged_file(entry: str) -> tuple[str, str | None]:
    """(path, tag) of one FILES entry of a block: `FILE@TAG`, or a plain FILE (tag None; an "@" in a folder's name
    is part of the path)."""
    path, sep, tag = entry.rpartition("@")
    if not sep or "/" in tag:
        return entry, None
    if not path or not tag:
        raise ValueError(f"a tagged results file is FILE@TAG, got {entry!r}")
    return path, tag


def with_tag(record: dict, tag: str | None) -> dict:
    """The record with its method renamed METHOD@TAG (records without a method, and tag None, unchanged)."""
    if tag is None or "method" not in record:
        return record
    return {**record, "method": f"{record['method']}@{tag}"}


def render_block(args: str, base_dir: str, load=load_records) -> str:
    """The text of one block: `regret FILES --at B..`, `best FILES --at B..`, `hits FILES --below L --at B..`,
    `wilcoxon FILES --reference M --at B`,
    `periter FILES --at N..`, `regression FILE [--reference M]`, `regression-data FILE [--reference M]`, `timing FILE`, `compiles FILE`, `paths FILE`, `scaling FILE`, `f1 FILES --at B..`, `calibration FILE`, `parallel FILE [--at B]`, `journal FILE`,
    `match FILES --reference M --at B..`, `pathfinding FILES`, `cost FILES --reference M`,
    `family FILES --reference M --at B..`, `mipstudy FILES`, `recovery FILE`, `prediction FILE --reference M`;
    FILES is a comma-separated list of results files; `FILE@TAG` renames the methods of that file's runs to
    `METHOD@TAG`, so that runs of one method under two versions of the code, recorded in two files under one name,
    can share a table and be paired (`--methods` and `--reference` then name them so). `--problems P..` and
    `--methods M..` keep those records only;
    `--seeds N` keeps seeds 0 to N-1 (methods compared on the seeds they all ran). Tables of runs count each
    (problem, method, seed) once, across all the files (`one_run_per_cell`)."""
    argv = shlex.split(args)
    kind, files = argv[0], [tagged_file(f) for f in argv[1].split(",")]
    paths = [os.path.join(base_dir, p) for p, _ in files]
    opts = {}
    key = None
    for a in argv[2:]:
        if a.startswith("--"):
            key = a[2:]
            opts[key] = []
        else:
            opts[key].append(a)
    data = ([with_tag(r, tag) for p, (_, tag) in zip(paths, files) for r in load(p)] if kind in MULTI_FILE_KINDS
            else load(paths[0]))
    if "problems" in opts and kind not in ("regression", "regression-data"):
        data = [r for r in data if r.get("problem") in opts["problems"]]
    if "methods" in opts:
        data = [r for r in data if r.get("method") in opts["methods"]]
    if "seeds" in opts:
        data = [r for r in data if "seed" in r and int(r["seed"]) < int(opts["seeds"][0])]
    if kind in POOLED_RUN_KINDS:
        data = one_run_per_cell(data)
    if not data:
        raise FileNotFoundError(f"no results in {argv[1]}")
    if kind == "mip":
        return mip_table(data)
    if kind == "mipstudy":
        return mip_study_table(data)
    if kind == "regret":
        return regret_table(data, [int(b) for b in opts.get("at", ["20", "50"])])
    if kind == "best":
        return best_table(data, [int(b) for b in opts.get("at", ["20", "50"])])
    if kind == "failures":
        return failures_table(data, int(opts.get("at", ["40"])[0]), opts.get("reference", [None])[0])
    if kind == "hits":
        return hits_table(data, float(opts["below"][0]), [int(b) for b in opts.get("at", ["20", "50"])])
    if kind == "wilcoxon":
        return wilcoxon_table(data, opts["reference"][0], int(opts["at"][0]))
    if kind == "periter":
        return per_iteration_table(data, [int(n) for n in opts.get("at", ["20"])])
    if kind == "regression":
        return regression_table(data, opts.get("reference", ["addtree"])[0])
    if kind == "regression-data":
        return dataset_regression_table(data, opts.get("reference", ["bark"])[0])
    if kind == "timing":
        return timing_table(data)
    if kind == "compiles":
        return compiles_table(data)
    if kind == "paths":
        return paths_table(data)
    if kind == "scaling":
        return scaling_table(data)
    if kind == "f1":
        return f1_table(data, [int(b) for b in opts.get("at", ["50"])])
    if kind == "calibration":
        return calibration_table(data)
    if kind == "parallel":
        return parallel_table(data, int(opts["at"][0]) if "at" in opts else None)
    if kind == "match":
        return match_table(data, opts["reference"][0], [int(b) for b in opts.get("at", ["50"])])
    if kind == "journal":
        return journal_table(data)
    if kind == "pathfinding":
        return path_finding_table(data)
    if kind == "cost":
        return cost_table(data, opts["reference"][0])
    if kind == "prediction":
        return prediction_table(data, opts["reference"][0])
    if kind == "recovery":
        from optim.bench.recovery import recovery_table
        return recovery_table(data)
    if kind == "family":
        return family_table(data, opts["reference"][0], [int(b) for b in opts.get("at", ["30"])])
    raise ValueError(f"unknown block kind {kind!r}")


def calibration_table(records) -> str:
    """One row per SBC run: surrogate, space, path, simulations x draws, quantities, the smallest p-value and
    its quantity against the Bonferroni level, verdict, seconds, date."""
    head = ["surrogate", "space (n)", "path", "simulations x draws", "quantities", "smallest p (quantity)",
            "level", "verdict", "seconds", "date"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in records:
        verdict = "pass" if r["passed"] else "FAIL: " + ", ".join(r["failed"])
        path = f"warm ({r['settings'].get('warm_warmup')} sweeps)" if r["warm_start"] else "cold"
        lines.append(f"| {r['surrogate']} | {r['space']} ({r['n_points']}) | {path} "
                     f"| {r['simulations']} x {r['draws']} | {r['quantities']} | {r['min_p']:.3f} ({r['worst']}) "
                     f"| {r['level']:.4f} | {verdict} | {r['seconds']:.0f} | {r['date']} |")
    return "\n".join(lines)


def mip_table(records, n_max: int = 60) -> str:
    """Per problem and method: how the MIP acquisition optimizer ended over all BO iterations of all seeds, how
    often coordinate polishing improved the pool's best point, how often SCIP's point then beat that start
    under the full integrated acquisition (with `MIPConfig.forests`, SCIP solves a subset's MIP and its
    gap is the subset's), and in how many iterations with at most `n_max` observations SCIP closed the 10%
    gap or beat the start (issue 21's target)."""
    head = ["problem", "method", "iterations", "status counts", "gap: median [q75]", "polish beat the pool",
            "SCIP beat its warm start", "fell back", f"gap <= 10% or beat, n <= {n_max}", "acq s: median [max]"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    cells: dict = {}
    for r in records:
        if r.get("status") == "ok" and r.get("optimizer_info"):
            for n, (info, acq) in enumerate(zip(r["optimizer_info"], r["acq_seconds"])):
                if info is not None:  # entry n was proposed with n observations (a sequential run)
                    cells.setdefault((r["problem"], r["method"]), []).append((info, acq, n))

    def better(a, b):
        return a is not None and b is not None and a > b + 1e-9 * max(1.0, abs(b))

    def beat(info):  # SCIP's point under the full acquisition (older records: the MIP's value, all forests)
        return better(info.get("mip_point_value", info.get("mip_value")), info.get("polished_value", info["pool_value"]))

    def closed(info):
        return info.get("gap") is not None and info["gap"] <= 0.10
    for (problem, method), items in sorted(cells.items()):
        statuses: dict = {}
        for info, _, _ in items:
            statuses[info["status"]] = statuses.get(info["status"], 0) + 1
        gaps = np.array([i["gap"] for i, _, _ in items if i.get("gap") is not None and i["gap"] < 1e19])
        acq = np.array([a for _, a, _ in items])
        fell = sum(1 for i, _, _ in items if i.get("fallback"))
        polished = [i for i, _, _ in items if "polished_value" in i]
        polish = f"{sum(better(i['polished_value'], i['pool_value']) for i in polished)}/{len(polished)}" if polished else "not run"
        scip = sum(beat(i) for i, _, _ in items)
        small = [i for i, _, n in items if n <= n_max]
        target = f"{sum(closed(i) or beat(i) for i in small)}/{len(small)}" if small else "-"
        gap = f"{np.median(gaps):.3f} [{np.quantile(gaps, 0.75):.3f}]" if len(gaps) else "-"
        lines.append(f"| {problem} | {method} | {len(items)} | " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
                     + f" | {gap} | {polish} | {scip}/{len(items)} | {fell} | {target} | {np.median(acq):.2f} [{acq.max():.2f}] |")
    return "\n".join(lines)


def _beat_start(r) -> bool:
    """Whether a ``mip-study`` solve found a better objective than its polished warm start."""
    return r.get("objective") is not None and r["objective"] > r["start"] + 1e-9 * max(1.0, abs(r["start"]))


def mip_study_table(records) -> str:
    """Per problem, n and formulation (``mip-study`` records): per time limit, SCIP's relative gap at the end
    (status) and whether its point beat the polished warm start in the MIP's objective; seeds pooled. Then per
    formulation and time limit: how often the gap closed or the start was beaten, and SCIP's node counts."""
    limits = sorted({r["time_limit"] for r in records})
    head = ["problem", "n", "formulation", "runs"] + [f"{t:g} s: gap (status)" for t in limits] + \
        [f"{t:g} s: beat the start" for t in limits]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    cells: dict = {}
    for r in records:
        cells.setdefault((r["problem"], r["n"], r["formulation"]), {}).setdefault(r["time_limit"], []).append(r)

    def gap(rs):
        return ", ".join(f"{r['gap']:.3f} ({r['status']})" if r.get("gap") is not None and r["gap"] < 1e19
                         else f"none ({r['status']})" for r in rs)

    def beat(rs):
        return f"{sum(_beat_start(r) for r in rs)}/{len(rs)}"
    for (problem, n, formulation), by_limit in sorted(cells.items()):
        runs = max(len(v) for v in by_limit.values())
        lines.append(f"| {problem} | {n} | {formulation} | {runs} | "
                     + " | ".join(gap(by_limit.get(t, [])) or "-" for t in limits) + " | "
                     + " | ".join(beat(by_limit[t]) if t in by_limit else "-" for t in limits) + " |")
    summary = {}
    for r in records:
        key = (r["formulation"], r["time_limit"])
        closed = r.get("gap") is not None and r["gap"] <= 0.10
        a = summary.setdefault(key, [0, 0, 0, []])
        a[0] += 1
        a[1] += closed
        a[2] += closed or _beat_start(r)
        if r.get("n_nodes") is not None:
            a[3].append(r["n_nodes"])
    lines.append("")
    # The node count says where the time went: 1 means SCIP stopped at the root node, having closed the gap there or
    # spent its time on the root's LP and cuts before any branching.
    lines.append("| formulation | time limit | MIPs | gap closed to 10% | closed or beat the start | "
                 "branch-and-bound nodes: median [max] | ended at the root |")
    lines.append("|---|---|---|---|---|---|---|")
    for (formulation, t), (total, closed, either, nodes) in sorted(summary.items()):
        node_cell = f"{np.median(nodes):g} [{max(nodes)}]" if nodes else "-"
        root = f"{sum(k <= 1 for k in nodes)}/{len(nodes)}" if nodes else "-"
        lines.append(f"| {formulation} | {t:g} s | {total} | {closed}/{total} | {either}/{total} | {node_cell} | {root} |")
    return "\n".join(lines)


def render(markdown_path: str, check: bool = False) -> bool:
    """Rewrite every treezoo-bench block of the document; with check=True only report drift."""
    with open(markdown_path) as f:
        text = f.read()
    base = os.path.dirname(os.path.abspath(markdown_path))
    loaded: dict = {}  # each results file is parsed once per document (the tables only read the records)

    def load(path):
        if path not in loaded:
            loaded[path] = load_records(path)
        return loaded[path]

    new = _BLOCK.sub(lambda m: m.group(1) + render_block(m.group("args"), base, load) + "\n" + m.group(4), text)
    if check:
        return new == text
    with open(markdown_path, "w") as f:
        f.write(new)
    return True
