"""`treezoo-bench recovery`: how well the `additive` posterior finds a known dependency graph from n random points.

The BO runs of issue 16 score the posterior-median graph along the way (`f1` blocks), where the points are the
optimizer's own and few. This separates the sampler from the data: on a built-in additive GP function (the same
instance as the BO benchmark of that name) with n uniform random points, chains run from their usual random starts
("cold") and from the true graph ("truth"). Where both end at the same edge probabilities the chains have mixed,
and what they find is what the data say; where the truth-started chains keep the true edges and the cold ones do
not, the sampler is what falls short.
"""

from __future__ import annotations

import datetime
import functools
import time

import numpy as np

STARTS = ("cold", "truth")
#: NUTS tree depth of the recovery fits: the BO loop's depth when the recovery tables were measured
RECOVERY_TREE_DEPTH = 4


@functools.lru_cache(maxsize=None)
def _truth_started_class():
    """`Additive` with every chain started at a given graph (one class, so that equal starts share compilations)."""
    import jax.numpy as jnp

    from zoo.additive import Additive

    class TruthStarted(Additive):
        def __init__(self, space, edges):
            super().__init__(space)
            self.start = np.zeros((space.dim, space.dim), dtype=bool)
            for a, b in edges:
                self.start[a, b] = self.start[b, a] = True

        def init_discrete(self, key, data):
            return {"graph": jnp.asarray(self.start)}

        def config_key(self):
            return super().config_key() + (self.start.tobytes(),)

    return TruthStarted


def _truth_started(space, edges):
    """An `Additive` whose chains all start at the graph with `edges` (a diagnostic, not a model of its own)."""
    return _truth_started_class()(space, edges)


def recovery_cell(structure: str, dim: int, n: int, seed: int, start: str, warmup: int = 150, samples: int = 50,
                  thinning: int = 2, chains: int = 2) -> dict:
    """Edge recovery of one posterior: `additive` fitted to n uniform random points of the built-in additive GP
    function (`structure`, `dim`, function seed 0), chains from random forests (`start="cold"`) or from the true
    graph (`"truth"`); NUTS trees of depth 4 (at most 15 leapfrog steps), the BO loop's until 2026-11-28, with which
    BENCHMARKS.md's recovery tables were measured."""
    from inference import sample
    from optim.bench.problems.additive import additive_function
    from optim.bench.report import graph_f1
    from zoo.additive import Additive
    from zoo.space import Real, Space

    if start not in STARTS:
        raise ValueError(f"start must be one of {STARTS}, got {start!r}")
    fn = additive_function(structure, dim, 0)
    truth = [tuple(sorted(map(int, e))) for e in fn.edges]
    rng = np.random.default_rng([seed, n, dim])
    X = rng.random((n, dim))
    space = Space([Real(f"x{i}", 0.0, 1.0) for i in range(dim)])
    model = Additive(space) if start == "cold" else _truth_started(space, truth)
    t0 = time.perf_counter()
    post = sample(model, X, fn(X), key=seed, num_warmup=warmup, num_samples=samples, num_chains=chains,
                  thinning=thinning, max_tree_depth=RECOVERY_TREE_DEPTH)
    seconds = time.perf_counter() - t0
    P = model.edge_probabilities(post.samples)
    i, j = np.triu_indices(dim, 1)
    true_mask = np.zeros((dim, dim), dtype=bool)
    for a, b in truth:
        true_mask[a, b] = True
    median = [(int(a), int(b)) for a, b in zip(i, j) if P[a, b] > 0.5]
    acceptance = np.asarray(post.move_stats["graph"]).mean(axis=(0, 1))
    return {"structure": structure, "dim": dim, "n": n, "seed": seed, "start": start, "true_edges": len(truth),
            "f1": graph_f1(median, truth), "median_edges": len(median),
            "p_true": float(P[true_mask].mean()) if truth else None,
            "p_other": float(P[i, j][~true_mask[i, j]].mean()),
            "edges_per_draw": float(np.asarray(post.samples["graph"]).sum(axis=(-1, -2)).mean() / 2),
            "accept_toggle": float(acceptance[0]), "accept_mutation": float(acceptance[1]),
            "settings": {"warmup": warmup, "samples": samples, "thinning": thinning, "chains": chains},
            "seconds": seconds, "date": datetime.date.today().isoformat()}


def recovery_table(records) -> str:
    """Per (structure, D, n, start): median F1 of the posterior-median graph, mean inclusion probability of the true
    edges and of the other pairs, edges per draw, move acceptance, seconds per fit (medians over seeds)."""
    head = ["structure", "D", "n", "start", "seeds", "F1: median [min, max]", "P(true edge)", "P(other pair)",
            "edges per draw (true)", "accept toggle / mutation", "s per fit"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    groups: dict = {}
    for r in records:
        groups.setdefault((r["structure"], r["dim"], r["n"], STARTS.index(r["start"])), []).append(r)
    for (structure, dim, n, s), rs in sorted(groups.items()):
        med = lambda k: float(np.median([r[k] for r in rs]))  # noqa: E731
        f1 = [r["f1"] for r in rs]
        p_true = "" if rs[0]["p_true"] is None else f"{med('p_true'):.2f}"
        lines.append(f"| {structure} | {dim} | {n} | {STARTS[s]} | {len(rs)} | {np.median(f1):.2f} [{min(f1):.2f}, "
                     f"{max(f1):.2f}] | {p_true} | {med('p_other'):.3f} | {med('edges_per_draw'):.1f} "
                     f"({rs[0]['true_edges']}) | {med('accept_toggle'):.2f} / {med('accept_mutation'):.2f} | "
                     f"{med('seconds'):.0f} |")
    return "\n".join(lines)


__all__ = ["STARTS", "recovery_cell", "recovery_table"]
