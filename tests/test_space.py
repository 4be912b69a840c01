import numpy as np
import pytest

from optim.bench.problems import jenatton_large, jenatton_small
from zoo import Categorical, Integer, Node, Real, Space
from zoo.space import CATEGORICAL, INACTIVE_CATEGORY, INACTIVE_NUMERIC


def test_flat_space_shorthand_and_columns():
    sp = Space([Real("a", 0, 1), Integer("b", 2, 5), Categorical("c", ("x", "y"))])
    assert sp.dim == 3 and len(sp.paths) == 1 and not sp.is_conditional
    assert list(sp.kinds) == [0, 1, 2]


@pytest.mark.parametrize("make", [lambda: jenatton_large().space, lambda: jenatton_small().space])
def test_encode_decode_round_trip_on_random_conditional_configs(make):
    sp = make()
    for config in sp.sample(200, seed=1) + sp.sobol(64, seed=2):
        x = sp.encode(config)
        back = sp.decode(x)
        assert back.keys() == config.keys()
        for k, v in config.items():
            assert back[k] == pytest.approx(v, abs=1e-12)
        assert np.array_equal(sp.encode(back), x)


def test_round_trip_mixed_space(mixed_space):
    for config in mixed_space.sample(300, seed=3):
        back = mixed_space.decode(mixed_space.encode(config))
        assert back.keys() == config.keys()
        for k, v in config.items():
            if isinstance(v, float):
                assert back[k] == pytest.approx(v, rel=1e-12)
            else:
                assert back[k] == v and type(back[k]) is type(v)


def test_inactive_columns_hold_fill_values(mixed_space):
    config = {"layers": 2, "tol": 0.3, "kind": "adam", "act": "tanh"}
    x = mixed_space.encode(config)
    active = mixed_space.active_mask(x[None])[0]
    for j, name in enumerate(mixed_space.names):
        if not active[j]:
            fill = INACTIVE_CATEGORY if mixed_space.kinds[j] == CATEGORICAL else INACTIVE_NUMERIC
            assert x[j] == fill, name
    assert mixed_space.path_index(x[None])[0] == 1


def test_log_scale_encoding(mixed_space):
    x = mixed_space.encode({"layers": 0, "tol": 0.0, "kind": "sgd", "lr": 1e-3, "units": 1})
    assert x[mixed_space.col["lr"]] == pytest.approx(0.5)


@pytest.mark.parametrize("config, message", [
    ({"layers": 1, "tol": 0.5, "kind": "adam", "act": "relu", "bogus": 1}, "unknown parameter"),
    ({"layers": 1, "tol": 0.5, "kind": "adam"}, "missing active parameter"),
    ({"layers": 1, "tol": 0.5, "kind": "adam", "act": "relu", "lr": 0.01}, "not active"),
    ({"layers": 9, "tol": 0.5, "kind": "adam", "act": "relu"}, "outside"),
    ({"layers": 1.5, "tol": 0.5, "kind": "adam", "act": "relu"}, "expected an integer"),
    ({"layers": 1, "tol": "big", "kind": "adam", "act": "relu"}, "expected a finite number"),
    ({"layers": 1, "tol": float("nan"), "kind": "adam", "act": "relu"}, "expected a finite number"),
    ({"layers": 1, "tol": 0.5, "kind": "adam", "act": "gelu"}, "not one of"),
    ({"layers": 1, "tol": 0.5, "kind": "rmsprop"}, "decision 'kind'"),
    ({"layers": 1, "tol": 0.5}, "missing decision"),
])
def test_validation_errors_are_clear(mixed_space, config, message):
    with pytest.raises(ValueError, match=message):
        mixed_space.validate(config)


def test_validate_rejects_non_dict_and_bool_for_integer(mixed_space):
    with pytest.raises(ValueError, match="dict"):
        mixed_space.validate([1, 2])
    with pytest.raises(ValueError, match="integer"):
        mixed_space.validate({"layers": True, "tol": 0.5, "kind": "adam", "act": "relu"})


def test_bad_space_definitions():
    with pytest.raises(ValueError, match="unique"):
        Space([Real("a", 0, 1), Real("a", 0, 2)])
    with pytest.raises(ValueError, match="low < high"):
        Real("a", 1, 1)
    with pytest.raises(ValueError, match="log scale"):
        Real("a", 0, 1, log=True)
    with pytest.raises(ValueError, match="at least 2"):
        Categorical("c", ("x",))
    with pytest.raises(ValueError, match="no `choice`"):
        Node("n", children={0: Node("a"), 1: Node("b")})


def test_sampling_respects_structure_and_is_uniform_over_children(mixed_space):
    configs = mixed_space.sample(3000, seed=0)
    for c in configs[:200]:
        mixed_space.validate(c)
    counts = np.bincount([["sgd", "adam", "lbfgs"].index(c["kind"]) for c in configs], minlength=3)
    # multinomial(3000, 1/3): sd of each count = sqrt(3000 * 1/3 * 2/3) = 25.8; allow 4 sd
    assert np.all(np.abs(counts - 1000) < 4 * 25.8)


def test_sobol_is_reproducible_and_covers_paths():
    sp = jenatton_small().space
    a, b = sp.sobol(16, seed=5), sp.sobol(16, seed=5)
    assert a == b and a != sp.sobol(16, seed=6)
    paths = {sp.active_path(c).index for c in a}
    assert paths == {0, 1, 2, 3}


def test_round_encoded_snaps_integers_and_categories(mixed_space):
    X = np.tile(mixed_space.fill_row(), (2, 1))
    X[:, mixed_space.col["layers"]] = [0.37, 0.9]
    X[:, mixed_space.col["kind"]] = [0.6, 1.7]
    R = mixed_space.round_encoded(X)
    assert list(R[:, mixed_space.col["layers"]]) == [0.25, 1.0]
    assert list(R[:, mixed_space.col["kind"]]) == [1.0, 2.0]


def test_serialization_round_trip(mixed_space):
    again = Space.from_dict(mixed_space.to_dict())
    assert again == mixed_space and hash(again) == hash(mixed_space)
    assert again.names == mixed_space.names


def test_log_reals_decode_inside_their_bounds_at_the_edges():
    """exp(log(high)) may round above high; decoded edge values must still validate."""
    from zoo.space import Real
    for low, high in [(1e-5, 1e-1), (1e-5, 1e-2), (1e-6, 1e-1), (0.3, 7.0)]:
        p = Real("a", low, high, log=True)
        assert low <= p.from_unit(0.0) <= high and low <= p.from_unit(1.0) <= high
        assert p.check(p.from_unit(1.0)) is None and p.check(p.from_unit(0.0)) is None


def test_route_gives_the_decisions_that_lead_to_a_node():
    """Space.route: the encoded decisions a row must hold for its path to pass through a node; a row is on
    the route of every node of its own path and of no node off it."""
    space = jenatton_small().space
    cols, idx = space.route("root")
    assert cols.size == 0 and idx.size == 0
    cols, idx = space.route("x1=1,x3=0")
    assert [space.names[c] for c in cols] == ["x1", "x3"] and idx.tolist() == [1.0, 0.0]
    X = space.encode(space.sample(40, seed=1))
    for x in X:
        path = space.paths[int(space.path_index(x[None])[0])]
        for name in space.nodes:
            cols, idx = space.route(name)
            assert bool(np.all(x[cols] == idx)) == (name in path.nodes)
    with pytest.raises(KeyError, match="no node"):
        space.route("nowhere")


def test_walk_builds_a_valid_configuration_from_visitor_choices(mixed_space):
    """Space.walk visits the parameters of every node on one path and follows the chosen decisions."""
    seen = []
    config = mixed_space.walk(lambda p: (seen.append(p.name), p.from_uniform(0.25))[1],
                              lambda node: list(node.children)[-1])
    assert config["kind"] == "lbfgs" and set(seen) == {"layers", "tol", "alpha", "flag"}
    assert mixed_space.validate(config) == config
