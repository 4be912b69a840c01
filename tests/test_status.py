"""`treezoo status` and optim.status: a run's report from its journal, timed by the stamps of asks and tells;
optim.frames: the history as a DataFrame."""

import json

import numpy as np
import pytest

from optim.cli import main
from optim.frames import history_frame
from optim.loop import BayesOpt, minimize
from optim.status import duration, run_status
from zoo import Categorical, Node, Real, Space

SPACE = Space([Real("x", 0.0, 1.0), Categorical("c", ("a", "b"))])


def campaign(path):
    """Six evaluations told (two failed, the best the fifth), two in flight; the journal stays open (locked)."""
    opt = BayesOpt(SPACE, surrogate="random", seed=0, n_init=2, journal=path)
    for k in range(6):
        config = opt.ask()
        if k == 2:
            opt.tell(config, error="timeout: no result 60 s after submission")
        elif k == 3:
            opt.tell(config, error="ValueError: the simulation diverged")
        else:
            opt.tell(config, -1.0 if k == 4 else config["x"])
    opt.ask(2)
    return opt


def test_duration_reads_as_a_person_would():
    assert [duration(s) for s in (0.4, 59, 61, 3599, 3600 + 4 * 60, 86400 * 3 + 7200)] == \
        ["0 s", "59 s", "1 min 01 s", "59 min 59 s", "1 h 04 min", "3 d 2 h"]


def test_the_report_counts_failures_by_reason_and_times_what_is_in_flight(tmp_path):
    opt = campaign(tmp_path / "run.journal")
    try:
        last_told = opt.history[-1]["told_at"]
        first_out = opt.in_flight[0]["asked_at"]
        lines = run_status(opt, now=first_out + 3 * 3600 + 120)  # three hours on: a hung evaluation stands out
    finally:
        opt.close()
    text = "\n".join(lines)
    assert "evaluations: 6 told, 2 failed (timeout x1, ValueError x1), 2 in flight" in text
    assert "best:        -1 (evaluation 5, source random)" in text
    assert "in flight:   evaluation 7 (random), out 3 h 02 min" in text and "evaluation 8 (random)" in text
    assert f"last result {duration(first_out + 3 * 3600 + 120 - last_told)} ago" in text


def test_a_run_saved_before_the_stamps_is_reported_without_times(tmp_path):
    path = tmp_path / "old.journal"
    campaign(path).close()
    events = [json.loads(line) for line in path.read_text().splitlines()]
    for e in events:  # as a journal written before 2026-12-07
        e.pop("asked_at", None)
        if e["event"] == "tell":
            e["record"].pop("asked_at", None)
            e["record"].pop("told_at", None)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    text = "\n".join(run_status(BayesOpt.load(path)))
    assert "asked before time stamps" in text and "no time stamps" in text and "6 told" in text


def test_treezoo_status_reads_a_journal_while_its_writer_holds_it(tmp_path, capsys):
    path = tmp_path / "run.journal"
    opt = campaign(path)
    try:
        assert main(["status", str(path)]) == 0
    finally:
        opt.close()
    out = capsys.readouterr().out
    assert out.startswith(str(path)) and "2 in flight" in out and "started" in out
    table = tmp_path / "run.csv"
    assert main(["status", str(path), "--csv", str(table)]) == 0
    lines = table.read_text().splitlines()
    assert lines[0].startswith("evaluation,config.x,config.c,value,status") and len(lines) == 1 + 6
    with pytest.raises(SystemExit) as stop:
        main(["status", str(tmp_path / "missing.journal")])
    assert stop.value.code == 2 and "no such file" in capsys.readouterr().err


def test_the_dataframe_has_a_column_per_parameter_missing_where_a_branch_is_inactive():
    pd = pytest.importorskip("pandas")
    space = Space(Node("root", params=(Real("tol", 0.0, 1.0),), choice="opt", children={
        "sgd": Node("sgd", params=(Real("lr", 0.0, 1.0),)), "adam": Node("adam", params=(Real("beta", 0.0, 1.0),))}))
    opt = BayesOpt(space, surrogate="random", seed=0, n_init=2)
    for _ in range(4):
        config = opt.ask()
        opt.tell(config, config["tol"])
    opt.tell({"tol": 0.5, "opt": "adam", "beta": 0.25}, error="diverged")  # told, never asked, and failed
    frame = opt.to_dataframe()
    assert list(frame.columns[:5]) == ["evaluation", "config.tol", "config.opt", "config.lr", "config.beta"]
    assert frame["evaluation"].tolist() == [1, 2, 3, 4, 5] and len(frame) == len(opt.history)
    for i, h in enumerate(opt.history):
        for name in space.names:  # each parameter where the configuration has it, missing where it has not
            cell = frame.at[i, f"config.{name}"]
            assert (cell == h["config"][name]) if name in h["config"] else pd.isna(cell)
    last = frame.iloc[-1]
    assert last["status"] == "error" and last["error"] == "diverged" and pd.isna(last["value"])
    assert pd.isna(last["asked_at"]) and last["told_at"].tzname() == "UTC"
    seconds = frame["told_at"].astype("int64").to_numpy() / 1e9  # the stamps, to the microsecond
    assert np.allclose(seconds, [h["told_at"] for h in opt.history], rtol=0, atol=1e-6)


def test_result_to_dataframe_keeps_the_space_order_and_the_values():
    result = minimize(lambda c: (c["x"] - 0.3) ** 2, SPACE, surrogate="random", budget=5, seed=0)
    frame = result.to_dataframe()
    assert list(frame.columns[1:3]) == ["config.x", "config.c"]
    assert frame["value"].tolist() == [h["value"] for h in result.history]
    assert history_frame(result.history).shape == frame.shape  # without the space: the names the configs use
