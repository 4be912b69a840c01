"""Every example runs (fast mode), the `treezoo` CLI runs, and the bench commands write and read results."""

import json
import re
import runpy
from pathlib import Path

import pytest

from optim import cli
from optim.bench import runner as bench

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


# slow (suite time): the examples whose parts have default tests of their own (custom discrete sites in
# test_discrete_moves, the additive model and message passing in test_additive, the treed GP in test_treed,
# simulation-based calibration and its plot in test_calibration)
SLOW_EXAMPLES = {"custom_surrogate.py", "additive_forest.py", "treed_partition.py", "check_prior.py"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_EXAMPLES else n for n in
                                  ["quickstart.py", "inspect_posterior.py", "custom_surrogate.py", "additive_forest.py",
                                   "treed_partition.py", "compare_models.py", "check_prior.py", "campaign.py"]])
@pytest.mark.arviz  # CI runs it again against ArviZ 1.x
def test_example_runs(name, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("TREEZOO_EXAMPLES_FAST", "1")
    monkeypatch.setenv("TREEZOO_EXAMPLES_OUT", str(tmp_path))
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    out = capsys.readouterr().out
    if name == "quickstart.py":
        assert "Result(best_value=" in out and "regret" in out
        assert (tmp_path / "quickstart.png").stat().st_size > 1000
    if name == "inspect_posterior.py":
        assert "r_hat" in out and (tmp_path / "gp_trace.png").stat().st_size > 1000
        assert (tmp_path / "gp_rank.png").stat().st_size > 1000
    if name == "additive_forest.py":
        assert "edge-inclusion probabilities" in out and (tmp_path / "additive_edges.png").stat().st_size > 1000
    if name == "check_prior.py":  # too few simulations for a verdict in fast mode: test_calibration.py checks those
        assert "SBC of gp" in out and "SBC of tempered_gp" in out
        assert (tmp_path / "sbc_gp.png").stat().st_size > 1000
    if name == "compare_models.py":
        assert "elpd_loo" in out and "PSIS-LOO prefers" in out
    if name == "treed_partition.py":
        assert "leaf_lengthscale" in out and (tmp_path / "treed_partition.png").stat().st_size > 1000
    if name == "campaign.py":  # stopped, resumed from its journal to the budget, reported, tabled and plotted
        assert "stopped after 5 evaluations" in out and "evaluations: 8 told" in out and "config.optimizer" in out
        assert len((tmp_path / "campaign.csv").read_text().splitlines()) == 1 + 8
        assert (tmp_path / "campaign.png").stat().st_size > 1000
    if name == "custom_surrogate.py":
        assert "posterior inclusion probability" in out and "acceptance rate" in out


def test_cli_run_and_listings(capsys, tmp_path):
    save = tmp_path / "run.jsonl"
    # the initial design only: the options reach the run and its journal (BO steps: the quickstart and trace runs)
    assert cli.main(["run", "--problem", "jenatton_small", "--surrogate", "gp", "--budget", "5", "--n-init", "5",
                     "--quiet", "--save", str(save), "--output-transform", "log", "--deterministic"]) == 0
    out = capsys.readouterr().out
    assert "best value:" in out and "regret:" in out and "best config:" in out
    header, *events = [json.loads(line) for line in save.read_text().splitlines()]
    saved = header["run"]
    assert sum(e["event"] == "tell" for e in events) == 5 and saved["output_transform"] == "log" and saved["deterministic"]
    assert saved["optimizer"]["name"] == "lbfgs"
    assert cli.main(["problems"]) == 0 and "hartmann6" in capsys.readouterr().out
    assert cli.main(["surrogates"]) == 0 and "random" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["run", "--problem", "no_such_problem"])
    with pytest.raises(SystemExit):  # random search has no noise model to switch off
        cli.main(["run", "--surrogate", "random", "--deterministic"])


def test_bench_run_resume_and_table(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    args = ["run", "--problems", "exp2d", "--methods", "random", "--seeds", "2", "--budget", "5", "--n-init", "3",
            "--out", str(out)]
    assert bench.main(args) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 2 and all(r["status"] == "ok" and len(r["values"]) == 5 for r in records)
    assert bench.main(args) == 0  # resume: nothing left to run
    assert "2 already in" in capsys.readouterr().out and len(out.read_text().splitlines()) == 2
    assert bench.main(["table", str(out), "--at", "3", "5"]) == 0
    table = capsys.readouterr().out
    assert "| exp2d | random | 2 |" in table


@pytest.mark.parametrize("args, message", [
    (["--budget", "-3"], "--budget: must be >= 1, got -3"),
    (["--budget", "0"], "--budget: must be >= 1, got 0"),
    (["--n-init", "0"], "--n-init: must be >= 1, got 0"),
    (["--seed", "-1"], "--seed: must be >= 0, got -1"),
    (["--noise", "-1"], "--noise: must be a finite number >= 0"),
    (["--noise", "nan"], "--noise: must be a finite number >= 0"),
    (["--budget", "3", "--n-init", "5"], "--n-init 5 exceeds --budget 3"),
    (["--save", "/no/such/folder/run.json"], "does not exist"),
    (["--workers", "0"], "--workers: must be >= 1, got 0"),
    (["--chain-workers", "-1"], "--chain-workers: must be >= 0, got -1"),
    (["--timeout", "0"], "--timeout: must be a finite number > 0"),
    (["--problem", "hartmann6", "--surrogate", "additive", "--acquisition", "pi"],
     "maximizes \\['ucb', 'logei', 'ei'\\] only"),
    (["--acquisition", "logei,xi=-1"], "--acquisition: xi must be a finite number >= 0"),
    (["--acquisition", "ucb,xi=1"], "'ucb' takes 'ucb,beta=<number>'"),
])
def test_cli_user_mistakes_are_one_line_errors_with_exit_2(args, message, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["run", "--quiet", *args])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and re.search(message, err.strip().splitlines()[-1]), err


def test_cli_run_where_every_evaluation_fails_says_so_and_exits_1(monkeypatch, capsys):
    from optim.bench import problems
    from optim.bench.problems.base import Problem

    space = problems.get_problem("exp2d").space

    def broken(name, noise_std=0.0, seed=0):
        return Problem("broken", space, lambda c: 1 / 0)
    monkeypatch.setattr(problems, "get_problem", broken)
    with pytest.warns(UserWarning, match="ZeroDivisionError"):
        assert cli.main(["run", "--problem", "exp2d", "--surrogate", "random", "--budget", "2", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "every evaluation failed (2 of 2)" in err and "ZeroDivisionError" in err
