"""A BO campaign as a script: two evaluations at a time, a journal that survives a stop, the run's status and
table, and its convergence plot against wall-clock time.

The objective stands in for an expensive training run on a conditional space (an optimizer choice, each with
its own parameters); it sleeps a little and fails now and then, as real ones do. A thread pool runs two
evaluations at once (the default for n_workers > 1 is a process pool; a Dask cluster works the same way, README
section 5). The first `minimize` stops early, as a killed job would; the second, given the same journal,
resumes it to the full budget instead of starting again. A failed run is fitted at the worst loss so far
(`on_failure="worst"`, the default), so the proposals leave the learning rates that diverge: in the full run
1 of 30 evaluations failed, against 7 with `on_failure="ignore"` (2026-12-07).
Run: python examples/campaign.py   (writes campaign.journal, campaign.csv and campaign.png where you run it)
"""

import math
import os
import time
from concurrent.futures import ThreadPoolExecutor

from optim import minimize
from optim.status import run_status
from zoo import Node, Real, Space

FAST = os.environ.get("TREEZOO_EXAMPLES_FAST") == "1"  # the test suite runs every example quickly
out_dir = os.environ.get("TREEZOO_EXAMPLES_OUT", ".")
journal = os.path.join(out_dir, "campaign.journal")

space = Space(Node("root", params=(Real("weight_decay", 1e-6, 1e-2, log=True),), choice="optimizer", children={
    "sgd": Node("sgd", params=(Real("lr", 1e-4, 1.0, log=True), Real("momentum", 0.0, 0.99))),
    "adam": Node("adam", params=(Real("adam_lr", 1e-5, 1e-1, log=True),)),
}))


def validation_loss(config: dict) -> float:
    """A made-up validation loss: best near sgd with lr 0.1 and momentum 0.9; a too-large lr diverges."""
    time.sleep(0.0 if FAST else 0.5)  # the expensive part
    decay = (math.log10(config["weight_decay"]) + 4.0) ** 2 / 20.0
    if config["optimizer"] == "sgd":
        if config["lr"] > 0.7:
            raise FloatingPointError("training diverged")  # recorded as a failed evaluation, the run goes on
        return 0.2 + (math.log10(config["lr"]) + 1.0) ** 2 / 4.0 + 2.0 * (config["momentum"] - 0.9) ** 2 + decay
    return 0.35 + (math.log10(config["adam_lr"]) + 3.0) ** 2 / 4.0 + decay


if __name__ == "__main__":
    if os.path.exists(journal):
        os.remove(journal)  # the example starts afresh; a real campaign keeps its journal
    budget, stop_at = (8, 5) if FAST else (30, 14)
    settings = dict(surrogate="gp", seed=0, n_init=4, n_workers=2, checkpoint=journal, design="paths")
    with ThreadPoolExecutor(2) as pool:
        first = minimize(validation_loss, space, budget=stop_at, executor=pool, **settings)
        print(f"stopped after {len(first.history)} evaluations; best so far {first.best_value:.4f}")
        result = minimize(validation_loss, space, budget=budget, executor=pool, **settings)  # resumes the journal
    print("\n".join(run_status(result.optimizer)))  # what `treezoo status campaign.journal` prints

    table = result.to_dataframe()  # a row per evaluation, a column per parameter (missing on the other branch)
    table.to_csv(os.path.join(out_dir, "campaign.csv"), index=False)
    print(table.groupby("config.optimizer")["value"].agg(["count", "min"]))
    print(f"failed: {int((table['status'] != 'ok').sum())}, by reason: {table['error'].dropna().unique().tolist()}")
    try:  # each evaluation where it was told, and how many were in flight over time
        path = os.path.join(out_dir, "campaign.png")
        result.plot(wall_clock=True, seconds=True, path=path, title="campaign: loss by wall-clock time")
        print(f"plot: {path}")
    except ImportError as exc:
        print(exc)
