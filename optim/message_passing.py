"""The "message_passing" optimizer: max-sum on each sampled dependency forest with zooming (002 Alg. 2,
Alg. S1), then the integrated acquisition decides.

For a posterior sample s with forest G_s, the additive UCB phi_s(x) = sum over components G of
-mu^G(x^G) + sqrt(beta) sigma^G(x^G) (002 Eq. 4, written for minimization) is a sum of 1-D and 2-D
terms on a forest, so max-sum message passing maximizes it exactly over a grid in O(D R^2). Zooming
(Alg. 2) makes the grid continuous: each dimension's interval is cut into R cells, one uniform random
representative per cell, max-sum over the representatives, then every dimension zooms into the cell
of its chosen representative; L levels.

The posterior average of phi_s over samples with different forests is not a sum over one forest, so
message passing runs per sample (for `structures` samples), every candidate is then scored under the
full integrated acquisition (UCB averaged over all samples, the joint posterior sigma rather than the
sum of component sigmas), the best are polished with L-BFGS-B, and the value returned is the
integrated acquisition at the returned point. The acquisition is told the component dimension (2), so
UCB's default beta_t = 0.2 d log 2t becomes 0.4 log 2t, near the paper's 0.5 log 2t.

Beside the paper's candidates and a Sobol pool, two kinds of rows near the incumbent are scored (both on by
default since 2026-11-28; `MessagePassingConfig(hybrids=False, n_local=0)` is the paper's set):
- hybrids: for each message-passing candidate, one row per tree of its forest, the incumbent with that tree's
  inputs taken from the candidate. The UCB tables add one exploration bonus per component, so a maximizer of
  the sum moves every input at once; a hybrid changes one part of the sum and keeps the rest.
- local rows: the incumbent with a random subset of its inputs (1 to 20, most often few) moved by a small
  Gaussian step.
UCB, EI or log-EI scores the rows (the tables stay the paper's UCB terms); the `additive` surrogate's default
is log-EI, which with these rows makes steady improvements near the incumbent on Styblinski–Tang-50 where UCB
with the paper's candidates alone proposed points as spread as random search's (BENCHMARKS.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import numpy as np
from scipy.stats import qmc

from optim.acquisition import UCB
from optim.local_rows import local_rows
from optim.path_lbfgs import lbfgs_polish
from zoo.compiled import compiled
from zoo.space import Space

COMPONENT_DIM = 2  # the dimension the acquisition is told (each component reads at most two inputs)


@dataclass(frozen=True)
class MessagePassingConfig:
    """Knobs of the message-passing optimizer (defaults: 002 Sec. 4.1, R = L = 4)."""

    grid: int = 4  # R: cells (and representatives) per dimension per level
    levels: int = 4  # L: zoom levels
    structures: int = 4  # posterior samples whose forests get their own message passing
    repeats: int = 2  # zoom runs per sample (fresh random representatives)
    n_raw: int = 256  # Sobol points scored beside the message-passing candidates
    n_polish: int = 2  # best candidates polished by L-BFGS-B (0: the best candidate is returned as scored)
    maxiter: int = 30
    #: per message-passing candidate, one row per tree of its forest: the incumbent with that tree's inputs taken
    #: from the candidate (so a proposal can change one part of the sum and keep the rest)
    hybrids: bool = True
    n_local: int = 256  # rows near the incumbent: a random subset of its inputs moved by a Gaussian step
    #: (smallest, largest) sd of the local rows' step on the unit scale, each row's sd log-uniform between them;
    #: (0.01, 0.1) did no better than (0.1, 0.1) on Hartmann-6 among 14 inert inputs (BENCHMARKS.md)
    local_scales: tuple = (0.1, 0.1)

    def __post_init__(self):
        if not isinstance(self.hybrids, bool):
            raise ValueError(f"hybrids must be True or False, got {self.hybrids!r}")
        for name in ("grid", "levels", "structures", "repeats", "n_raw"):
            v = getattr(self, name)
            if not (isinstance(v, int) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        for name in ("n_polish", "maxiter", "n_local"):
            v = getattr(self, name)
            if not (isinstance(v, int) and v >= 0):
                raise ValueError(f"{name} must be an integer >= 0, got {v!r}")
        scales = tuple(self.local_scales) if isinstance(self.local_scales, (tuple, list)) else ()
        if not (len(scales) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in scales)
                and 0 < scales[0] <= scales[1] <= 1):
            raise ValueError(f"local_scales must be (smallest, largest) with 0 < smallest <= largest <= 1, got "
                             f"{self.local_scales!r}")
        object.__setattr__(self, "local_scales", tuple(float(v) for v in scales))  # a journal's list, as saved


def forest_order(edges: np.ndarray, D: int):
    """(order, parent): vertices of each tree in breadth-first order from its smallest vertex, and each
    vertex's parent (-1 for roots)."""
    neighbours = [[] for _ in range(D)]
    for i, j in edges:
        neighbours[i].append(j)
        neighbours[j].append(i)
    parent = np.full(D, -1)
    seen = np.zeros(D, dtype=bool)
    order = []
    for root in range(D):
        if seen[root]:
            continue
        seen[root] = True
        queue = [root]
        while queue:
            v = queue.pop(0)
            order.append(v)
            for w in neighbours[v]:
                if not seen[w]:
                    seen[w], parent[w] = True, v
                    queue.append(w)
    return order, parent


def max_sum(D: int, edges: np.ndarray, pair_tables: np.ndarray, unary: np.ndarray):
    """Exact maximizer of sum_e pair_tables[e][x_i, x_j] (edges[e] = (i, j)) + sum_v unary[v][x_v] over
    x in {0..R-1}^D when the edges form a forest (002 Alg. S1 with psi^C = phi^C). Returns (x [D], value)."""
    order, parent = forest_order(edges, D)
    table_to_parent = {}  # v -> [R_v, R_parent]
    for (i, j), t in zip(edges, pair_tables):
        if parent[j] == i:
            table_to_parent[j] = t.T
        else:
            table_to_parent[i] = t
    incoming = unary.astype(np.float64).copy()  # unary plus messages from children, per vertex
    best_child = {}
    for v in reversed(order):
        p = parent[v]
        if p < 0:
            continue
        total = table_to_parent[v] + incoming[v][:, None]  # [R_v, R_p]
        best_child[v] = np.argmax(total, axis=0)
        incoming[p] += np.max(total, axis=0)
    x = np.zeros(D, dtype=np.int64)
    value = 0.0
    for v in order:
        if parent[v] < 0:
            x[v] = int(np.argmax(incoming[v]))
            value += float(incoming[v][x[v]])
        else:
            x[v] = int(best_child[v][x[parent[v]]])
    return x, value


def zoom_maximize(D: int, edges: np.ndarray, tables_at, rng: np.random.Generator, grid: int, levels: int):
    """002 Alg. 2: maximize a forest-additive function on [0, 1]^D by max-sum on zooming grids.
    `tables_at(points [D, R]) -> (pair_tables [E, R, R], unary [D, R])` gives the terms at the
    representatives. Returns (x [D] in [0, 1], value at x)."""
    lo, hi = np.zeros(D), np.ones(D)
    x, value = None, -np.inf
    for _ in range(levels):
        width = (hi - lo) / grid
        points = lo[:, None] + width[:, None] * (np.arange(grid)[None, :] + rng.random((D, grid)))
        pair_tables, unary = tables_at(points)
        idx, value = max_sum(D, edges, pair_tables, unary)
        x = points[np.arange(D), idx]
        lo, hi = lo + width * idx, lo + width * (idx + 1)
    return x, value


def _component_arrays(Z: np.ndarray):
    """Edges [E, 2] (i < j) and the padded component arrays (a, b, pair) the surrogate's moments take:
    edges first, then every vertex as a 1-D term (zeroed later where the vertex is on an edge)."""
    D = Z.shape[0]
    i, j = np.nonzero(np.triu(Z, 1))
    edges = np.stack([i, j], axis=1)
    a = np.concatenate([i, np.arange(D)])
    b = np.concatenate([j, np.arange(D)])
    pair = np.concatenate([np.ones(len(i), bool), np.zeros(D, bool)])
    return edges, a, b, pair


def sample_tables(acqf, sample: int, Z: np.ndarray, beta: float):
    """`tables_at` for one posterior sample: its additive UCB terms at grid representatives (002 Eq. 3-4)."""
    surrogate = acqf.surrogate
    moments = compiled("component_moments", lambda s: jax.jit(s.component_moments), surrogate)
    edges, a, b, pair = _component_arrays(Z)
    isolated = ~Z.any(axis=1)
    D = Z.shape[0]
    # pad the component count to 2D so one compiled shape serves every forest
    pad = 2 * D - len(a)
    a_p, b_p = np.concatenate([a, np.zeros(pad, np.int64)]), np.concatenate([b, np.zeros(pad, np.int64)])
    pair_p = np.concatenate([pair, np.zeros(pad, bool)])

    def tables_at(points):
        mean, var = moments(acqf.prepared, np.int32(sample), a_p, b_p, pair_p, points[a_p], points[b_p])
        phi = -np.asarray(mean) + np.sqrt(beta) * np.sqrt(np.asarray(var))  # [2D, R, R]
        pair_tables = phi[: len(edges)]
        unary = np.where(isolated[:, None], phi[len(edges): len(edges) + D, :, 0], 0.0)
        return pair_tables, unary
    return edges, tables_at


def component_labels(edges: np.ndarray, D: int) -> np.ndarray:
    """[D]: the index of the tree of the forest each input belongs to."""
    order, parent = forest_order(edges, D)
    label = np.empty(D, dtype=np.int64)
    for v in order:
        label[v] = v if parent[v] < 0 else label[parent[v]]
    return label


def hybrid_rows(incumbent: np.ndarray, candidate: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """One row per tree of the forest: the incumbent with that tree's inputs taken from the candidate."""
    trees = np.unique(labels)
    rows = np.tile(incumbent, (len(trees), 1))
    for k, tree in enumerate(trees):
        rows[k, labels == tree] = candidate[labels == tree]
    return rows


def optimize_message_passing(acqf, space: Space, rng: np.random.Generator,
                             config: MessagePassingConfig = MessagePassingConfig()):
    """The "message_passing" optimizer: returns (encoded row, integrated acquisition value, info)."""
    surrogate = acqf.surrogate
    graphs = np.asarray(surrogate.dependency_graphs(acqf.prepared)).astype(bool)  # [S, D, D]
    S, D = graphs.shape[0], space.dim
    # the tables are the paper's UCB terms whatever acquisition scores the candidates
    ucb = acqf.acquisition if isinstance(acqf.acquisition, UCB) else UCB()
    beta = float(ucb.beta_t(float(acqf.t), float(COMPONENT_DIM)))
    chosen = rng.choice(S, size=min(config.structures, S), replace=False)
    incumbent = acqf.incumbent
    candidates, hybrids = [], []
    for s in chosen:
        edges, tables_at = sample_tables(acqf, int(s), graphs[s], beta)
        labels = component_labels(edges, D)
        for _ in range(config.repeats):
            x = zoom_maximize(D, edges, tables_at, rng, config.grid, config.levels)[0]
            candidates.append(x)
            if config.hybrids:
                hybrids.append(hybrid_rows(incumbent, x, labels))
    groups = {"message_passing": np.array(candidates), "hybrid": np.zeros((0, D)), "local": np.zeros((0, D)),
              "sobol": qmc.Sobol(D, scramble=True, rng=rng).random(config.n_raw)}
    if hybrids:
        groups["hybrid"] = np.vstack(hybrids)
    if config.n_local:
        groups["local"] = local_rows(incumbent, config.n_local, rng, config.local_scales)
    kinds = np.concatenate([[k] * len(rows) for k, rows in groups.items()])
    X = space.round_encoded(np.vstack(list(groups.values())))
    values = acqf.values(X, COMPONENT_DIM)
    order = np.argsort(-values)[: max(config.n_polish, 1)]
    starts = X[order]
    polished = (space.round_encoded(lbfgs_polish(acqf, starts, np.arange(D), config.maxiter, COMPONENT_DIM))
                if config.n_polish else starts[:0])
    final = np.vstack([polished, starts])
    final_values = acqf.values(final, COMPONENT_DIM)
    k = int(np.argmax(final_values))
    median = np.argwhere(np.triu(graphs.mean(axis=0) > 0.5, 1))  # the posterior-median graph (002 Eq. 8's G)
    info = {"structures": int(len(chosen)), "candidates": len(candidates), "median_graph": median.tolist(),
            "best_message_passing_rank": int(np.sum(values > np.max(values[: len(candidates)]))),
            # the kind of row the returned point came from (polished or as scored)
            "start_kind": str(kinds[order[k % len(order)]]),
            "polish_gain": float(final_values[k] - np.max(values))}
    return final[k], float(final_values[k]), info


__all__ = ["MessagePassingConfig", "component_labels", "forest_order", "hybrid_rows", "local_rows", "max_sum",
           "optimize_message_passing", "zoom_maximize"]
