"""A seeded family of conditional (tree-structured) test problems with known optima (issue 23).

Instance `index` is drawn from its own random stream, so no single tree can be tuned to without the
others showing it. Each instance is a tree of decisions of depth 2-4 and branching 2-3, balanced or
not, with:

- path penalties: every decision has one free child; each other child adds 0.1-0.6, so the optimum
  lies on one path and every wrong decision costs something;
- shared parameters on inner vertices (the root and about half the others; a real on [0, 1] or an
  integer on 0..8): active on every path through the vertex, with an effect that depends on which child is chosen (its own centre and weight
  per child), and a real one also shifts the optima of the leaves below it;
- leaf functions of different shapes (a bowl, a narrow basin in a wide bowl, a Rosenbrock ridge, a
  multimodal cosine bowl) on reals with different ranges and log scales, plus integer and categorical
  parameters in some leaves.

Every term is zero at its own centre whatever the other active parameters are, so the minimum, 0, is
reached on the all-free path at the centres (`Problem.info["argmin"]`). Instances `HELD_OUT` are kept
out of every choice tuned on the family and are reported apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from optim.bench.problems.base import Problem
from zoo.space import Categorical, Integer, Node, Real, Space

FAMILY_SIZE = 12
HELD_OUT = (8, 9, 10, 11)  # never tuned on: report apart
FAMILY_SEED = 20261125
MAX_LEAVES = 9  # 3 x 3 balanced; with 1-2 reals per leaf, instances have about 8-25 columns (3-9 per path)
SHAPES = ("bowl", "narrow", "ridge", "multimodal")
_REAL_RANGES = ((0.0, 1.0, False), (-1.0, 1.0, False), (0.0, 10.0, False), (1e-3, 1.0, True))
_INTEGER_HIGH = 8  # shared integers range over 0..8
# (depth, branching, balanced) of the first FAMILY_SIZE instances, so that the family covers each kind;
# later indices draw theirs. An unbalanced tree's vertices have 2..branching children.
DESIGNS = ((2, 2, True), (2, 3, True), (3, 2, True), (3, 2, False), (3, 3, False), (4, 2, False), (4, 3, False),
           (2, 3, False), (3, 2, True), (4, 2, False), (3, 3, False), (2, 2, True))


@dataclass
class _Term:
    """One additive term: `kind` 'shared' (a vertex's parameter, per-child centre and weight), 'leaf'
    (a shape over the leaf's reals), 'integer' or 'categorical' (a leaf's own)."""

    kind: str
    params: list
    centre: np.ndarray | dict | None = None
    weight: float | np.ndarray = 1.0
    shape: str = ""
    scale: float = 1.0
    frequency: float = 0.0
    shift: np.ndarray | None = None  # leaf centres move by shift * (s - 0.5), s the nearest shared real


@dataclass
class _Vertex:
    name: str
    decision: str | None = None
    children: list = field(default_factory=list)
    penalty: np.ndarray | None = None  # per child; 0 for the free child
    shared: _Term | None = None
    terms: list = field(default_factory=list)  # a leaf's terms


def _leaf_centre(term: _Term, s: float | None) -> np.ndarray:
    """A leaf shape's optimum in unit coordinates, moved by the nearest shared real's unit value `s`."""
    return term.centre + (term.shift * (s - 0.5) if term.shift is not None and s is not None else 0.0)


def _shape_value(term: _Term, u: np.ndarray, centre: np.ndarray) -> float:
    """The leaf shape at unit coordinates u with optimum at `centre` (value 0 there, positive elsewhere)."""
    z = (u - centre) / term.scale
    if term.shape == "bowl":
        return float(np.mean(z**2))
    if term.shape == "narrow":  # a wide bowl with a narrow basin (lengthscale 0.05-0.1) at its centre
        wide = (u - centre) / 0.8
        return float(0.3 * np.mean(wide**2) + 0.7 * (1.0 - math.exp(-0.5 * float(np.mean(z**2)))))
    if term.shape == "ridge":  # Rosenbrock's curved valley, its minimum moved to the centre
        a, b = z[0] + 1.0, z[1] + 1.0
        return float(((1.0 - a) ** 2 + 2.0 * (b - a * a) ** 2) / 4.0)
    if term.shape == "multimodal":
        return float(np.mean(z**2 + 1.0 - np.cos(2.0 * math.pi * term.frequency * z)))
    raise ValueError(term.shape)


class _Builder:
    """Draws one instance's tree and parameters from a random stream."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.counts = {"d": 0, "s": 0, "x": 0, "n": 0, "c": 0}

    def _name(self, prefix: str) -> str:
        k = self.counts[prefix]
        self.counts[prefix] += 1
        return f"{prefix}{k}"

    def shape(self, depth: int, branching: int, balanced: bool) -> dict:
        """The tree's shape as nested dicts {child index: its subtree}, {} for a leaf. Unbalanced trees stop
        some branches early, but one branch per vertex goes on, so the tree has the given depth."""
        if depth == 0:
            return {}
        n = branching if balanced else int(self.rng.integers(2, branching + 1))
        going_on = int(self.rng.integers(n))
        return {j: self.shape(depth - 1, branching, balanced) if balanced or j == going_on or self.rng.random() < 0.5
                else {} for j in range(n)}

    def real(self) -> Real:
        low, high, log = _REAL_RANGES[int(self.rng.integers(len(_REAL_RANGES)))]
        return Real(self._name("x"), low, high, log=log)

    def vertex(self, shape: dict, name: str, shift_parent: bool) -> _Vertex:
        rng = self.rng
        if not shape:
            return self.leaf(name, shift_parent)
        v = _Vertex(name, decision=self._name("d"))
        n = len(shape)
        penalty = rng.uniform(0.1, 0.6, n)
        penalty[int(rng.integers(n))] = 0.0
        v.penalty = penalty
        shift = shift_parent
        if rng.random() < 0.5 or name == "root":  # shared by the whole subtree, with per-child effects
            if rng.random() < 0.25:
                p = Integer(self._name("s"), 0, _INTEGER_HIGH)
                centre = rng.integers(1, _INTEGER_HIGH, n) / _INTEGER_HIGH
            else:
                p = Real(self._name("s"), 0.0, 1.0)
                centre = rng.uniform(0.15, 0.85, n)
                shift = True
            v.shared = _Term("shared", [p], centre=centre, weight=rng.uniform(0.3, 1.0, n))
        v.children = [self.vertex(shape[j], f"{name}/{j}", shift) for j in range(n)]
        return v

    def leaf(self, name: str, shifted: bool) -> _Vertex:
        rng = self.rng
        v = _Vertex(name)
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        dim = 2 if shape == "ridge" else 1
        reals = [self.real() for _ in range(dim)]
        scale = {"bowl": rng.uniform(0.4, 0.8), "narrow": rng.uniform(0.05, 0.1), "ridge": 0.7,
                 "multimodal": rng.uniform(0.3, 0.5)}[shape]
        v.terms.append(_Term("leaf", reals, centre=rng.uniform(0.2, 0.8, dim), weight=rng.uniform(0.5, 2.0),
                             shape=shape, scale=scale, frequency=rng.uniform(1.5, 2.5),
                             shift=rng.uniform(-0.15, 0.15, dim) if shifted else None))
        if rng.random() < 0.25:
            high = int(rng.integers(4, 11))
            centre = np.array([int(rng.integers(0, high + 1)) / high])
            v.terms.append(_Term("integer", [Integer(self._name("n"), 0, high)], centre=centre,
                                 weight=rng.uniform(0.3, 1.0)))
        if rng.random() < 0.25:
            k = int(rng.integers(3, 5))
            offsets = rng.uniform(0.1, 0.5, k)
            offsets[int(rng.integers(k))] = 0.0
            choices = tuple(("relu", "tanh", "gelu", "silu")[:k])
            v.terms.append(_Term("categorical", [Categorical(self._name("c"), choices)],
                                 centre=dict(zip(choices, offsets))))
        return v


def _to_node(v: _Vertex) -> Node:
    params = ([v.shared.params[0]] if v.shared else []) + [p for t in v.terms for p in t.params]
    if not v.children:
        return Node(v.name, params=tuple(params))
    return Node(v.name, params=tuple(params), choice=v.decision,
                children={j: _to_node(c) for j, c in enumerate(v.children)})


def _value(root: _Vertex, config: dict) -> float:
    """The objective: path penalties, shared terms of the chosen children, the leaf's terms."""
    total, v, s = 0.0, root, None
    while v.children:
        j = int(config[v.decision])
        total += float(v.penalty[j])
        if v.shared is not None:
            p = v.shared.params[0]
            u = p.to_unit(config[p.name])
            total += float(v.shared.weight[j]) * 2.0 * (u - float(v.shared.centre[j])) ** 2
            if isinstance(p, Real):
                s = u
        v = v.children[j]
    for t in v.terms:
        p0 = t.params[0]
        if t.kind == "categorical":
            total += float(t.centre[config[p0.name]])
            continue
        u = np.array([p.to_unit(config[p.name]) for p in t.params])
        if t.kind == "integer":
            total += t.weight * 2.0 * float((u[0] - t.centre[0]) ** 2)
            continue
        total += t.weight * _shape_value(t, u, _leaf_centre(t, s))
    return float(total)


def _argmin(root: _Vertex) -> dict:
    """The optimum: the free child at every decision, every term at its centre."""
    config, v, s = {}, root, None
    while v.children:
        j = int(np.flatnonzero(v.penalty == 0.0)[0])
        config[v.decision] = j
        if v.shared is not None:
            p = v.shared.params[0]
            c = float(v.shared.centre[j])
            config[p.name] = p.from_unit(c)
            if isinstance(p, Real):
                s = p.to_unit(config[p.name])
        v = v.children[j]
    for t in v.terms:
        if t.kind == "categorical":
            config[t.params[0].name] = min(t.centre, key=t.centre.get)
            continue
        for p, c in zip(t.params, _leaf_centre(t, s)):
            config[p.name] = p.from_unit(float(c))
    return config


def _describe(root: _Vertex) -> dict:
    """Facts about the drawn tree, for tests and tables."""
    leaves, inner, depths = [], [], []

    def walk(v, depth):
        if v.children:
            inner.append(v)
            for c in v.children:
                walk(c, depth + 1)
        else:
            leaves.append(v)
            depths.append(depth)
    walk(root, 0)
    kinds = [t.kind for v in leaves for t in v.terms]
    return {"leaves": len(leaves), "depth": max(depths), "balanced": len(set(depths)) == 1,
            "branching": sorted({len(v.children) for v in inner}),
            "shapes": sorted({t.shape for v in leaves for t in v.terms if t.kind == "leaf"}),
            "shared": sum(v.shared is not None for v in inner),
            "integers": kinds.count("integer") + sum(isinstance(v.shared.params[0], Integer) for v in inner
                                                     if v.shared is not None),
            "categoricals": kinds.count("categorical")}


def draw_instance(index: int) -> tuple[_Vertex, dict]:
    """Instance `index`'s tree (redrawn from the same stream until it has at most MAX_LEAVES leaves)."""
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise ValueError(f"a family instance is a non-negative integer, got {index!r}")
    rng = np.random.default_rng([FAMILY_SEED, index])
    if index < len(DESIGNS):
        depth, branching, balanced = DESIGNS[index]
    else:
        depth, branching, balanced = int(rng.integers(2, 5)), int(rng.integers(2, 4)), bool(rng.random() < 0.5)
    while True:
        builder = _Builder(rng)
        shape = builder.shape(depth, branching, balanced)
        if 3 <= _count_leaves(shape) <= MAX_LEAVES:
            root = builder.vertex(shape, "root", False)
            return root, _describe(root)


def _count_leaves(shape: dict) -> int:
    return 1 if not shape else sum(_count_leaves(c) for c in shape.values())


def conditional_family(index: int, noise_std: float = 0.0, seed: int = 0) -> Problem:
    """Instance `index` of the family (optimum 0; `info` holds its argmin and the drawn tree's facts)."""
    root, facts = draw_instance(index)
    space = Space(_to_node(root))
    problem = Problem(f"conditional_{index}", space, lambda c: _value(root, c), 0.0, noise_std, seed,
                      info={"argmin": _argmin(root), "held_out": index in HELD_OUT, **facts})
    return problem
