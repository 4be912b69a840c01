"""A run's history as a pandas DataFrame: one row per evaluation, one column per parameter.

Campaign scripts filter, group and join results; a table does that where the history's list of dicts does
not (the shape of Optuna's `trials_dataframe`). pandas comes with ArviZ (through xarray), so this adds no
dependency.

Columns: ``evaluation`` (1, 2, ...), ``config.<name>`` for each parameter and decision of the space (missing
where the configuration does not use it: an inactive branch of a conditional space), ``value``, ``status``,
``error``, ``source``, ``fit_seconds``, ``acq_seconds``, ``acq_value``, and ``asked_at`` / ``told_at`` as UTC
timestamps (missing for a point the user told without asking, and in runs saved before the stamps,
2026-12-07).
"""

from __future__ import annotations

#: the record fields that become columns, in order, after the configuration's
RECORD_COLUMNS = ("value", "status", "error", "source", "fit_seconds", "acq_seconds", "acq_value")
STAMP_COLUMNS = ("asked_at", "told_at")


def history_frame(history: list[dict], space=None):
    """The DataFrame of a history (module docstring); `space` fixes the parameter columns and their order
    (default: every name the configurations use, in the order first seen)."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("history_frame needs pandas (ArviZ installs it): pip install pandas") from None
    if space is not None:
        names = list(space.names)
    else:
        names = list(dict.fromkeys(name for h in history for name in h["config"]))
    rows = []
    for number, h in enumerate(history, start=1):
        row = {"evaluation": number}
        row.update({f"config.{name}": h["config"].get(name) for name in names})
        row.update({key: h.get(key) for key in RECORD_COLUMNS})
        row.update({key: h.get(key) for key in STAMP_COLUMNS})
        rows.append(row)
    columns = ["evaluation", *(f"config.{n}" for n in names), *RECORD_COLUMNS, *STAMP_COLUMNS]
    frame = pd.DataFrame(rows, columns=columns)
    for key in STAMP_COLUMNS:
        frame[key] = pd.to_datetime(frame[key].astype("float64"), unit="s", utc=True)
    return frame
