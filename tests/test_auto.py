"""`surrogate="auto"`: the rules of optim.auto, the default of BayesOpt / minimize / the CLI, and the record of
the pick in the run's journal."""

import json

import pytest

from optim import cli
from optim.auto import HIGH_DIMENSIONAL, choose_surrogate
from optim.bench.problems import get_problem
from optim.loop import BayesOpt, minimize
from optim.registry import available, make_surrogate, register_surrogate
from zoo import Categorical, Integer, Node, Real, Space


def _flat(n_real, n_integer=0, n_categorical=0):
    return Space([Real(f"x{i}", 0.0, 1.0) for i in range(n_real)]
                 + [Integer(f"k{i}", 0, 5) for i in range(n_integer)]
                 + [Categorical(f"c{i}", ("a", "b")) for i in range(n_categorical)])


@pytest.mark.parametrize("space, deterministic, expected", [
    (get_problem("jenatton_small").space, False, "addtree"),  # conditional
    (get_problem("conditional_1").space, True, "addtree"),
    (_flat(6), False, "gp"),  # low-dimensional
    (_flat(HIGH_DIMENSIONAL - 1), False, "gp"),
    (_flat(HIGH_DIMENSIONAL - 5, n_integer=5), False, "gp_saas"),  # 20 numeric columns
    (_flat(40), False, "gp_saas"),
    (_flat(40), True, "gp_saas"),  # declared exact: the SAAS GP's noiseless form
    (_flat(25, n_categorical=1), False, "gp"),  # mixed
    (Space(Node("root", choice="a", children={0: Node("l"), 1: Node("r")})), False, "gp"),  # decisions only
])
def test_auto_picks_by_the_documented_rules(space, deterministic, expected):
    choice = choose_surrogate(space, deterministic)
    assert choice.name == expected and choice.rule
    opt = BayesOpt(space, seed=0, deterministic=deterministic)  # auto is the default
    assert opt.auto_choice == choice and opt.surrogate_spec == expected and opt.surrogate.name.startswith(expected)
    assert make_surrogate("auto", space).name.startswith(choose_surrogate(space).name)


def test_auto_pairs_a_transform_on_conditional_spaces_that_a_named_one_overrides(tmp_path):
    space = get_problem("conditional_1").space
    choice = choose_surrogate(space)
    assert choice.output_transform == "yeo-johnson" and "Yeo-Johnson" in choice.rule
    assert BayesOpt(space, seed=0).output_transform == "yeo-johnson"
    assert BayesOpt(space, seed=0, output_transform="none").output_transform == "none"  # the user's word wins
    assert BayesOpt(space, "addtree", seed=0).output_transform == "none"  # a named surrogate: no pairing
    assert choose_surrogate(_flat(6)).output_transform == "none"
    assert BayesOpt(_flat(6), seed=0).output_transform == "none"
    path = tmp_path / "run.jsonl"  # the design only (budget = n_init): the pairing is journalled and restored
    res = minimize(lambda c: 1.0 + c["d0"], space, budget=2, n_init=2, checkpoint=path)
    assert res.optimizer.output_transform == "yeo-johnson"
    assert json.loads(path.read_text().splitlines()[0])["run"]["output_transform"] == "yeo-johnson"
    loaded = BayesOpt.load(path)
    assert loaded.auto_choice == res.optimizer.auto_choice and loaded.output_transform == "yeo-johnson"
    with BayesOpt(space, n_init=2, journal=path) as resumed:  # auto again: the same run
        assert len(resumed.history) == 2
    untransformed = tmp_path / "none.jsonl"  # a run that named "none" resumes as itself when the transform is unset
    minimize(lambda c: 1.0 + c["d0"], space, budget=2, n_init=2, checkpoint=untransformed, output_transform="none")
    with BayesOpt(space, n_init=2, journal=untransformed) as resumed:
        assert resumed.output_transform == "none" and len(resumed.history) == 2
    with pytest.raises(ValueError, match="differs in output_transform"):
        BayesOpt(space, n_init=2, journal=untransformed, output_transform="yeo-johnson")


def test_auto_is_listed_and_a_named_surrogate_is_taken_as_named():
    assert available()[0] == "auto" and "gp" in available()
    opt = BayesOpt(_flat(40), "gp")
    assert opt.auto_choice is None and opt.surrogate_spec == "gp" and "auto" not in opt.settings_dict()
    with pytest.raises(TypeError, match="zoo.Space"):
        choose_surrogate({"x": (0, 1)})
    with pytest.raises(ValueError, match="reserved"):
        register_surrogate("auto", lambda space: None)


def test_the_pick_is_printed_and_kept_in_the_journal_and_a_resume_keeps_it(tmp_path, capsys):
    space, path = _flat(HIGH_DIMENSIONAL), tmp_path / "run.jsonl"
    # the initial design only (budget = n_init): no model is fitted
    res = minimize(lambda c: sum(c.values()), space, budget=3, n_init=3, progress=True, checkpoint=path)
    assert "surrogate auto -> gp_saas" in capsys.readouterr().err
    assert res.optimizer.auto_choice.name == "gp_saas"
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])["run"]
    assert header["surrogate"] == "gp_saas" and "Star-20" in header["auto"]
    loaded = BayesOpt.load(path)
    assert loaded.auto_choice == res.optimizer.auto_choice and len(loaded.history) == 3
    with BayesOpt(space, "gp_saas", n_init=3, journal=path) as named:  # the pick, named, resumes the same run
        assert len(named.history) == 3
    with BayesOpt(space, n_init=3, journal=path) as again:  # auto again: the same pick, the same run
        assert len(again.history) == 3
    with pytest.raises(ValueError, match="differs in surrogate"):
        BayesOpt(space, "gp", n_init=3, journal=path)
    # a run that auto began under older rules (which picked `additive` here) resumes under its pick, named; auto
    # alone says so instead of a bare "differs"
    old = tmp_path / "old.jsonl"
    minimize(lambda c: sum(c.values()), space, "additive", budget=3, n_init=3, checkpoint=old)
    first, *rest = old.read_text().splitlines()
    first = json.loads(first)
    first["run"]["auto"] = "the rule of an older version"
    old.write_text("\n".join([json.dumps(first)] + rest) + "\n")
    with pytest.raises(ValueError, match="picked 'additive'.*auto now picks 'gp_saas'.*surrogate='additive'"):
        BayesOpt(space, n_init=3, journal=old)
    with BayesOpt(space, "additive", n_init=3, journal=old) as named:
        assert len(named.history) == 3 and named.surrogate_spec == "additive"


def test_the_cli_runs_auto_by_default_and_says_what_it_picked(capsys):
    assert cli.main(["run", "--problem", "hartmann6_aug20", "--budget", "3", "--n-init", "3", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "surrogate=gp_saas (auto)" in out and "best value:" in out
