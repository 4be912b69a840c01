"""The convergence plot (optim.plots), `Result.plot` and `treezoo plot` / `treezoo run --plot`."""

import math

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from optim.cli import main  # noqa: E402
from optim.loop import BayesOpt, Result  # noqa: E402
from optim.plots import best_so_far, plot_history, in_flight_counts, told_seconds  # noqa: E402
from zoo import Real, Space  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def record(value, source="bo", status="ok", fit=0.0, acq=0.0):
    return {"config": {"x": 0.0}, "value": value if status == "ok" else None, "status": status,
            "error": None if status == "ok" else "boom", "source": source, "fit_seconds": fit, "acq_seconds": acq}


HISTORY = [record(None, "init", "error"), record(3.0, "init"), record(5.0, "init"), record(1.5, "bo", fit=0.4, acq=0.1),
           record(None, "bo", "nonfinite"), record(2.0, "random:duplicate"), record(0.5, "user"), record(0.75, "bo")]


def by_label(items, label):
    found = [a for a in items if a.get_label() == label]
    assert len(found) == 1, [a.get_label() for a in items]
    return found[0]


def test_best_so_far_skips_failures_and_is_nan_until_a_success():
    best = best_so_far(HISTORY)
    np.testing.assert_array_equal(best, [np.nan, 3.0, 3.0, 1.5, 1.5, 1.5, 0.5, 0.5])


def test_plot_draws_every_evaluation_by_source_the_best_line_and_the_failures():
    fig = plot_history(HISTORY)
    ax = fig.axes[0]
    line = by_label(ax.lines, "best so far")
    np.testing.assert_array_equal(line.get_xdata(), np.arange(1, 9))
    np.testing.assert_array_equal(line.get_ydata(), best_so_far(HISTORY))
    points = {c.get_label(): c.get_offsets() for c in ax.collections}
    np.testing.assert_array_equal(points["initial design"], [[2, 3.0], [3, 5.0]])
    np.testing.assert_array_equal(points["model's proposal"], [[4, 1.5], [8, 0.75]])
    np.testing.assert_array_equal(points["random (fallback)"], [[6, 2.0]])
    np.testing.assert_array_equal(points["told by you"], [[7, 0.5]])
    np.testing.assert_array_equal(points["failed (2)"][:, 0], [1, 5])  # x only: y is near the top of the axes
    assert "best 0.5" in ax.get_title() and ax.get_yscale() == "linear"


def test_with_an_optimum_the_regret_is_drawn_on_a_log_scale_and_zero_regret_at_a_floor():
    history = [record(2.0, "init"), record(1.25, "bo"), record(1.0, "bo")]
    ax = plot_history(history, optimum=1.0).axes[0]
    assert ax.get_yscale() == "log"
    # regrets 1.0, 0.25, 0.0: the zero is drawn at the least positive regret / 10
    np.testing.assert_allclose(by_label(ax.lines, "best so far").get_ydata(), [1.0, 0.25, 0.025])
    # a value a rounding error below the optimum counts as regret 0, not as a wrong optimum
    ax = plot_history([record(2.0), record(1.0 - 1e-12)], optimum=1.0).axes[0]
    np.testing.assert_allclose(by_label(ax.lines, "best so far").get_ydata(), [1.0, 0.1])


def test_the_seconds_panel_stacks_fit_and_acquisition_seconds():
    fig = plot_history(HISTORY, seconds=True)
    assert len(fig.axes) == 2
    bars = fig.axes[1].containers
    fit, acq = (np.array([p.get_height() for p in c]) for c in bars)
    np.testing.assert_allclose(fit[3], 0.4)
    np.testing.assert_allclose(acq[3], 0.1)
    assert [p.get_y() for p in bars[1]][3] == pytest.approx(0.4)  # acquisition on top of the fit


def test_bad_input_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="no evaluations"):
        plot_history([])
    with pytest.raises(ValueError, match="below the stated optimum"):
        plot_history(HISTORY, optimum=1.0)
    with pytest.raises(ValueError, match="finite"):
        plot_history(HISTORY, optimum=math.nan)
    from matplotlib.figure import Figure
    with pytest.raises(ValueError, match="second panel"):
        plot_history(HISTORY, seconds=True, ax=Figure().add_subplot())


def stamped(value, source, asked, told):
    return dict(record(value, source), **({} if asked is None else {"asked_at": asked}), told_at=told)


# two workers: design points asked together, a user's point told between, each slot refilled as it frees
TIMED = [stamped(3.0, "init", 100.0, 101.0), stamped(2.0, "init", 100.0, 102.0), stamped(1.0, "user", None, 103.0),
         stamped(1.5, "bo", 101.0, 104.0), stamped(0.5, "bo", 102.0, 105.0)]


def test_by_wall_clock_each_evaluation_sits_where_it_was_told_and_the_panel_counts_those_in_flight():
    np.testing.assert_array_equal(told_seconds(TIMED), [1.0, 2.0, 3.0, 4.0, 5.0])  # from the first ask, 100.0
    times, counts = in_flight_counts(TIMED)
    # a tell and an ask at one moment: the slot is freed before it is refilled, so the count never reads 3
    np.testing.assert_array_equal(times, [0, 0, 0, 1, 1, 2, 2, 4, 5])
    np.testing.assert_array_equal(counts, [0, 1, 2, 1, 2, 1, 2, 1, 0])
    fig = plot_history(TIMED, seconds=True, wall_clock=True)
    top, bottom = fig.axes
    np.testing.assert_array_equal(by_label(top.lines, "best so far").get_xdata(), [1.0, 2.0, 3.0, 4.0, 5.0])
    points = {c.get_label(): c.get_offsets() for c in top.collections}
    np.testing.assert_array_equal(points["told by you"], [[3.0, 1.0]])
    np.testing.assert_array_equal(by_label(bottom.lines, "in flight").get_ydata(), counts)
    assert bottom.get_xlabel().startswith("seconds") and not top.lines[1:]  # no design/model divider by time


def test_by_wall_clock_a_history_without_stamps_is_refused():
    with pytest.raises(ValueError, match="8 of 8 evaluations have no time stamp"):
        plot_history(HISTORY, wall_clock=True)


def test_the_loop_stamps_asks_and_tells_and_the_journal_keeps_the_stamps(tmp_path):
    path = tmp_path / "run.journal"
    opt = BayesOpt(Space([Real("x", 0.0, 1.0)]), surrogate="random", seed=0, n_init=2, journal=path)
    try:
        batch = opt.ask(3)
        for config in reversed(batch):  # out of order, as workers finish
            opt.tell(config, config["x"])
        opt.tell({"x": 0.5}, 0.5)  # the user's own point: told, never asked
    finally:
        opt.close()
    history = opt.history
    assert all(h["asked_at"] <= h["told_at"] for h in history[:3]) and "asked_at" not in history[3]
    assert np.all(np.diff([h["told_at"] for h in history]) >= 0)
    assert BayesOpt.load(path).history == history
    assert in_flight_counts(history)[1].max() == 3  # the three asked together were in flight together


def test_result_plot_draws_into_given_axes_and_writes_a_file(tmp_path):
    from matplotlib.figure import Figure
    result = Result(None, 0.5, HISTORY)
    ax = Figure().add_subplot()
    assert result.plot(ax=ax) is ax.figure and ax.lines
    out = tmp_path / "run.png"
    result.plot(path=out)
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_treezoo_plot_reads_a_journal_still_open_for_writing(tmp_path, capsys):
    """A campaign is plotted while it runs: the writer holds the journal's lock, the plot only reads."""
    path = tmp_path / "run.journal"
    opt = BayesOpt(Space([Real("x", 0.0, 1.0)]), surrogate="random", seed=0, n_init=2, journal=path)
    for k in range(4):
        config = opt.ask()
        if k == 1:
            opt.tell(config, error="simulation crashed")
        else:
            opt.tell(config, (config["x"] - 0.3) ** 2)
    opt.ask()  # one in flight
    try:
        out = tmp_path / "explicit.png"
        assert main(["plot", str(path), "--out", str(out), "--optimum", "0", "--seconds"]) == 0
        assert out.read_bytes()[:8] == PNG_MAGIC
        said = capsys.readouterr().out
        assert "4 evaluations (1 running)" in said and f"best {opt.best_value:.6g}" in said
        assert main(["plot", str(path)]) == 0  # default: the journal's name with .png
        assert (tmp_path / "run.png").exists()
        timed = tmp_path / "timed.png"
        assert main(["plot", str(path), "--out", str(timed), "--wall-clock", "--seconds"]) == 0
        assert timed.read_bytes()[:8] == PNG_MAGIC
    finally:
        opt.close()


def test_treezoo_plot_and_run_refuse_bad_files_before_any_work(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["plot", str(tmp_path / "missing.journal"), "--out", str(tmp_path / "a.png")])
    assert stop.value.code == 2 and "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["run", "--surrogate", "random", "--budget", "2", "--quiet", "--plot", str(tmp_path / "a.nope")])
    assert stop.value.code == 2 and "figure format" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "--surrogate", "random", "--budget", "2", "--quiet", "--plot", str(tmp_path / "no" / "a.png")])
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "--surrogate", "random", "--budget", "2", "--quiet", "--wall-clock"])
    assert "--wall-clock is a setting of --plot" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_treezoo_run_writes_the_plot_at_the_end(tmp_path, capsys):
    out = tmp_path / "jenatton.svg"
    assert main(["run", "--surrogate", "random", "--budget", "3", "--quiet", "--plot", str(out)]) == 0
    assert out.read_text().lstrip().startswith("<?xml") and f"plot:        {out}" in capsys.readouterr().out
    # with noise the observed values may lie below the optimum: they are plotted as values, not as regrets
    noisy = tmp_path / "noisy.png"
    assert main(["run", "--surrogate", "random", "--budget", "20", "--noise", "0.5", "--quiet", "--plot",
                 str(noisy)]) == 0
    assert noisy.read_bytes()[:8] == PNG_MAGIC
