"""The convergence plot of a BO run: each evaluation's value and the best so far, by evaluation number.

A campaign's first question is whether it is still improving; a figure answers it at a glance where the
history's numbers do not. The plot reads only a run's history (`Result.history`, `BayesOpt.history`, or a
journal through `BayesOpt.load`), so it works on a finished run, on one still going in another process,
and on runs of any surrogate. matplotlib is an optional dependency (``pip install "treezoo[plot]"``).

- Points: every evaluation, marked by where its configuration came from (the initial design, the model's
  proposal, a random fallback, one the user told); failed evaluations (an exception, NaN/inf, a value out
  of range) as crosses along the top of the axes, since they have no value.
- Line: the best value so far (a step function), over the successful evaluations.
- With `optimum` (a known minimum, e.g. a built-in problem's), the y axis is the regret, value - optimum, on
  a log scale; a regret of 0 is drawn at the smallest positive regret of the run divided by 10.
- With `seconds=True`, a second panel shows each proposal's model-fit and acquisition seconds.
- With `wall_clock=True`, the x axis is the wall-clock seconds since the run's first proposal (each evaluation
  placed when it was told), which shows what parallel workers buy; the seconds panel then shows how many
  evaluations were in flight (asked, not yet told) at each moment: a count below the number of workers is a
  worker the loop has not fed yet, usually because it is fitting the model. A resumed run's axis includes the
  time it was stopped.
"""

from __future__ import annotations

import math

import numpy as np

#: how a history record's ``source`` is grouped in the legend, in drawing order
SOURCE_GROUPS = (("init", "initial design", "C7", "s"), ("bo", "model's proposal", "C0", "o"),
                 ("random", "random (fallback)", "C1", "D"), ("user", "told by you", "C2", "^"))


#: relative distance below `optimum` at which a value is taken as a wrong optimum rather than rounding
OPTIMUM_TOLERANCE = 1e-9


def _group(source: str) -> str:
    """The legend group of a record's source ("random:duplicate" -> "random"; anything unknown -> "bo")."""
    head = str(source).split(":", 1)[0]
    return head if head in ("init", "random", "user") else "bo"


def _values(history: list[dict]) -> np.ndarray:
    """[n] each evaluation's value, NaN where it failed."""
    return np.array([h["value"] if h["status"] == "ok" else np.nan for h in history], dtype=np.float64)


def best_so_far(history: list[dict]) -> np.ndarray:
    """[n] the least successful value among the first i + 1 evaluations (NaN until one has succeeded)."""
    values = _values(history)
    return np.fmin.accumulate(values) if values.size else values


def _stamps(history: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """([n] asked, [n] told): each evaluation's wall-clock stamps in seconds since the run's first stamp; asked
    is NaN for an evaluation told without being asked (the user's). Refuses a history without stamps."""
    missing = sum(h.get("told_at") is None for h in history)
    if missing:
        raise ValueError(f"{missing} of {len(history)} evaluations have no time stamp (runs saved before treezoo "
                         "recorded them, 2026-12-07): plot by evaluation number instead")
    asked = np.array([np.nan if h.get("asked_at") is None else h["asked_at"] for h in history], dtype=np.float64)
    told = np.array([h["told_at"] for h in history], dtype=np.float64)
    start = np.fmin(np.nanmin(asked) if np.isfinite(asked).any() else np.inf, told.min())
    return asked - start, told - start


def told_seconds(history: list[dict]) -> np.ndarray:
    """[n] when each evaluation was told, in seconds since the run's first proposal (or first tell)."""
    return _stamps(history)[1]


def in_flight_counts(history: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(times, counts): how many evaluations were in flight (asked, not yet told) from each time on, a step
    function on the axis of `told_seconds`; evaluations told without being asked (the user's) are not counted."""
    asked, told = _stamps(history)
    was_asked = np.isfinite(asked)
    # at equal times a tell comes before an ask (-1 sorts first): a freed worker is fed at once
    events = sorted([(t, 1) for t in asked[was_asked]] + [(t, -1) for t in told[was_asked]])
    times, counts = [0.0], [0]
    for t, step in events:
        times.append(t)
        counts.append(counts[-1] + step)
    return np.array(times), np.array(counts)


def plot_history(history: list[dict], optimum: float | None = None, *, seconds: bool = False,
                 wall_clock: bool = False, ax=None, title: str | None = None, path=None):
    """Draw a run's convergence plot (module docstring) and return the matplotlib figure; written to `path`
    (any format matplotlib infers from the suffix) if given. `ax`: draw into these axes instead of a new figure
    (then `seconds` is not available). `wall_clock`: by the time each evaluation was told, not by its number."""
    if not history:
        raise ValueError("the run has no evaluations yet: nothing to plot")
    x = told_seconds(history) if wall_clock else np.arange(1, len(history) + 1)
    if optimum is not None:
        optimum = float(optimum)
        if not math.isfinite(optimum):
            raise ValueError(f"optimum must be a finite number, got {optimum!r}")
    if ax is not None and seconds:
        raise ValueError("seconds=True draws a second panel in a figure of its own: leave ax unset")
    ok = np.array([h["status"] == "ok" for h in history])
    values = _values(history)
    best = np.fmin.accumulate(values)
    if optimum is not None and ok.any():  # rounding may put a value a hair below a computed optimum: regret 0
        least = float(np.nanmin(values))
        if least < optimum - OPTIMUM_TOLERANCE * max(1.0, abs(optimum)):
            raise ValueError(f"the run has a value below the stated optimum {optimum!r} (least value {least!r}): "
                             "the regret would be negative")
    fig, ax, ax_time = _axes(ax, seconds)
    y, best_y = values, best
    if optimum is not None:
        y, best_y = values - optimum, best - optimum
        positive = y[np.isfinite(y) & (y > 0)]
        floor = (positive.min() if positive.size else 1.0) / 10.0
        y, best_y = (np.where(np.isnan(v) | (v > 0), v, floor) for v in (y, best_y))
        ax.set_yscale("log")
    groups = np.array([_group(h.get("source", "bo")) for h in history])
    for key, label, color, marker in SOURCE_GROUPS:
        mask = (groups == key) & ok
        if mask.any():
            ax.scatter(x[mask], y[mask], s=16, color=color, marker=marker, label=label, zorder=3)
    ax.step(x, best_y, where="post", color="k", linewidth=1.4, label="best so far", zorder=4)
    failed = ~ok
    if failed.any():  # no value to place them by: along the top of the axes
        ax.scatter(x[failed], np.full(int(failed.sum()), 0.97), transform=ax.get_xaxis_transform(), marker="x",
                   color="C3", s=24, label=f"failed ({int(failed.sum())})", zorder=5)
    n_init = int(np.sum(groups == "init"))
    if 0 < n_init < len(history) and not wall_clock:  # by time, design and model evaluations may interleave
        ax.axvline(n_init + 0.5, color="0.6", linestyle="--", linewidth=0.8)
    x_label = "seconds since the first proposal" if wall_clock else "evaluation"
    ax.set_xlabel("" if ax_time is not None else x_label)
    ax.set_ylabel("regret (value - optimum)" if optimum is not None else "objective value")
    if title is None:
        final = best[-1]
        title = (f"{len(history)} evaluations, best {final:.6g}" if math.isfinite(final)
                 else f"{len(history)} evaluations, none succeeded")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best")
    if ax_time is not None and wall_clock:
        _draw_in_flight(ax_time, history, x_label)
    elif ax_time is not None:
        _draw_seconds(ax_time, history, x)
    if path is not None:
        fig.savefig(path, dpi=100, bbox_inches="tight")
    return fig


def _axes(ax, seconds: bool):
    """(figure, convergence axes, seconds axes or None): new ones unless the user passed `ax`."""
    if ax is not None:
        return ax.figure, ax, None
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError('plotting needs matplotlib: pip install "treezoo[plot]"') from None
    if not seconds:
        fig = Figure(figsize=(6.4, 4.0), layout="constrained")
        return fig, fig.add_subplot(), None
    fig = Figure(figsize=(6.4, 5.6), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1.3))
    return fig, top, bottom


def _draw_seconds(ax, history: list[dict], x: np.ndarray) -> None:
    """Stacked bars of each proposal's fit and acquisition seconds (zero for the design and told points)."""
    fit = np.array([float(h.get("fit_seconds") or 0.0) for h in history])
    acq = np.array([float(h.get("acq_seconds") or 0.0) for h in history])
    ax.bar(x, fit, width=0.8, color="C0", label="fit")
    ax.bar(x, acq, width=0.8, bottom=fit, color="C1", label="acquisition")
    ax.set_ylabel("seconds")
    ax.set_xlabel("evaluation")
    ax.legend(fontsize=8, loc="upper left")


def _draw_in_flight(ax, history: list[dict], x_label: str) -> None:
    """How many evaluations were in flight over time: how busy a parallel run kept its workers."""
    from matplotlib.ticker import MaxNLocator
    times, counts = in_flight_counts(history)
    ax.step(times, counts, where="post", color="C0", label="in flight")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("evaluations in flight")
    ax.set_xlabel(x_label)
    ax.set_ylim(bottom=0)
