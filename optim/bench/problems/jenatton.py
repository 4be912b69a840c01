"""Jenatton et al.'s tree-structured synthetic functions (001 Section 4.1; 000 Section 5.1).

Small balanced: x1 chooses a subtree; x2 / x3 choose a leaf owning one of x4..x7 in [-1, 1];
with shared variables, subtree x1=0 owns r8 and subtree x1=1 owns r9 in [0, 1], added to the
leaf value. Large balanced: three levels of binary decisions, eight leaves with f = x^2 + 0.1 a
(a = 1..8 left to right), and optionally one shared r per depth-1 subtree. Optimum 0.1.
"""

from __future__ import annotations

from optim.bench.problems.base import Problem
from zoo.space import Node, Real, Space


def _leaf(name, var, low=-1.0, high=1.0):
    return Node(name, params=(Real(var, low, high),))


def small_space(shared: bool = True) -> Space:
    left = Node("x1=0", params=(Real("r8", 0.0, 1.0),) if shared else (), choice="x2",
                children={0: _leaf("x1=0,x2=0", "x4"), 1: _leaf("x1=0,x2=1", "x5")})
    right = Node("x1=1", params=(Real("r9", 0.0, 1.0),) if shared else (), choice="x3",
                 children={0: _leaf("x1=1,x3=0", "x6"), 1: _leaf("x1=1,x3=1", "x7")})
    return Space(Node("root", choice="x1", children={0: left, 1: right}))


def small_value(c: dict) -> float:
    """The small balanced function (shared variables used when present in the config)."""
    if c["x1"] == 0:
        base = c["x4"] ** 2 + 0.1 if c["x2"] == 0 else c["x5"] ** 2 + 0.2
        return base + c.get("r8", 0.0)
    base = c["x6"] ** 2 + 0.3 if c["x3"] == 0 else c["x7"] ** 2 + 0.4
    return base + c.get("r9", 0.0)


def jenatton_small(shared: bool = True, noise_std: float = 0.0, seed: int = 0) -> Problem:
    name = "jenatton_small" + ("" if shared else "_noshared")
    return Problem(name, small_space(shared), small_value, 0.1, noise_std, seed)


def large_space(shared: bool = True) -> Space:
    """Decisions x1 (root), x2/x3 (depth 1), x4..x7 (depth 2); leaves own x8..x15; shared r16, r17."""
    leaves = iter(range(8, 16))
    decisions = iter(range(4, 8))

    def level2(prefix):
        d = next(decisions)
        a, b = next(leaves), next(leaves)
        return Node(prefix, choice=f"x{d}", children={0: _leaf(f"{prefix},x{d}=0", f"x{a}"),
                                                       1: _leaf(f"{prefix},x{d}=1", f"x{b}")})

    def level1(prefix, choice, r):
        return Node(prefix, params=(Real(r, 0.0, 1.0),) if shared else (), choice=choice,
                    children={0: level2(f"{prefix},{choice}=0"), 1: level2(f"{prefix},{choice}=1")})

    left = level1("x1=0", "x2", "r16")
    right = level1("x1=1", "x3", "r17")
    return Space(Node("root", choice="x1", children={0: left, 1: right}))


def large_value(c: dict) -> float:
    """Leaf a (1..8, left to right) contributes x^2 + 0.1 a, plus its depth-1 subtree's shared r."""
    if c["x1"] == 0:
        sub, r = c["x2"], c.get("r16", 0.0)
        d = 4 + sub
        leaf = 2 * sub + c[f"x{d}"]
    else:
        sub, r = c["x3"], c.get("r17", 0.0)
        d = 6 + sub
        leaf = 4 + 2 * sub + c[f"x{d}"]
    return c[f"x{8 + leaf}"] ** 2 + 0.1 * (leaf + 1) + r


def jenatton_large(shared: bool = True, noise_std: float = 0.0, seed: int = 0) -> Problem:
    name = "jenatton_large" + ("" if shared else "_noshared")
    return Problem(name, large_space(shared), large_value, 0.1, noise_std, seed)
