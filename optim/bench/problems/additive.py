"""High-dimensional problems with additive structure (paper 002 Sec. 4.3-4.4).

Additive GP sample functions: on [0, 1]^D, one 2-D RBF GP draw (lengthscale 0.2, variance 1) per edge
of a dependency graph and one 1-D draw per isolated dimension, each draw represented by 1000 random
Fourier features (Rahimi & Recht 2007), so a function is fixed by its seed and cheap to evaluate.
Structures: star (vertex 0 joined to all), path and random tree (forests), grid (a lattice, with
cycles) and partition (disjoint triangles, with cycles). Each problem exposes its true graph in
`Problem.info["edges"]`. The optimum of a forest-structured function is found by max-sum message
passing on a 256-point grid per dimension polished by L-BFGS-B; with cycles, by L-BFGS-B started
on grid-local minima (best known value). That takes seconds to a minute per instance,
so the optima of the built-in instances are computed once by `python -m optim.bench.problems.additive`
and kept in `additive_optima.py` (a slow test recomputes two of them).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.optimize import minimize as scipy_minimize

from optim.bench.problems.base import Problem
from optim.bench.problems.synthetic import HARTMANN6_MIN, hartmann6_value
from zoo.space import Real, Space

LENGTHSCALE = 0.2
FEATURES = 1000
STRUCTURES = ("star", "path", "tree", "grid", "partition")


def structure_edges(kind: str, dim: int, rng: np.random.Generator) -> np.ndarray:
    """Edges [E, 2] (i < j) of a dependency structure on `dim` vertices."""
    if kind == "star":
        edges = [(0, j) for j in range(1, dim)]
    elif kind == "path":
        order = rng.permutation(dim)
        edges = list(zip(order[:-1], order[1:]))
    elif kind == "tree":  # a uniform labelled tree: each vertex after the first joins an earlier one of a random order
        order = rng.permutation(dim)
        edges = [(order[k], order[rng.integers(0, k)]) for k in range(1, dim)]
    elif kind == "grid":
        side = math.isqrt(dim)
        if side * side != dim:
            raise ValueError(f"a grid structure needs a square dimension, got {dim}")
        edges = [(r * side + c, r * side + c + 1) for r in range(side) for c in range(side - 1)]
        edges += [(r * side + c, (r + 1) * side + c) for r in range(side - 1) for c in range(side)]
    elif kind == "partition":
        if dim % 3:
            raise ValueError(f"a partition into triangles needs a dimension divisible by 3, got {dim}")
        edges = [(a, b) for g in range(0, dim, 3) for a, b in ((g, g + 1), (g + 1, g + 2), (g, g + 2))]
    else:
        raise ValueError(f"structure must be one of {STRUCTURES}, got {kind!r}")
    return np.array(sorted((min(a, b), max(a, b)) for a, b in edges), dtype=np.int64).reshape(-1, 2)


class AdditiveGPFunction:
    """Sum of 2-D draws on `edges` and 1-D draws on isolated dimensions, as random Fourier features."""

    def __init__(self, dim: int, edges: np.ndarray, rng: np.random.Generator):
        self.dim, self.edges = dim, edges
        isolated = np.setdiff1d(np.arange(dim), edges.ravel())
        # every component as a pair of columns; a 1-D component reads its column twice with zero weight on the second
        self.a = np.concatenate([edges[:, 0], isolated])
        self.b = np.concatenate([edges[:, 1], isolated])
        pair = np.concatenate([np.ones(len(edges)), np.zeros(len(isolated))])
        C = len(self.a)
        self.omega = rng.normal(size=(C, FEATURES, 2)) / LENGTHSCALE
        self.omega[:, :, 1] *= pair[:, None]
        self.phase = rng.uniform(0, 2 * math.pi, size=(C, FEATURES))
        self.weight = rng.normal(size=(C, FEATURES)) * math.sqrt(2.0 / FEATURES)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """Values [N] at rows X [N, D] in [0, 1]^D."""
        X = np.atleast_2d(X)
        out = np.empty(len(X))
        for start in range(0, len(X), 64):  # [rows, C, F] at a time: bounded memory
            x = X[start:start + 64]
            arg = (x[:, self.a, None] * self.omega[None, :, :, 0] + x[:, self.b, None] * self.omega[None, :, :, 1]
                   + self.phase[None])
            out[start:start + 64] = np.sum(np.cos(arg) * self.weight[None], axis=(1, 2))
        return out

    def gradient(self, x: np.ndarray) -> np.ndarray:
        arg = x[self.a, None] * self.omega[:, :, 0] + x[self.b, None] * self.omega[:, :, 1] + self.phase
        s = -np.sin(arg) * self.weight  # [C, F]
        g = np.zeros(self.dim)
        np.add.at(g, self.a, np.sum(s * self.omega[:, :, 0], axis=1))
        np.add.at(g, self.b, np.sum(s * self.omega[:, :, 1], axis=1))
        return g

    def component_tables(self, grid: np.ndarray):
        """(pair tables [E, G, G], unary [D, G]) of the components on a shared 1-D grid, for max-sum."""
        E = len(self.edges)
        # cos(p u + q v + c) = cos(p u + c) cos(q v) - sin(p u + c) sin(q v): two [G, F] x [F, G] products
        first = grid[None, :, None] * self.omega[:E, None, :, 0] + self.phase[:E, None, :]  # [E, G, F]
        second = grid[None, :, None] * self.omega[:E, None, :, 1]
        w = self.weight[:E, None, :]
        pair = (np.einsum("egf,ehf->egh", w * np.cos(first), np.cos(second))
                - np.einsum("egf,ehf->egh", w * np.sin(first), np.sin(second)))
        unary = np.zeros((self.dim, len(grid)))
        arg1 = grid[None, :, None] * self.omega[E:, None, :, 0] + self.phase[E:, None, :]
        unary[self.a[E:]] = np.sum(np.cos(arg1) * self.weight[E:, None, :], axis=-1)
        return pair, unary

    def polish(self, x0: np.ndarray) -> tuple[np.ndarray, float]:
        res = scipy_minimize(lambda x: (float(self(x)[0]), self.gradient(x)), x0, jac=True, method="L-BFGS-B",
                             bounds=[(0.0, 1.0)] * self.dim)
        return res.x, float(res.fun)


def is_forest_edges(dim: int, edges: np.ndarray) -> bool:
    parent = list(range(dim))

    def find(v):
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v
    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra == rb:
            return False
        parent[ra] = rb
    return True


def _icm(pair, unary, edges, x, max_sweeps=100):
    """Iterated conditional modes on grid tables: each vertex in turn to its best grid value given the
    others, until no vertex moves (a local minimum of the discretized function)."""
    D = len(x)
    for _ in range(max_sweeps):
        moved = False
        for v in range(D):
            score = unary[v].copy()
            for e, (i, j) in enumerate(edges):
                if i == v:
                    score += pair[e][:, x[j]]
                elif j == v:
                    score += pair[e][x[i], :]
            best = int(np.argmin(score))
            moved |= best != x[v]
            x[v] = best
        if not moved:
            break
    return x


def minimum_of(fn: AdditiveGPFunction, rng: np.random.Generator) -> float:
    """The minimum (exact up to the grid and the polish for forests, best known otherwise); see the module
    docstring. With cycles: iterated conditional modes on the 256-point grid from 256 random starts, the 32
    best polished by L-BFGS-B."""
    from optim.message_passing import max_sum

    grid = (np.arange(256) + 0.5) / 256
    pair, unary = fn.component_tables(grid)
    if is_forest_edges(fn.dim, fn.edges):
        idx, _ = max_sum(fn.dim, fn.edges, -pair, -unary)
        return fn.polish(grid[idx])[1]
    modes = [_icm(pair, unary, fn.edges, rng.integers(0, len(grid), fn.dim)) for _ in range(256)]
    X = grid[np.array(modes)]
    starts = X[np.argsort(fn(X))[:32]]
    return min(fn.polish(x)[1] for x in starts)


@functools.lru_cache(maxsize=None)
def additive_function(kind: str, dim: int, function_seed: int) -> AdditiveGPFunction:
    """The function of an instance, fixed by (kind, dim, function_seed)."""
    rng = np.random.default_rng([function_seed, dim, STRUCTURES.index(kind)])
    return AdditiveGPFunction(dim, structure_edges(kind, dim, rng), rng)


def compute_optimum(kind: str, dim: int, function_seed: int) -> float:
    """The minimum of an instance by `minimum_of` (seeded by the instance)."""
    return minimum_of(additive_function(kind, dim, function_seed),
                      np.random.default_rng([function_seed, dim, STRUCTURES.index(kind), 1]))


def _additive_instance(kind: str, dim: int, function_seed: int):
    from optim.bench.problems.additive_optima import OPTIMA

    key = f"{kind}{dim}/{function_seed}"
    optimum = OPTIMA[key] if key in OPTIMA else compute_optimum(kind, dim, function_seed)
    return additive_function(kind, dim, function_seed), optimum


def additive_gp(kind: str = "star", dim: int = 20, noise_std: float = 0.0, seed: int = 0,
                function_seed: int = 0) -> Problem:
    """An additive GP sample function (paper 002 Sec. 4.3): minimize over [0, 1]^dim."""
    fn, optimum = _additive_instance(kind, dim, function_seed)
    names = [f"x{i}" for i in range(dim)]
    space = Space([Real(n, 0.0, 1.0) for n in names])
    return Problem(f"additive_{kind}{dim}", space, lambda c: float(fn(np.array([c[n] for n in names]))[0]),
                   optimum, noise_std, seed, info={"edges": fn.edges.tolist()})


def hartmann6_permuted(extra_dims: int = 14, noise_std: float = 0.0, seed: int = 0) -> Problem:
    """Hartmann-6 among `extra_dims` inert dimensions, its six placed at seeded random positions (002 Sec. 4.4)."""
    dim = 6 + extra_dims
    where = np.random.default_rng(6).permutation(dim)[:6]
    names = [f"x{i}" for i in range(dim)]
    space = Space([Real(n, 0.0, 1.0) for n in names])
    return Problem(f"hartmann6_perm{dim}", space,
                   lambda c: hartmann6_value(np.array([c[names[k]] for k in where])), HARTMANN6_MIN, noise_std, seed,
                   info={"active": where.tolist()})


__all__ = ["AdditiveGPFunction", "STRUCTURES", "additive_gp", "hartmann6_permuted", "minimum_of", "structure_edges"]


#: the instances whose optima are kept in additive_optima.py
BUILT_IN = (("star", 20), ("tree", 50), ("grid", 25), ("partition", 12), ("path", 100))

if __name__ == "__main__":
    import pathlib

    lines = ['"""Minima of the built-in additive GP instances, computed by `python -m optim.bench.problems.additive`',
             '(optim.bench.problems.additive.compute_optimum); do not edit by hand."""', "", "OPTIMA = {"]
    for kind, dim in BUILT_IN:
        lines.append(f'    "{kind}{dim}/0": {compute_optimum(kind, dim, 0)!r},')
    lines.append("}")
    out = pathlib.Path(__file__).with_name("additive_optima.py")
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text())
