"""Rows of the new-user probe (issue 20) handled at the boundary: a clear error before any evaluation is
spent, or a documented behaviour, and nothing told is lost."""

import json
import math

import jax.numpy as jnp
import numpy as np
import pytest

from optim import BayesOpt, minimize
from tests.conftest import FAST_OPTIMIZER, FAST_SAMPLER
from zoo import Categorical, Integer, Node, Real, Space


def _never_called(config):
    raise AssertionError("the objective must not be evaluated")


@pytest.mark.parametrize("build, error, message", [
    (lambda: Real("a", 0, math.inf), ValueError, "finite"),
    (lambda: Real("a", 1e-3, 1.0, log="no"), TypeError, "log must be True or False"),
    (lambda: Space(None), TypeError, "a Node or a list of parameters"),
    (lambda: Node("r", choice="c", children={"a": Node("a"), "b": 3}), TypeError, "child 'b' is a int, not a Node"),
    (lambda: Node("r", choice="c", children=[("a", Node("a")), ("b", Node("b"))]), TypeError, "must be a dict"),
    (lambda: Node("r", params=Real("x", 0, 1)), TypeError, "list or tuple of parameters"),
    (lambda: Categorical("c", (("a", 1), ("b", 2))), TypeError, "category values must be strings"),
    (lambda: Node("r", choice="c", children={("a",): Node("a"), ("b",): Node("b")}), TypeError, "category values"),
    (lambda: Categorical("c", (math.nan, math.nan)), ValueError, "not a finite number"),
    (lambda: Categorical("c", "abc"), TypeError, "sequence of values"),
    (lambda: Real("a", -1e308, 1e308), ValueError, "too wide"),  # high - low overflows
    (lambda: Real("a", 1.0, 1.0 + 1e-15), ValueError, "too narrow"),
    (lambda: Real("a", 8.6e-229, 8.600000000000001e-229, log=True), ValueError, "too narrow"),  # log span 0
    (lambda: Integer("k", 0, 2**60), ValueError, "2\\*\\*53"),
])
def test_a_space_that_cannot_be_saved_is_refused_at_construction(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_numpy_values_become_plain_python_and_the_space_saves_and_loads(tmp_path):
    space = Space(Node("root", params=(Real("x", np.float32(0.0), np.float32(2.5)), Integer("k", np.int64(1), np.int64(4))),
                       choice="c", children={np.int64(1): Node("one", params=(Categorical("f", (np.int64(3), np.str_("s"))),)),
                                             np.int64(2): Node("two")}))
    x, k = space.nodes["root"].params
    assert type(x.low) is float and type(k.high) is int and list(space.nodes["root"].children) == [1, 2]
    assert [type(v) for v in space.nodes["one"].params[0].choices] == [int, str]
    opt = BayesOpt(space, "random", seed=1, n_init=2)
    for _ in range(3):
        c = opt.ask()
        opt.tell(c, 1.0)
    opt.save(tmp_path / "run.json")
    loaded = BayesOpt.load(tmp_path / "run.json")
    assert loaded.space == space and loaded.history == opt.history


def test_a_numpy_string_is_the_category_it_spells():
    space = Space(Node("root", choice="opt", children={"sgd": Node("sgd"), "adam": Node("adam")}))
    assert space.validate({"opt": np.str_("sgd")}) == {"opt": "sgd"}


@pytest.mark.parametrize("kwargs, error, message", [
    ({"seed": -1}, ValueError, "non-negative"),
    ({"n_init": "2"}, TypeError, "n_init must be an integer"),
    ({"n_init": 2.7}, TypeError, "n_init must be an integer"),
    ({"surrogate": "bark", "acquisition": "logei", "optimizer": "mip"}, ValueError, "maximizes \\['ucb'\\] only"),
])
def test_bad_run_arguments_are_refused_before_any_evaluation(flat2, kwargs, error, message):
    kwargs = {"surrogate": "gp", **kwargs}
    with pytest.raises(error, match=message):
        minimize(_never_called, flat2, budget=4, **kwargs)
    with pytest.raises(error, match=message):
        BayesOpt(flat2, **kwargs)


def test_a_checkpoint_in_a_missing_folder_is_refused_before_any_evaluation(flat2, tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        minimize(_never_called, flat2, "random", budget=3, checkpoint=tmp_path / "missing" / "run.json")


def test_tell_with_a_value_and_an_error_is_refused_and_changes_nothing(flat2):
    opt = BayesOpt(flat2, "random", n_init=2)
    c = opt.ask()
    with pytest.raises(ValueError, match="not both"):
        opt.tell(c, 1.0, error="crashed")
    assert opt.history == [] and opt.pending == [c]


def test_a_jax_scalar_objective_is_a_value_and_a_bad_log_value_is_recorded_as_failed(flat2):
    res = minimize(lambda c: jnp.float64(c["x0"] + 1.0), flat2, "random", budget=3, n_init=2)
    assert [h["status"] for h in res.history] == ["ok"] * 3
    values = iter([2.0, -1.0, 3.0])  # the log transform cannot take -1: that evaluation fails, the run goes on
    with pytest.warns(UserWarning, match="recorded as failed"):
        res = minimize(lambda c: next(values), flat2, "random", budget=3, n_init=2, output_transform="log")
    assert [h["status"] for h in res.history] == ["ok", "error", "ok"] and res.best_value == 2.0
    assert "log" in res.history[1]["error"]


@pytest.mark.parametrize("content, message", [
    ("", "invalid or truncated JSON"),
    ('{"format": 1, "space"', "invalid or truncated JSON"),
    ("[1, 2]", "a JSON list"),
    ('{"format": 1}', "missing \\['acquisition'"),
])
def test_load_of_a_file_that_is_not_a_saved_run_names_the_file(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        BayesOpt.load(path)
    assert str(path) in str(info.value)


def test_load_with_an_unknown_optimizer_type_says_so(flat2, tmp_path):
    opt = BayesOpt(flat2, "gp", n_init=2)
    opt.save(tmp_path / "run.json")
    d = json.loads((tmp_path / "run.json").read_text())
    d["optimizer"] = {"type": "Nope"}
    (tmp_path / "run.json").write_text(json.dumps(d))
    with pytest.raises(ValueError, match="'Nope'"):
        BayesOpt.load(tmp_path / "run.json")


def test_a_space_without_parameters_is_refused():
    with pytest.raises(ValueError, match="nothing to optimize"):
        Space([])


def test_an_overflowing_value_is_kept_but_never_modelled_as_it_is(flat2):
    values = iter([1.0, 1e308, 2.0, 0.5, 3.0])
    res = minimize(lambda c: next(values), flat2, "gp", budget=5, n_init=4, sampler=FAST_SAMPLER,
                   optimizer=FAST_OPTIMIZER)
    assert [h["status"] for h in res.history] == ["ok", "out_of_range", "ok", "ok", "ok"]
    assert res.history[1]["value"] == 1e308 and "exceeds" in res.history[1]["error"]
    assert res.history[-1]["source"] == "bo" and math.isfinite(res.history[-1]["acq_value"])
    # the last fit saw the 3 ok values, and the failed point at the worst of them (on_failure="worst"), never 1e308
    assert len(res.posterior.y) == 4 and np.asarray(res.posterior.y)[3] == np.max(res.posterior.y)
    # after the run: the worst of the 4 ok values, 3.0
    assert res.optimizer.model_observations[-1] == {"config": res.history[1]["config"], "value": 3.0}


@pytest.mark.parametrize("damage, message", [
    (lambda d: d["history"][0].update(value="abc"), "damaged history"),
    (lambda d: d["history"][0].pop("status"), "damaged history"),
    (lambda d: d.update(pending={"config": {"x0": 7.0, "x1": 0.5}}), "damaged history or pending"),
])
def test_load_of_a_run_with_a_damaged_history_fails_at_load(flat2, tmp_path, damage, message):
    opt = BayesOpt(flat2, "random", n_init=2)
    for _ in range(2):
        c = opt.ask()
        opt.tell(c, 1.0)
    opt.save(tmp_path / "run.json")
    d = json.loads((tmp_path / "run.json").read_text())
    damage(d)
    (tmp_path / "run.json").write_text(json.dumps(d))
    with pytest.raises(ValueError, match=message):
        BayesOpt.load(tmp_path / "run.json")


def test_a_scip_worker_that_leaves_a_damaged_result_is_a_contained_fault(monkeypatch, tmp_path):
    """The worker exits 0 but its result file is not a pickle: the optimizer reports it and falls back."""
    import subprocess

    from optim import mip

    class Done:
        returncode, stderr = 0, b""

    def fake_run(cmd, **kwargs):
        with open(cmd[-1], "wb") as f:
            f.write(b"not a pickle")
        return Done()
    monkeypatch.setattr(subprocess, "run", fake_run)
    assert mip.run_worker({"x": 1}, timeout=5.0) == {"status": "crashed: unreadable result (UnpicklingError)"}


@pytest.mark.parametrize("fault", ["inf", "collapse", "raise"])
def test_a_yeo_johnson_fit_that_breaks_falls_back_to_standardized_values(monkeypatch, fault):
    """The model never sees a non-finite or constant transformed output: the standardized values are used."""
    from scipy import stats

    from optim.transforms import transform_outputs

    def broken(z):
        if fault == "raise":
            raise ValueError("no lambda")
        return (np.full_like(z, np.inf) if fault == "inf" else np.zeros_like(z)), -80.0
    y = np.array([1.0, 2.0, 4.0, 1e6])
    expected = (y - y.mean()) / y.std()
    assert not np.allclose(transform_outputs(y, "yeo-johnson"), expected)  # the fitted transform, normally
    monkeypatch.setattr(stats, "yeojohnson", broken)
    np.testing.assert_array_equal(transform_outputs(y, "yeo-johnson"), expected)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "5"])
def test_refit_every_must_be_a_positive_integer(bad):
    from optim import SamplerSettings
    with pytest.raises(ValueError, match="refit_every"):
        SamplerSettings(refit_every=bad)


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), True, "0.05", None])
def test_refit_growth_must_be_a_finite_non_negative_number(bad):
    from optim import SamplerSettings
    with pytest.raises(ValueError, match="refit_growth must be a finite number >= 0"):
        SamplerSettings(refit_growth=bad)
    assert SamplerSettings(refit_growth=0).refit_growth == 0 and SamplerSettings(refit_growth=0.05).refit_growth == 0.05


@pytest.mark.parametrize("bad", [-1, 2.5, True, "5"])
def test_restart_every_must_be_a_non_negative_integer_and_fall_on_fits(bad):
    from optim import SamplerSettings
    with pytest.raises(ValueError, match="restart_every must be an integer >= 0"):
        SamplerSettings(restart_every=bad)
    with pytest.raises(ValueError, match=r"restart_every \(6\) must be a multiple of refit_every \(4\)"):
        SamplerSettings(refit_every=4, restart_every=6)
    assert SamplerSettings(refit_every=4, restart_every=8).restarts_at(9)
    assert not SamplerSettings(refit_every=4, restart_every=8).restarts_at(5)
    assert not SamplerSettings(restart_every=0).restarts_at(9) and not SamplerSettings(restart_every=1).restarts_at(1)
