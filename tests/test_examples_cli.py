"""Every example runs (fast mode), the `treezoo` CLI runs, and the bench commands write and read results."""

import json
import runpy
from pathlib import Path

import pytest

from optim import cli
from optim.bench import runner as bench

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("name", ["quickstart.py", "inspect_posterior.py", "custom_surrogate.py"])
def test_example_runs(name, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("TREEZOO_EXAMPLES_FAST", "1")
    monkeypatch.setenv("TREEZOO_EXAMPLES_OUT", str(tmp_path))
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    out = capsys.readouterr().out
    if name == "quickstart.py":
        assert "Result(best_value=" in out and "regret" in out
    if name == "inspect_posterior.py":
        assert "r_hat" in out and (tmp_path / "gp_trace.png").stat().st_size > 1000
    if name == "custom_surrogate.py":
        assert "posterior inclusion probability" in out and "acceptance rate" in out


def test_cli_run_and_listings(capsys, tmp_path):
    save = tmp_path / "run.json"
    # the initial design only: the options reach the run and its save (BO steps: the quickstart and trace runs)
    assert cli.main(["run", "--problem", "jenatton_small", "--surrogate", "gp", "--budget", "5", "--n-init", "5",
                     "--quiet", "--save", str(save), "--output-transform", "log", "--deterministic"]) == 0
    out = capsys.readouterr().out
    assert "best value:" in out and "regret:" in out and "best config:" in out
    saved = json.loads(save.read_text())
    assert len(saved["history"]) == 5 and saved["output_transform"] == "log" and saved["deterministic"]
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
