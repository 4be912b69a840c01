"""Property-based checks (Hypothesis) of the space and the ask/tell record: random spaces (flat and
conditional, every parameter type, odd category values) and random configurations round-trip through
validate, encode/decode, JSON save/load; a fuzz of `tell` with bad values and bad configurations gets a
clear exception and leaves the history as it was (issue 20)."""

import copy
import json
import math

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, reject, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from optim import BayesOpt  # noqa: E402
from zoo import Categorical, Integer, Node, Real, Space  # noqa: E402
from zoo.space import CATEGORICAL, INTEGER  # noqa: E402

# derandomize: the same examples on every run (the suite's fixed-seed rule); no deadline: the first
# example pays imports
PROPERTY = settings(max_examples=60, derandomize=True, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _value_key(v):
    """When two category values count as the same one (1 == 1.0, but True is not 1 and '1' is not 1)."""
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, (int, float)):
        return ("num", float(v))
    return (type(v).__name__, v)


CATEGORY_VALUE = st.one_of(
    st.text(max_size=6),  # unicode, the empty string, whitespace
    st.integers(-(2**70), 2**70),  # beyond int64 too
    st.floats(allow_nan=False, allow_infinity=False),  # -0.0, subnormals, 1e308
    st.booleans(),
    st.none(),
)
CHOICES = st.lists(CATEGORY_VALUE, min_size=2, max_size=4, unique_by=_value_key)
FINITE = st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False)


@st.composite
def real_params(draw, name):
    """Any bounds, including ones the space refuses (too narrow or too wide for float64): those are skipped."""
    log = draw(st.booleans())
    low = draw(st.floats(1e-300, 1e300) if log else FINITE)
    high = draw(st.one_of(st.floats(low, 1e300 if log else 1e300), st.just(np.nextafter(low, np.inf) * 1.0),
                          st.just(low + max(1.0, abs(low)))))
    try:
        return Real(name, low, high, log=log)
    except ValueError as exc:
        assert "double precision" in str(exc) or "low < high" in str(exc)
        reject()


@st.composite
def params(draw, name):
    kind = draw(st.sampled_from(["real", "integer", "categorical"]))
    if kind == "real":
        return draw(real_params(name))
    if kind == "integer":
        low = draw(st.integers(-(2**52), 2**52))
        return Integer(name, low, draw(st.integers(low + 1, low + 2**52)))
    return Categorical(name, tuple(draw(CHOICES)))


@st.composite
def spaces(draw):
    """A flat space or a conditional tree (depth <= 3, 2-3 children, parameters on any vertex)."""
    counter = iter(range(10_000))

    def node(depth):
        k = next(counter)
        ps = tuple(draw(params(f"p{k}_{i}")) for i in range(draw(st.integers(0, 2))))
        if depth == 0 or not draw(st.booleans()):
            return Node(f"n{k}", ps)
        keys = draw(st.lists(CATEGORY_VALUE, min_size=2, max_size=3, unique_by=_value_key))
        return Node(f"n{k}", ps, choice=f"d{k}", children={key: node(depth - 1) for key in keys})

    if draw(st.booleans()):
        return Space([draw(params(f"x{i}")) for i in range(draw(st.integers(1, 4)))])
    root = node(3)
    if not root.children and not root.params:
        root = Node(root.name, (Real("x", 0.0, 1.0),))
    return Space(root)


@st.composite
def space_and_configs(draw):
    """A space and 1-4 valid configurations chosen down random paths with random values."""
    space = draw(spaces())

    def value(p):
        if p.kind == CATEGORICAL:
            return draw(st.sampled_from(p.choices))
        if p.kind == INTEGER:
            return draw(st.integers(p.low, p.high))
        return draw(st.floats(p.low, p.high))

    configs = [space.walk(value, lambda node: draw(st.sampled_from(list(node.children))))
               for _ in range(draw(st.integers(1, 4)))]
    return space, configs


EPS = np.finfo(np.float64).eps


def _same_config(space, a, b):
    """Equal names; categories and integers exactly; reals to the rounding of the unit encoding: u = (v -
    low) / R and low + u R each round twice (R the span), so |error| <= 4 eps (R + max|bound|), on the log
    scale for log parameters (plus 2 eps for log and exp themselves)."""
    assert set(a) == set(b)
    for name, v in a.items():
        p = space.columns[space.col[name]]
        if p.kind == CATEGORICAL:
            assert _value_key(b[name]) == _value_key(v) and type(b[name]) is type(v)
        elif p.kind == INTEGER:
            assert b[name] == v and type(b[name]) is int
        elif p.log:
            lo, hi = math.log(p.low), math.log(p.high)
            assert abs(math.log(b[name]) - math.log(v)) <= 4 * EPS * (hi - lo + max(abs(lo), abs(hi))) + 2 * EPS
        else:
            assert abs(b[name] - v) <= 4 * EPS * (p.high - p.low + max(abs(p.low), abs(p.high)))


@PROPERTY
@given(spaces())
def test_every_space_that_builds_saves_and_loads_as_json(space):
    loaded = Space.from_dict(json.loads(json.dumps(space.to_dict(), allow_nan=False)))
    assert loaded == space and loaded.names == space.names and len(loaded.paths) == len(space.paths)


@PROPERTY
@given(space_and_configs())
def test_configurations_round_trip_through_validate_encode_and_decode(case):
    space, configs = case
    for config in configs:
        valid = space.validate(config)
        assert space.validate(valid) == valid  # normalizing is idempotent
        row = space.encode(config)
        assert row.shape == (space.dim,) and np.all(np.isfinite(row))
        decoded = space.decode(row)
        _same_config(space, valid, decoded)
        assert space.validate(decoded) == decoded  # a decoded row is always a valid configuration
    for sampled in space.sample(3, seed=0):  # the space's own draws are valid too
        assert space.validate(sampled) == sampled


@PROPERTY
@given(space_and_configs(), st.lists(st.floats(-1e100, 1e100), min_size=4, max_size=4))
def test_a_run_saves_and_loads_with_its_whole_history(tmp_path_factory, case, values):
    space, configs = case
    opt = BayesOpt(space, "random", seed=0, n_init=1)
    for config, value in zip(configs, values):
        opt.tell(config, value)
    opt.tell(configs[0], error="crashed")
    path = tmp_path_factory.mktemp("run") / "run.json"
    opt.save(path)
    loaded = BayesOpt.load(path)
    assert loaded.space == space and loaded.history == opt.history


BAD_VALUES = st.one_of(
    st.text(max_size=4), st.booleans(), st.none(), st.binary(max_size=3),
    st.lists(st.floats(), min_size=2, max_size=3),
    st.lists(st.floats(), min_size=2, max_size=3).map(np.array),
    st.complex_numbers(allow_nan=False).filter(lambda z: z.imag != 0),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.just(object()),
)


@PROPERTY
@given(space_and_configs(), BAD_VALUES)
def test_tell_with_a_bad_value_raises_and_changes_nothing(case, bad):
    space, configs = case
    opt = BayesOpt(space, "random", seed=0, n_init=1)
    opt.tell(configs[0], 1.0)
    before = copy.deepcopy(opt.history)
    with pytest.raises((TypeError, ValueError), match="objective value|tell"):
        opt.tell(configs[-1], bad)
    assert opt.history == before


@st.composite
def broken_configs(draw, space, config):
    """A configuration spoiled one way: a missing, unknown or wrong-typed entry, or not a dict at all."""
    how = draw(st.sampled_from(["drop", "unknown", "retype", "not_a_dict"]))
    broken = dict(config)
    if how == "drop" and broken:
        broken.pop(draw(st.sampled_from(sorted(broken))))
    elif how == "retype" and broken:
        name = draw(st.sampled_from(sorted(broken)))
        p = space.columns[space.col[name]]
        bad = (st.one_of(st.text(max_size=3), st.just(math.nan), st.just([1])) if p.kind != CATEGORICAL
               else st.just(("not", "a", "choice")))
        broken[name] = draw(bad)
    elif how == "not_a_dict":
        return draw(st.sampled_from([None, list(config.items()), "config"]))
    else:
        broken["no_such_parameter"] = 0.5
    return broken


@PROPERTY
@given(st.data())
def test_tell_with_a_bad_configuration_raises_and_changes_nothing(data):
    space, configs = data.draw(space_and_configs())
    opt = BayesOpt(space, "random", seed=0, n_init=1)
    opt.tell(configs[0], 1.0)
    before = copy.deepcopy(opt.history)
    with pytest.raises(ValueError):
        opt.tell(data.draw(broken_configs(space, configs[-1])), 2.0)
    assert opt.history == before
