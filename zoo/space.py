"""Search spaces: flat and conditional (tree-structured) with real, integer, categorical parameters.

A space is a tree of :class:`Node`. Each node owns parameters; a node with children also owns a
categorical *decision* (named by ``choice``) whose value selects exactly one child. A
configuration is a plain ``dict`` holding only the active parameters (those on the chosen
root-to-leaf path, decisions included). ``Space([...params])`` is a flat space (a single node).

Encoding (fixed width, one column per parameter or decision, depth-first order):
real and integer columns live in the unit interval (log scale where asked), categorical columns
hold the category index; inactive columns hold :data:`INACTIVE_NUMERIC` / :data:`INACTIVE_CATEGORY`.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from scipy.stats import qmc

INACTIVE_NUMERIC = 0.5  # fill value of an inactive real/integer column (unit scale)
INACTIVE_CATEGORY = -1.0  # fill value of an inactive categorical column: a category of its own

REAL, INTEGER, CATEGORICAL = 0, 1, 2
RESOLVABLE = 1e-9  # smallest relative width of a Real's (log-)range: float64 then resolves ~4.5e6 values in it


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


@dataclass(frozen=True)
class Real:
    """A real parameter on [low, high], optionally searched on a log scale."""

    name: str
    low: float
    high: float
    log: bool = False
    kind: int = field(default=REAL, init=False, repr=False)

    def __post_init__(self):
        _check_name(self.name)
        if not (_is_number(self.low) and _is_number(self.high)) or not self.low < self.high:
            raise ValueError(f"Real {self.name!r}: need numbers low < high, got {self.low!r}, {self.high!r}")
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise ValueError(f"Real {self.name!r}: bounds must be finite, got {self.low!r}, {self.high!r}")
        if not isinstance(self.log, (bool, np.bool_)):
            raise TypeError(f"Real {self.name!r}: log must be True or False, got {self.log!r}")
        object.__setattr__(self, "low", float(self.low))  # plain floats: numpy scalars would not save as JSON
        object.__setattr__(self, "high", float(self.high))
        object.__setattr__(self, "log", bool(self.log))
        if self.log and self.low <= 0:
            raise ValueError(f"Real {self.name!r}: log scale needs low > 0, got {self.low!r}")
        # the optimizers search the unit interval: the span must be finite and resolvable in float64
        # (at least ~1e6 distinct values), else encode/decode cannot round-trip a value
        lo, hi = (math.log(self.low), math.log(self.high)) if self.log else (self.low, self.high)
        floor = 1.0 if self.log else 1e-291  # a log range near 1; a linear range of subnormal numbers
        if not math.isfinite(hi - lo) or hi - lo < RESOLVABLE * max(floor, abs(lo), abs(hi)):
            raise ValueError(f"Real {self.name!r}: the range [{self.low!r}, {self.high!r}] is "
                             f"{'too wide' if not math.isfinite(hi - lo) else 'too narrow'} to search in double "
                             "precision; rescale the parameter")

    def to_unit(self, value) -> float:
        if self.log:
            return (math.log(value) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        return (value - self.low) / (self.high - self.low)

    def from_unit(self, u: float) -> float:
        u = min(max(float(u), 0.0), 1.0)
        if self.log:  # exp(log) can round past a bound by an ulp: clip so decoded values always validate
            value = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            value = self.low + u * (self.high - self.low)
        return float(min(max(value, self.low), self.high))

    def from_uniform(self, u: float) -> float:
        return self.from_unit(u)

    def check(self, value) -> str | None:
        if not _is_number(value) or not math.isfinite(value):
            return f"expected a finite number, got {value!r}"
        if not self.low <= value <= self.high:
            return f"value {value!r} outside [{self.low}, {self.high}]"
        return None

    def to_dict(self):
        return {"type": "real", "name": self.name, "low": self.low, "high": self.high, "log": self.log}


@dataclass(frozen=True)
class Integer:
    """An integer parameter taking the values low, low+1, ..., high."""

    name: str
    low: int
    high: int
    kind: int = field(default=INTEGER, init=False, repr=False)

    def __post_init__(self):
        _check_name(self.name)
        ok = all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in (self.low, self.high))
        if not ok or not self.low < self.high:
            raise ValueError(f"Integer {self.name!r}: need integers low < high, got {self.low!r}, {self.high!r}")
        if self.high - self.low > 2**53:  # the encoding is a float64 on [0, 1]
            raise ValueError(f"Integer {self.name!r}: at most 2**53 + 1 values can be encoded exactly, "
                             f"got [{self.low}, {self.high}]")
        object.__setattr__(self, "low", int(self.low))
        object.__setattr__(self, "high", int(self.high))

    def to_unit(self, value) -> float:
        return (value - self.low) / (self.high - self.low)

    def from_unit(self, u: float) -> int:
        u = min(max(float(u), 0.0), 1.0)
        return int(self.low + round(u * (self.high - self.low)))

    def from_uniform(self, u: float) -> int:
        """Map u ~ U[0,1) to a uniformly distributed integer."""
        n = self.high - self.low + 1
        return int(self.low + min(int(u * n), n - 1))

    def check(self, value) -> str | None:
        if isinstance(value, bool) or not _is_number(value) or not float(value).is_integer():
            return f"expected an integer, got {value!r}"
        if not self.low <= value <= self.high:
            return f"value {value!r} outside [{self.low}, {self.high}]"
        return None

    def to_dict(self):
        return {"type": "integer", "name": self.name, "low": int(self.low), "high": int(self.high)}


@dataclass(frozen=True)
class Categorical:
    """An unordered categorical parameter; encoded by category index, never as an ordered number."""

    name: str
    choices: tuple
    kind: int = field(default=CATEGORICAL, init=False, repr=False)

    def __post_init__(self):
        _check_name(self.name)
        if isinstance(self.choices, (str, bytes)) or not isinstance(self.choices, Iterable):
            raise TypeError(f"Categorical {self.name!r}: choices must be a sequence of values, got {self.choices!r}")
        choices = tuple(_plain_value(c, f"Categorical {self.name!r}") for c in self.choices)
        object.__setattr__(self, "choices", choices)
        if len(choices) < 2:
            raise ValueError(f"Categorical {self.name!r}: need at least 2 choices, got {choices!r}")
        if len(set(map(_choice_key, choices))) != len(choices):
            raise ValueError(f"Categorical {self.name!r}: choices must be distinct, got {choices!r}")

    def index(self, value) -> int:
        key = _choice_key(value)
        for i, c in enumerate(self.choices):
            if _choice_key(c) == key:
                return i
        raise ValueError(f"{self.name!r}: {value!r} is not one of {self.choices!r}")

    def to_unit(self, value) -> float:
        return float(self.index(value))

    def from_unit(self, idx: float):
        i = int(round(float(idx)))
        return self.choices[min(max(i, 0), len(self.choices) - 1)]

    def from_uniform(self, u: float):
        return self.choices[min(int(u * len(self.choices)), len(self.choices) - 1)]

    def check(self, value) -> str | None:
        try:
            self.index(value)
        except (ValueError, TypeError):
            return f"{value!r} is not one of {list(self.choices)!r}"
        return None

    def to_dict(self):
        return {"type": "categorical", "name": self.name, "choices": list(self.choices)}


Param = Real | Integer | Categorical


def _choice_key(value):
    """Key that distinguishes 1 from True and '1' but lets 1 == 1.0 == np.int64(1) and 'a' == np.str_('a')."""
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))
    if _is_number(value):
        return ("num", float(value))
    if isinstance(value, str):
        return ("str", str(value))
    return (type(value).__name__, value)


def _plain_value(value, owner: str):
    """A category value (or child key) as the plain Python scalar a saved run keeps: str, int, finite float,
    bool or None (numpy scalars converted); anything else is refused, so every space that can be built can
    be saved and loaded."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        if not math.isfinite(value):
            raise ValueError(f"{owner}: category value {value!r} is not a finite number")
        return float(value)
    raise TypeError(f"{owner}: category value {value!r} is a {type(value).__name__}; category values must be "
                    "strings, numbers, booleans or None (what a saved run can hold)")


def _check_name(name):
    if not isinstance(name, str) or not name:
        raise ValueError(f"parameter and node names must be non-empty strings, got {name!r}")


@dataclass(frozen=True)
class Node:
    """A vertex of a conditional space: its own parameters and, optionally, a decision over children."""

    name: str
    params: tuple = ()
    choice: str | None = None
    children: Mapping[Any, "Node"] = field(default_factory=dict)

    def __post_init__(self):
        _check_name(self.name)
        if isinstance(self.params, (Real, Integer, Categorical)) or not isinstance(self.params, (list, tuple)):
            raise TypeError(f"node {self.name!r}: params must be a list or tuple of parameters, got {self.params!r}")
        object.__setattr__(self, "params", tuple(self.params))
        children = self.children if self.children is not None else {}
        if not isinstance(children, Mapping):
            raise TypeError(f"node {self.name!r}: children must be a dict {{decision value: Node}}, got "
                            f"{type(children).__name__}")
        for key, child in children.items():
            if not isinstance(child, Node):
                raise TypeError(f"node {self.name!r}: child {key!r} is a {type(child).__name__}, not a Node")
        owner = f"node {self.name!r}"
        object.__setattr__(self, "children", {_plain_value(k, owner): c for k, c in children.items()})
        if len(self.children) != len(children):
            raise ValueError(f"node {self.name!r}: child keys must be distinct, got {list(children)!r}")
        if self.children and self.choice is None:
            raise ValueError(f"node {self.name!r} has children but no `choice` (decision name)")
        if self.choice is not None and len(self.children) < 2:
            raise ValueError(f"node {self.name!r}: decision {self.choice!r} needs at least 2 children")
        if self.children:
            _check_name(self.choice)
            self.decision  # noqa: B018  (the decision's choices are checked like any categorical's)
        for p in self.params:
            if not isinstance(p, (Real, Integer, Categorical)):
                raise ValueError(f"node {self.name!r}: {p!r} is not a Real, Integer or Categorical")

    @property
    def decision(self) -> Categorical | None:
        return Categorical(self.choice, tuple(self.children)) if self.children else None


@dataclass(frozen=True)
class Path:
    """One root-to-leaf path: the nodes on it, its decision values, and the columns it activates."""

    index: int
    nodes: tuple  # node names, root first
    decisions: dict  # decision name -> chosen value
    active: np.ndarray  # bool [D]

    @property
    def leaf(self) -> str:
        return self.nodes[-1]


class Space:
    """A (possibly conditional) search space with a fixed-width numeric encoding."""

    def __init__(self, root: Node | Sequence[Param]):
        if not isinstance(root, Node):
            if not isinstance(root, (list, tuple)):
                raise TypeError(f"Space takes a Node or a list of parameters, got {root!r}")
            root = Node("root", params=tuple(root))
        self.root = root
        self.columns: list = []  # Param objects, decisions as Categorical
        self.column_node: list[str] = []  # owning node of each column
        self.nodes: dict[str, Node] = {}
        self._walk(root)
        names = [c.name for c in self.columns]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"names must be unique across the whole space; repeated: {dup}")
        if not names:
            raise ValueError("a space needs at least one parameter or decision; there is nothing to optimize")
        self.names = names
        self.col = {n: i for i, n in enumerate(names)}
        self.kinds = np.array([c.kind for c in self.columns], dtype=np.int64)
        self.n_choices = np.array([len(c.choices) if c.kind == CATEGORICAL else 0 for c in self.columns])
        self.decision_names = [n.choice for n in self.nodes.values() if n.children]
        self.paths = self._enumerate_paths()
        self._path_by_leaf = {p.leaf: p for p in self.paths}

    # ----------------------------------------------------------------- structure
    def _walk(self, node: Node):
        if node.name in self.nodes:
            raise ValueError(f"node names must be unique; {node.name!r} appears twice")
        self.nodes[node.name] = node
        for p in node.params:
            self.columns.append(p)
            self.column_node.append(node.name)
        if node.children:
            self.columns.append(node.decision)
            self.column_node.append(node.name)
            for child in node.children.values():
                self._walk(child)

    def _enumerate_paths(self) -> list[Path]:
        paths = []

        def rec(node, nodes, decisions):
            nodes = nodes + (node.name,)
            if not node.children:
                active = np.array([self.column_node[i] in nodes for i in range(self.dim)])
                paths.append(Path(len(paths), nodes, dict(decisions), active))
                return
            for value, child in node.children.items():
                rec(child, nodes, {**decisions, node.choice: value})

        rec(self.root, (), {})
        return paths

    @property
    def dim(self) -> int:
        return len(self.columns)

    @property
    def is_conditional(self) -> bool:
        return len(self.paths) > 1

    def __len__(self):
        return self.dim

    def __repr__(self):
        return f"Space(dim={self.dim}, paths={len(self.paths)}, names={self.names})"

    @property
    def key(self) -> str:
        """A string that identifies the space's structure (equal spaces have equal keys)."""
        if not hasattr(self, "_key"):
            self._key = repr(self.to_dict())
        return self._key

    def __eq__(self, other):
        return isinstance(other, Space) and self.key == other.key

    def __hash__(self):
        return hash(self.key)

    # ----------------------------------------------------------------- validation
    def active_path(self, config: Mapping) -> Path:
        """The path a configuration follows (its decisions must be present and valid)."""
        node = self.root
        while node.children:
            if node.choice not in config:
                raise ValueError(f"missing decision {node.choice!r} (choices {list(node.children)!r})")
            dec = self.columns[self.col[node.choice]]
            err = dec.check(config[node.choice])
            if err:
                raise ValueError(f"decision {node.choice!r}: {err}")
            node = node.children[dec.choices[dec.index(config[node.choice])]]
        return self._path_by_leaf[node.name]

    def validate(self, config: Mapping) -> dict:
        """Check a configuration; return it normalized (python types) or raise a clear ValueError."""
        if not isinstance(config, Mapping):
            raise ValueError(f"a configuration must be a dict of {{name: value}}, got {type(config).__name__}")
        path = self.active_path(config)
        active = {self.names[i] for i in np.flatnonzero(path.active)}
        unknown = [k for k in config if k not in self.col]
        if unknown:
            raise ValueError(f"unknown parameter(s) {unknown}; the space has {self.names}")
        inactive = [k for k in config if k not in active]
        if inactive:
            where = ", ".join(f"{k}={v!r}" for k, v in path.decisions.items())
            raise ValueError(f"parameter(s) {inactive} are not active when {where}; "
                             f"active parameters are {sorted(active)}")
        missing = [n for n in self.names if n in active and n not in config]
        if missing:
            raise ValueError(f"missing active parameter(s) {missing}")
        out = {}
        for name in self.names:
            if name not in active:
                continue
            p = self.columns[self.col[name]]
            err = p.check(config[name])
            if err:
                raise ValueError(f"parameter {name!r}: {err}")
            v = config[name]
            out[name] = (p.choices[p.index(v)] if p.kind == CATEGORICAL
                         else int(v) if p.kind == INTEGER else float(v))
        return out

    # ----------------------------------------------------------------- encoding
    def encode(self, configs: Mapping | Iterable[Mapping]) -> np.ndarray:
        """Validated configs -> float array [N, D] (inactive columns hold the fill values)."""
        single = isinstance(configs, Mapping)
        rows = [self._encode_one(c) for c in ([configs] if single else configs)]
        X = np.array(rows, dtype=np.float64).reshape(len(rows), self.dim)
        return X[0] if single else X

    def _encode_one(self, config) -> list[float]:
        config = self.validate(config)
        row = self.fill_row()
        for name, value in config.items():
            row[self.col[name]] = self.columns[self.col[name]].to_unit(value)
        return list(row)

    def fill_row(self) -> np.ndarray:
        """The encoding of 'everything inactive'."""
        return np.where(self.kinds == CATEGORICAL, INACTIVE_CATEGORY, INACTIVE_NUMERIC).astype(np.float64)

    def path_row(self, path: Path) -> np.ndarray:
        """Fill row with a path's decision columns set: the fixed part of every point on that path."""
        row = self.fill_row()
        for name, value in path.decisions.items():
            row[self.col[name]] = self.columns[self.col[name]].index(value)
        return row

    def decode(self, x: np.ndarray) -> dict:
        """Encoded row -> configuration (follows the decision columns; ignores inactive columns)."""
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        if x.shape[0] != self.dim:
            raise ValueError(f"expected an encoded row of width {self.dim}, got {x.shape[0]}")
        return self.walk(lambda p: p.from_unit(x[self.col[p.name]]),
                         lambda node: self.columns[self.col[node.choice]].from_unit(x[self.col[node.choice]]))

    def walk(self, visit_param, visit_decision) -> dict:
        """A configuration built root to leaf: `visit_param(param)` gives each active parameter's value,
        `visit_decision(node)` each decision's (a key of node.children). Used by decode, the peers'
        adapters and anything else that chooses values down one path."""
        config, node = {}, self.root
        while True:
            for p in node.params:
                config[p.name] = visit_param(p)
            if not node.children:
                return config
            value = visit_decision(node)
            config[node.choice] = value
            node = node.children[value]

    def route(self, node_name: str) -> tuple[np.ndarray, np.ndarray]:
        """(decision columns [k] int64, category indices [k] float64) from the root down to a node: the
        encoded decisions a row must hold for its path to pass through that node (empty for the root)."""
        path = next((p for p in self.paths if node_name in p.nodes), None)
        if path is None:
            raise KeyError(f"no node named {node_name!r}")
        k = path.nodes.index(node_name)
        cols, idx = [], []
        for parent in path.nodes[:k]:
            choice = self.nodes[parent].choice
            cols.append(self.col[choice])
            idx.append(self.columns[self.col[choice]].index(path.decisions[choice]))
        return np.array(cols, dtype=np.int64), np.array(idx, dtype=np.float64)

    def path_index(self, X: np.ndarray) -> np.ndarray:
        """Path index of each encoded row [N] (for tree-aware models)."""
        X = np.atleast_2d(X)
        return np.array([self.active_path(self.decode(x)).index for x in X], dtype=np.int64)

    def active_mask(self, X: np.ndarray) -> np.ndarray:
        """Boolean [N, D]: which columns are active in each encoded row."""
        idx = self.path_index(X)
        return np.stack([self.paths[i].active for i in idx]) if len(idx) else np.zeros((0, self.dim), bool)

    def round_encoded(self, X: np.ndarray) -> np.ndarray:
        """Snap integer columns to their grid and categorical columns to an index (keeps fills)."""
        X = np.array(X, dtype=np.float64, copy=True)
        for j, p in enumerate(self.columns):
            if p.kind == INTEGER:
                span = p.high - p.low
                X[:, j] = np.clip(np.round(X[:, j] * span), 0, span) / span
            elif p.kind == CATEGORICAL:
                X[:, j] = np.where(X[:, j] < 0, INACTIVE_CATEGORY, np.clip(np.round(X[:, j]), 0, len(p.choices) - 1))
        return X

    # ----------------------------------------------------------------- sampling
    def _from_uniform(self, u: np.ndarray) -> dict:
        """Map one vector u in [0,1)^D to a configuration; decisions pick children uniformly."""
        return self.walk(lambda p: p.from_uniform(u[self.col[p.name]]),
                         lambda node: self.columns[self.col[node.choice]].from_uniform(u[self.col[node.choice]]))

    def sample(self, n: int, seed: int | np.random.Generator | None = 0) -> list[dict]:
        """n independent uniform configurations (uniform over children at each decision)."""
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        return [self._from_uniform(u) for u in rng.random((int(n), self.dim))]

    def sobol(self, n: int, seed: int | None = 0, cover_paths: bool = False) -> list[dict]:
        """n scrambled-Sobol configurations (space-filling per column, structure respected).

        With ``cover_paths`` the first min(n, #paths) points take one root-to-leaf path each (in a
        seeded random order), so a small design sees every leaf once; their parameters stay Sobol.
        """
        n = int(n)
        if n <= 0:
            return []
        m = max(0, math.ceil(math.log2(n)))
        U = qmc.Sobol(d=self.dim, scramble=True, rng=seed).random_base2(m)[:n]
        if cover_paths and len(self.paths) > 1:
            order = np.random.default_rng(seed).permutation(len(self.paths))
            for u, k in zip(U, order):
                for name, value in self.paths[k].decisions.items():
                    column = self.columns[self.col[name]]
                    u[self.col[name]] = (column.index(value) + 0.5) / len(column.choices)
        return [self._from_uniform(u) for u in U]

    # ----------------------------------------------------------------- serialization
    def to_dict(self) -> dict:
        def node_dict(node):
            return {"name": node.name, "params": [p.to_dict() for p in node.params], "choice": node.choice,
                    "children": [[k, node_dict(c)] for k, c in node.children.items()]}
        return node_dict(self.root)

    @classmethod
    def from_dict(cls, d: dict) -> "Space":
        def param(pd):
            t = pd["type"]
            if t == "real":
                return Real(pd["name"], pd["low"], pd["high"], pd.get("log", False))
            if t == "integer":
                return Integer(pd["name"], pd["low"], pd["high"])
            return Categorical(pd["name"], tuple(pd["choices"]))

        def node(nd):
            return Node(nd["name"], tuple(param(p) for p in nd["params"]), nd["choice"],
                        {k: node(c) for k, c in nd["children"]})
        return cls(node(d))
